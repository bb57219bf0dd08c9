"""The ProfileStore contract (:class:`hmem.testing.contracts.ProfileStoreContract`) on
every backend: memory, SQLite file (reopened), Redis, Redis Cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_helpers import WAIT_ONE, ClusterInfo, cluster_client_prefix, redis_cluster  # noqa: F401  (fixture)
from redis_helpers import redis_client_prefix

from hmem.backends.memory.profile import MemoryProfileStore
from hmem.backends.redis.profile import RedisProfileStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.profile import SqliteProfileStore
from hmem.protocols import ProfileStore
from hmem.testing.contracts import ProfileBackend, ProfileStoreContract


class TestMemoryProfileStore(ProfileStoreContract):
    @pytest.fixture
    def profile_backend(self) -> ProfileBackend:
        return ProfileBackend(MemoryProfileStore, persistent=False)


class TestSqliteProfileStore(ProfileStoreContract):
    @pytest.fixture
    def profile_backend(self, tmp_path: Path) -> Iterator[ProfileBackend]:
        dbs: list[SqliteDatabase] = []

        def make(**kw: Any) -> ProfileStore:
            dbs.append(SqliteDatabase(tmp_path / "hmem.db"))
            return SqliteProfileStore(dbs[-1], **kw)

        yield ProfileBackend(make, persistent=True)
        for db in dbs:
            db.close()


class TestRedisProfileStore(ProfileStoreContract):
    """The real Redis on 127.0.0.1:6379, a fresh key prefix per test."""

    @pytest.fixture
    def profile_backend(self) -> Iterator[ProfileBackend]:
        with redis_client_prefix() as (client, prefix):
            yield ProfileBackend(lambda **kw: RedisProfileStore(client, prefix=prefix, **kw), persistent=True)


class TestRedisClusterProfileStore(ProfileStoreContract):
    """A real Redis Cluster started for the test session (tests/cluster_helpers.py)."""

    @pytest.fixture
    def profile_backend(self, redis_cluster: ClusterInfo) -> Iterator[ProfileBackend]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield ProfileBackend(lambda **kw: RedisProfileStore(client, prefix=prefix, **kw), persistent=True)



class TestRedisClusterWaitProfileStore(ProfileStoreContract):
    """The cluster again, with every write followed by ``WAIT 1`` on its master."""

    @pytest.fixture
    def profile_backend(self, redis_cluster: ClusterInfo) -> Iterator[ProfileBackend]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield ProfileBackend(lambda **kw: RedisProfileStore(client, prefix=prefix, wait=WAIT_ONE, **kw),
                                 persistent=True)
