"""The SessionStore contract (:class:`hmem.testing.contracts.SessionStoreContract`) on
every backend: memory, SQLite file, Redis, Redis Cluster (three masters, three replicas).

Memory and SQLite get a fake clock (TTL tests move it); Redis keeps time on the
server, so its TTL test uses a short real TTL and sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_helpers import WAIT_ONE, ClusterInfo, cluster_client_prefix, redis_cluster  # noqa: F401  (fixture)
from redis_helpers import redis_prefix  # noqa: F401  (fixture)

from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.sessions import SqliteSessionStore
from hmem.testing.contracts import SessionBackend, SessionStoreContract


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class TestMemorySessionStore(SessionStoreContract):
    @pytest.fixture
    def session_backend(self) -> SessionBackend:
        clock = FakeClock()
        return SessionBackend(lambda ttl: MemorySessionStore(ttl_seconds=ttl, clock=clock), clock.advance, ttl=60.0)


class TestSqliteSessionStore(SessionStoreContract):
    @pytest.fixture
    def session_backend(self, tmp_path: Path) -> Iterator[SessionBackend]:
        clock = FakeClock()
        db = SqliteDatabase(tmp_path / "sessions.db")
        yield SessionBackend(lambda ttl: SqliteSessionStore(db, ttl_seconds=ttl, clock=clock), clock.advance, ttl=60.0)
        db.close()


class TestRedisSessionStore(SessionStoreContract):
    """The real Redis on 127.0.0.1:6379, a fresh key prefix per test."""

    @pytest.fixture
    def session_backend(self, redis_prefix: tuple[redis.Redis, str]) -> SessionBackend:  # noqa: F811
        client, prefix = redis_prefix
        return SessionBackend(lambda ttl: RedisSessionStore(client, prefix=prefix, ttl_seconds=ttl), time.sleep, ttl=1.0)


class TestRedisClusterSessionStore(SessionStoreContract):
    """A real Redis Cluster started for the test session (tests/cluster_helpers.py)."""

    @pytest.fixture
    def session_backend(self, redis_cluster: ClusterInfo) -> Iterator[SessionBackend]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield SessionBackend(lambda ttl: RedisSessionStore(client, prefix=prefix, ttl_seconds=ttl), time.sleep,
                                 ttl=1.0)



class TestRedisClusterWaitSessionStore(SessionStoreContract):
    """The cluster again, with every write followed by ``WAIT 1`` on its master."""

    @pytest.fixture
    def session_backend(self, redis_cluster: ClusterInfo) -> Iterator[SessionBackend]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield SessionBackend(lambda ttl: RedisSessionStore(client, prefix=prefix, ttl_seconds=ttl, wait=WAIT_ONE),
                                 time.sleep, ttl=1.0)
