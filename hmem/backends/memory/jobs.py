"""In-process job queue: the reference implementation of :class:`hmem.protocols.JobQueue`.

Lost on restart, so only for tests and the ``memory`` backends (where the writes the
jobs derive from are lost too). One lock guards everything.

Example::

    >>> from hmem.types import JobSpec
    >>> queue = MemoryJobQueue()
    >>> queue.put([JobSpec("keys", "u1", {"item": "i1"}, key="i1")])
    1
    >>> [job] = queue.take("keys", 10, lease_s=60)
    >>> queue.counts()["keys"].running
    1
    >>> queue.done([job.id]); queue.counts()
    {}
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hmem.backends._jobs import check_fail, check_put, check_take, first_due, job_order_ok
from hmem.types import Job, JobCounts, JobSpec, check_id

__all__ = ["MemoryJobQueue"]


@dataclass(slots=True)
class _Row:
    job: Job
    due: float  # epoch seconds
    leased_until: float | None = None
    quarantined: bool = False


class MemoryJobQueue:
    """Jobs in a dict, oldest first; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}
        self._seq = itertools.count(1)

    def put(self, specs: Sequence[JobSpec], *, coalesce: bool = False) -> int:
        specs = check_put(specs)
        now = time.time()
        stored = 0
        with self._lock:
            for spec in specs:
                if coalesce and any(
                    r.job.kind == spec.kind and r.job.user_id == spec.user_id and r.job.key == spec.key
                    and not r.quarantined and not _running(r, now) for r in self._rows.values()
                ):
                    continue
                seq = next(self._seq)
                job = Job(id=str(seq), seq=seq, kind=spec.kind, user_id=spec.user_id, payload=dict(spec.payload),
                          key=spec.key, created_at=now)
                self._rows[job.id] = _Row(job, due=now)
                stored += 1
        return stored

    def take(self, kind: str, limit: int, *, lease_s: float, now: float | None = None) -> list[Job]:
        check_take(kind, limit, lease_s)
        at = time.time() if now is None else now
        with self._lock:
            rows = sorted((r for r in self._rows.values() if r.job.kind == kind and not r.quarantined),
                          key=lambda r: r.job.seq)
            chosen = job_order_ok([(r.job, r.due, _running(r, at)) for r in rows], at, limit)
            for job in chosen:
                self._rows[job.id].leased_until = at + lease_s
            return chosen

    def done(self, ids: Sequence[str]) -> None:
        with self._lock:
            for i in ids:
                self._rows.pop(i, None)

    def fail(self, ids: Sequence[str], error: str, *, retry_at: float | None, now: float | None = None) -> None:
        error = check_fail(error, retry_at)
        with self._lock:
            for i in ids:
                row = self._rows.get(i)
                if row is None:
                    continue
                row.job = replace(row.job, attempts=row.job.attempts + 1, error=error)
                row.leased_until = None
                if retry_at is None:
                    row.quarantined = True
                else:
                    row.due = retry_at

    def requeue(self, ids: Sequence[str]) -> int:
        now = time.time()
        n = 0
        with self._lock:
            for i in ids:
                row = self._rows.get(i)
                if row is not None and row.quarantined:
                    row.quarantined, row.due = False, now
                    row.job = replace(row.job, attempts=0, error=None)
                    n += 1
        return n

    def recover(self) -> int:
        with self._lock:
            held = [r for r in self._rows.values() if r.leased_until is not None]
            for r in held:
                r.leased_until = None
            return len(held)

    def drop(self, user_id: str, *, kind: str | None = None, keys: Sequence[str] | None = None) -> int:
        check_id(user_id, "user_id")
        wanted = None if keys is None else set(keys)
        with self._lock:
            gone = [i for i, r in self._rows.items() if r.job.user_id == user_id
                    and (kind is None or r.job.kind == kind) and (wanted is None or r.job.key in wanted)]
            for i in gone:
                del self._rows[i]
            return len(gone)

    def counts(self, *, user_id: str | None = None) -> dict[str, JobCounts]:
        now = time.time()
        out: dict[str, JobCounts] = {}
        with self._lock:
            for r in self._rows.values():
                if user_id is not None and r.job.user_id != user_id:
                    continue
                one = (JobCounts(quarantined=1) if r.quarantined else JobCounts(running=1) if _running(r, now)
                       else JobCounts(waiting=1))
                out[r.job.kind] = out.get(r.job.kind, JobCounts()) + one
        return out

    def quarantined(self, *, user_id: str | None = None, limit: int = 100) -> list[Job]:
        with self._lock:
            stuck = sorted((r.job for r in self._rows.values() if r.quarantined
                            and (user_id is None or r.job.user_id == user_id)), key=lambda j: j.seq)
        return stuck[:limit]

    def next_due(self, kind: str) -> float | None:
        now = time.time()
        with self._lock:
            rows = sorted((r for r in self._rows.values() if r.job.kind == kind and not r.quarantined),
                          key=lambda r: r.job.seq)
        return first_due((r.job, r.due, _running(r, now)) for r in rows)

    def close(self) -> None:
        """Nothing to release."""


def _running(row: _Row, now: float) -> bool:
    return row.leased_until is not None and row.leased_until > now
