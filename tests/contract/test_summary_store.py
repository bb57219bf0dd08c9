"""The SummaryStore contract (:class:`hmem.testing.contracts.SummaryStoreContract`) on
every backend: memory, SQLite file, Redis, Redis Cluster; plus SQLite's durability."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import WAIT_ONE, ClusterInfo, cluster_client_prefix, redis_cluster  # noqa: F401  (fixture)
from redis_helpers import redis_client_prefix

from hmem.backends.memory.summaries import MemorySummaryStore
from hmem.backends.redis.summaries import RedisSummaryStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.summaries import SqliteSummaryStore
from hmem.protocols import SummaryStore
from hmem.testing.contracts import SummaryStoreContract
from hmem.testing.contracts.summaries import summary


class TestMemorySummaryStore(SummaryStoreContract):
    @pytest.fixture
    def store(self) -> SummaryStore:
        return MemorySummaryStore()


class TestSqliteSummaryStore(SummaryStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SummaryStore]:
        db = SqliteDatabase(tmp_path / "summaries.db")
        yield SqliteSummaryStore(db)
        db.close()


class TestRedisSummaryStore(SummaryStoreContract):
    """The real Redis on 127.0.0.1:6379, a fresh key prefix per test."""

    @pytest.fixture
    def store(self) -> Iterator[SummaryStore]:
        with redis_client_prefix() as (client, prefix):
            yield RedisSummaryStore(client, prefix=prefix)


def test_sqlite_summaries_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    db = SqliteDatabase(path)
    SqliteSummaryStore(db).put(summary())
    db.close()
    db2 = SqliteDatabase(path)
    try:
        assert SqliteSummaryStore(db2).get("u1", "s1") == summary()
    finally:
        db2.close()


class TestRedisClusterSummaryStore(SummaryStoreContract):
    """A real Redis Cluster started for the test session (tests/cluster_helpers.py)."""

    @pytest.fixture
    def store(self, redis_cluster: ClusterInfo) -> Iterator[SummaryStore]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield RedisSummaryStore(client, prefix=prefix)



class TestRedisClusterWaitSummaryStore(SummaryStoreContract):
    """The cluster again, with every write followed by ``WAIT 1`` on its master."""

    @pytest.fixture
    def store(self, redis_cluster: ClusterInfo) -> Iterator[SummaryStore]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield RedisSummaryStore(client, prefix=prefix, wait=WAIT_ONE)
