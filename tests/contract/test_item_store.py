"""The ItemStore contract (:class:`hmem.testing.contracts.ItemStoreContract`) on the
in-memory reference, SQLite (in-memory database and a WAL file), Redis (the real
server, a random key prefix per test) and a real Redis Cluster (tests/cluster_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import WAIT_ONE, ClusterInfo, cluster_client_prefix, redis_cluster  # noqa: F401  (fixture)
from redis_helpers import redis_client_prefix

from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.items import SqliteItemStore
from hmem.protocols import ItemStore
from hmem.testing.contracts import ItemStoreContract


class TestMemoryItemStore(ItemStoreContract):
    @pytest.fixture
    def store(self) -> ItemStore:
        return MemoryItemStore()


class TestSqliteMemoryItemStore(ItemStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[ItemStore]:
        db = SqliteDatabase(":memory:")
        yield SqliteItemStore(db)
        db.close()


class TestSqliteFileItemStore(ItemStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[ItemStore]:
        db = SqliteDatabase(tmp_path / "hmem.db")
        yield SqliteItemStore(db)
        db.close()


class TestRedisItemStore(ItemStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[ItemStore]:
        with redis_client_prefix() as (client, prefix):
            yield RedisItemStore(client, prefix=prefix)


class TestRedisClusterItemStore(ItemStoreContract):
    @pytest.fixture
    def store(self, redis_cluster: ClusterInfo) -> Iterator[ItemStore]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield RedisItemStore(client, prefix=prefix)



class TestRedisClusterWaitItemStore(ItemStoreContract):
    """The cluster again, with every write followed by ``WAIT 1`` on its master."""

    @pytest.fixture
    def store(self, redis_cluster: ClusterInfo) -> Iterator[ItemStore]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield RedisItemStore(client, prefix=prefix, wait=WAIT_ONE)
