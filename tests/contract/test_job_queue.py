"""The JobQueue contract (:class:`hmem.testing.contracts.JobQueueContract`) on every
backend: memory, SQLite file (reopened), Redis, Redis Cluster; and queue objects over
one storage (as separate processes would hold) never leasing one job twice nor letting
two takes hold jobs of one user at once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_helpers import WAIT_ONE, ClusterInfo, cluster_client_prefix, redis_cluster  # noqa: F401  (fixture)
from redis_helpers import REDIS_URL, redis_client_prefix

from hmem.backends.memory.jobs import MemoryJobQueue
from hmem.backends.redis.client import connect_redis
from hmem.backends.redis.jobs import RedisJobQueue
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.jobs import SqliteJobQueue
from hmem.protocols import JobQueue
from hmem.testing.contracts import JobQueueBackend, JobQueueContract
from hmem.testing.contracts.jobs import WorkerReport, run_workers


class TestMemoryJobQueue(JobQueueContract):
    @pytest.fixture
    def job_backend(self) -> JobQueueBackend:
        return JobQueueBackend(MemoryJobQueue, persistent=False)


class TestSqliteJobQueue(JobQueueContract):
    @pytest.fixture
    def job_backend(self, tmp_path: Path) -> Iterator[JobQueueBackend]:
        dbs: list[SqliteDatabase] = []

        def make() -> JobQueue:
            dbs.append(SqliteDatabase(tmp_path / "hmem.db"))
            return SqliteJobQueue(dbs[-1])

        yield JobQueueBackend(make, persistent=True)
        for db in dbs:
            db.close()


class TestRedisJobQueue(JobQueueContract):
    """The real Redis on 127.0.0.1:6379, a fresh key prefix per test."""

    @pytest.fixture
    def job_backend(self) -> Iterator[JobQueueBackend]:
        with redis_client_prefix() as (client, prefix):
            yield JobQueueBackend(lambda: RedisJobQueue(client, prefix=prefix), persistent=True)


class TestRedisClusterJobQueue(JobQueueContract):
    """A real Redis Cluster started for the test session (tests/cluster_helpers.py): the
    queue's keys share one hash tag, so every script stays in one slot."""

    @pytest.fixture
    def job_backend(self, redis_cluster: ClusterInfo) -> Iterator[JobQueueBackend]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield JobQueueBackend(lambda: RedisJobQueue(client, prefix=prefix), persistent=True)


class TestRedisClusterWaitJobQueue(JobQueueContract):
    """The cluster again, with every change followed by ``WAIT 1`` on its master."""

    @pytest.fixture
    def job_backend(self, redis_cluster: ClusterInfo) -> Iterator[JobQueueBackend]:  # noqa: F811
        with cluster_client_prefix(redis_cluster) as (client, prefix):
            yield JobQueueBackend(lambda: RedisJobQueue(client, prefix=prefix, wait=WAIT_ONE), persistent=True)


def _check(report: WorkerReport) -> None:
    assert report.errors == []
    assert len(report.taken) == 200 and set(report.taken.values()) == {1}, "a job was taken twice or never"
    assert report.max_takes_per_user == 1, "two takes held jobs of one user at once"
    assert report.largest_take > 1, "no take returned several jobs: batches went untested"
    assert all(order == list(range(10)) for order in report.order.values())


def test_two_sqlite_queues_on_one_file_never_lease_one_job_twice(tmp_path: Path) -> None:
    # Two SqliteDatabase handles: separate connections, as two processes would hold.
    dbs = [SqliteDatabase(tmp_path / "hmem.db") for _ in range(2)]
    try:
        queues = [SqliteJobQueue(db) for db in dbs]
        _check(run_workers(queues, threads=4, users=20, per_user=10))
        assert queues[1].counts() == {}
    finally:
        for db in dbs:
            db.close()


def test_two_redis_clients_never_lease_one_job_twice() -> None:
    with redis_client_prefix() as (client, prefix):
        other = connect_redis(REDIS_URL)
        try:
            queues = [RedisJobQueue(client, prefix=prefix), RedisJobQueue(other, prefix=prefix)]
            _check(run_workers(queues, threads=4, users=20, per_user=10))
            assert queues[1].counts() == {}
        finally:
            other.close()
