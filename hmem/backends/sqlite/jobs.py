"""SQLite job queue: the :class:`~hmem.protocols.JobQueue` of the embedded backend, one
row per job in the ``jobs`` table of hmem's SQLite file.

Every change is one ``BEGIN IMMEDIATE`` transaction (:meth:`SqliteDatabase.write`), so
threads and processes sharing the file queue on its lock. :meth:`SqliteJobQueue.take`
chooses and leases in the same transaction: no two workers, in any process, lease one
job, and one user's jobs of one kind never run side by side.

How ``take`` chooses (the rule of :func:`hmem.backends._jobs.job_order_ok`): a user with
a running job of the kind is out; the others in the order of their oldest job, and of
each its jobs in ``seq`` order up to the first not yet due (in back-off), until ``limit``.
One grouped read finds the users, one indexed read per user their jobs.

Times are epoch seconds (REAL); ``Job.id`` is ``str(seq)``.

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> from hmem.types import JobSpec
    >>> queue = SqliteJobQueue(SqliteDatabase(":memory:"))
    >>> queue.put([JobSpec("keys", "u1", {"item": "i1"}, key="i1"), JobSpec("keys", "u1", {"item": "i2"})])
    2
    >>> [job] = queue.take("keys", 1, lease_s=60)   # u1's second job waits for the first
    >>> job.payload, queue.counts()["keys"]
    ({'item': 'i1'}, JobCounts(waiting=1, running=1, quarantined=0))
    >>> queue.done([job.id]); [j.payload for j in queue.take("keys", 10, lease_s=60)]
    [{'item': 'i2'}]
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from hmem.backends._jobs import check_fail, check_put, check_take
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable
from hmem.types import Job, JobCounts, JobSpec, check_id

__all__ = ["SqliteJobQueue"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS jobs (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,  -- Job.id is str(seq); never reused
        kind         TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        key          TEXT,
        payload      TEXT NOT NULL,                      -- JSON
        attempts     INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        created_at   REAL NOT NULL,                      -- epoch seconds
        due          REAL NOT NULL,                      -- epoch seconds
        leased_until REAL,                               -- NULL: never taken, or the lease was ended
        quarantined  INTEGER NOT NULL DEFAULT 0
    )""",
    # take's walk (kind's jobs in seq order) and next_due
    "CREATE INDEX IF NOT EXISTS jobs_kind ON jobs (kind, seq)",
    # drop, counts and quarantined of one user; coalescing looks up (user, kind, key)
    "CREATE INDEX IF NOT EXISTS jobs_user ON jobs (user_id, kind, key)",
    # take's first question: which users of the kind have a job running
    "CREATE INDEX IF NOT EXISTS jobs_lease ON jobs (kind, leased_until) WHERE leased_until IS NOT NULL",
)
_JOB_COLUMNS = "seq, kind, user_id, key, payload, attempts, error, created_at"


def _job(row: Any) -> Job:
    seq, kind, user_id, key, payload, attempts, error, created_at = row
    return Job(id=str(seq), seq=seq, kind=kind, user_id=user_id, payload=json.loads(payload), key=key,
               attempts=attempts, error=error, created_at=created_at)


def _seqs(ids: Iterable[str]) -> str:
    """The ``seq`` of each id this queue could have issued, as a JSON array for
    ``json_each`` (any other id names no job: it is ignored, like an unknown one)."""
    return json.dumps([int(i) for i in ids if isinstance(i, str) and i.isdecimal() and str(int(i)) == i])


_IN_IDS = "seq IN (SELECT value FROM json_each(?))"


class SqliteJobQueue:
    """Background jobs in the ``jobs`` table of an SQLite file shared with the other
    embedded stores; atomic across threads and processes that open the same file.

    ``db`` belongs to the caller (:meth:`close` leaves it open).

    Example::

        queue = SqliteJobQueue(SqliteDatabase("~/.hmem/hmem.db"))
        queue.put([JobSpec("extract", "u1", {"session": "s1"}, key="s1")], coalesce=True)
        for job in queue.take("extract", 8, lease_s=300):
            ...  # do the work, then
            queue.done([job.id])  # or queue.fail([job.id], str(exc), retry_at=time.time() + 30)
    """

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db
        try:
            with db.write() as conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"cannot create the jobs table in {db.path!r}: {exc}") from exc

    def put(self, specs: Sequence[JobSpec], *, coalesce: bool = False) -> int:
        """Store the jobs in order; the number stored (see :meth:`hmem.protocols.JobQueue.put`)."""
        specs = check_put(specs)
        if not specs:
            return 0
        now = time.time()
        stored = 0
        with self._db.write() as conn:
            for spec in specs:
                if coalesce and conn.execute(
                    "SELECT 1 FROM jobs WHERE user_id = ? AND kind = ? AND key IS ? AND quarantined = 0"
                    " AND (leased_until IS NULL OR leased_until <= ?) LIMIT 1",
                    (spec.user_id, spec.kind, spec.key, now),
                ).fetchone():
                    continue
                conn.execute(
                    "INSERT INTO jobs (kind, user_id, key, payload, created_at, due) VALUES (?, ?, ?, ?, ?, ?)",
                    (spec.kind, spec.user_id, spec.key, json.dumps(dict(spec.payload), ensure_ascii=False), now, now),
                )
                stored += 1
        return stored

    def take(self, kind: str, limit: int, *, lease_s: float, now: float | None = None) -> list[Job]:
        """Lease up to ``limit`` due jobs of ``kind`` (the rule of
        :func:`~hmem.backends._jobs.job_order_ok`), in one write transaction."""
        check_take(kind, limit, lease_s)
        at = time.time() if now is None else float(now)
        with self._db.write() as conn:
            heads = conn.execute(
                "SELECT user_id FROM jobs WHERE kind = ? AND quarantined = 0 GROUP BY user_id"
                " HAVING max(coalesce(leased_until, 0) > ?) = 0 ORDER BY min(seq)", (kind, at),
            ).fetchall()
            chosen: list[int] = []
            for (user,) in heads:  # users without a running job, oldest job first
                rows = conn.execute(
                    "SELECT seq, due FROM jobs WHERE kind = ? AND user_id = ? AND quarantined = 0 ORDER BY seq LIMIT ?",
                    (kind, user, limit - len(chosen)),
                ).fetchall()
                for seq, due in rows:
                    if due > at:
                        break
                    chosen.append(seq)
                if len(chosen) >= limit:
                    break
            wanted = json.dumps(chosen)
            conn.execute(f"UPDATE jobs SET leased_until = ? WHERE {_IN_IDS}", (at + lease_s, wanted))
            found = conn.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE {_IN_IDS} ORDER BY seq", (wanted,)).fetchall()
        return [_job(row) for row in found]

    def done(self, ids: Sequence[str]) -> None:
        """Remove finished jobs; an unknown id is ignored."""
        seqs = _seqs(ids)
        if seqs == "[]":
            return
        with self._db.write() as conn:
            conn.execute(f"DELETE FROM jobs WHERE {_IN_IDS}", (seqs,))

    def fail(self, ids: Sequence[str], error: str, *, retry_at: float | None, now: float | None = None) -> None:
        """``attempts`` + 1, ``error`` kept, lease ended; due at ``retry_at``, or
        quarantined when it is None. An unknown id is ignored."""
        kept = check_fail(error, retry_at)
        seqs = _seqs(ids)
        if seqs == "[]":
            return
        with self._db.write() as conn:
            if retry_at is None:
                conn.execute(
                    "UPDATE jobs SET attempts = attempts + 1, error = ?, leased_until = NULL, quarantined = 1"
                    f" WHERE {_IN_IDS}", (kept, seqs),
                )
            else:
                conn.execute(
                    f"UPDATE jobs SET attempts = attempts + 1, error = ?, leased_until = NULL, due = ? WHERE {_IN_IDS}",
                    (kept, float(retry_at), seqs),
                )

    def requeue(self, ids: Sequence[str]) -> int:
        """Make quarantined jobs due now, attempts and error cleared; how many."""
        seqs = _seqs(ids)
        if seqs == "[]":
            return 0
        with self._db.write() as conn:
            cur = conn.execute(
                "UPDATE jobs SET quarantined = 0, due = ?, attempts = 0, error = NULL"
                f" WHERE quarantined = 1 AND {_IN_IDS}", (time.time(), seqs),
            )
            return cur.rowcount

    def recover(self) -> int:
        """End every lease (also ones already run out); how many."""
        with self._db.write() as conn:
            return conn.execute("UPDATE jobs SET leased_until = NULL WHERE leased_until IS NOT NULL").rowcount

    def drop(self, user_id: str, *, kind: str | None = None, keys: Sequence[str] | None = None) -> int:
        """Delete the user's jobs (of ``kind``; whose key is one of ``keys``) in any state; how many."""
        check_id(user_id, "user_id")
        sql, args = "DELETE FROM jobs WHERE user_id = ?", [user_id]
        if kind is not None:
            sql, args = sql + " AND kind = ?", [*args, kind]
        if keys is not None:
            sql, args = sql + " AND key IN (SELECT value FROM json_each(?))", [*args, json.dumps(list(keys))]
        with self._db.write() as conn:
            return conn.execute(sql, args).rowcount

    def counts(self, *, user_id: str | None = None) -> dict[str, JobCounts]:
        """Waiting, running and quarantined jobs per kind (only kinds with jobs)."""
        now = time.time()
        sql = ("SELECT kind, sum(quarantined = 0 AND NOT coalesce(leased_until > ?1, 0)),"
               " sum(quarantined = 0 AND coalesce(leased_until > ?1, 0)), sum(quarantined) FROM jobs")
        args: tuple[Any, ...] = (now,)
        if user_id is not None:
            sql, args = sql + " WHERE user_id = ?2", (now, user_id)
        with self._db.read() as conn:
            rows = conn.execute(sql + " GROUP BY kind ORDER BY kind", args).fetchall()
        return {kind: JobCounts(waiting, running, quarantined) for kind, waiting, running, quarantined in rows}

    def quarantined(self, *, user_id: str | None = None, limit: int = 100) -> list[Job]:
        """Quarantined jobs, oldest first, with their errors (at most ``limit``)."""
        sql, args = f"SELECT {_JOB_COLUMNS} FROM jobs WHERE quarantined = 1", []
        if user_id is not None:
            sql, args = sql + " AND user_id = ?", [user_id]
        with self._db.read() as conn:
            rows = conn.execute(sql + " ORDER BY seq LIMIT ?", [*args, limit if limit > 0 else -1]).fetchall()
        return [_job(row) for row in rows][:limit]

    def next_due(self, kind: str) -> float | None:
        """When a :meth:`take` of ``kind`` could next return a job (see
        :func:`~hmem.backends._jobs.first_due`)."""
        with self._db.read() as conn:
            (due,) = conn.execute(
                "SELECT min(head) FROM (SELECT (SELECT due FROM jobs f WHERE f.kind = j.kind AND f.user_id = j.user_id"
                " AND f.quarantined = 0 ORDER BY f.seq LIMIT 1) AS head FROM jobs j WHERE kind = ? AND quarantined = 0"
                " GROUP BY user_id HAVING max(coalesce(leased_until, 0) > ?) = 0)", (kind, time.time()),
            ).fetchone()
        return None if due is None else float(due)

    def close(self) -> None:
        """The database belongs to the caller; nothing of this queue to release."""
