"""The background engine: one durable :class:`~hmem.protocols.JobQueue`, one set of
threads, one retry policy, one ``flush()``, one ``close()`` and one report for all the
work derived from acknowledged writes (extraction and compaction behind ``add()``,
moves of the vectors written behind, sentence keys).

A write stores its jobs in the queue (SQLite in the data folder, Redis beside the Redis
stores, in memory for the ``memory`` backends) before it returns, so a crash loses
none: the next process takes them again (at least once; every handler is idempotent).
Each :class:`JobKind` names a handler and how its jobs are taken: ``batch`` jobs at a
time on ``lanes`` threads, after writes pause for ``idle_s`` (work that competes with the
writes for the CPU) unless ``urgent_at`` jobs wait or someone flushes. One user's jobs of
one kind run in order, one batch at a time (the queue's rule).

A failed run is retried after ``first_s``, doubling up to ``max_s``
(:class:`RetryPolicy`). A batch that fails is split so that one bad job cannot hold the
others back. A job whose own data is refused :attr:`RetryPolicy.attempts` times is
quarantined: kept with its error and reported, never retried on its own (``requeue``
does it). An outage (:class:`~hmem.errors.BackendUnavailable`, a lost connection) is no
fault of the job: it is retried, with back-off, until the backend answers.

Example::

    >>> from hmem.backends.memory.jobs import MemoryJobQueue
    >>> from hmem.types import JobSpec
    >>> seen = []
    >>> engine = JobEngine(MemoryJobQueue())
    >>> engine.register(JobKind("echo", lambda jobs: seen.extend(j.payload["n"] for j in jobs)))
    >>> engine.submit([JobSpec("echo", "u1", {"n": 1}), JobSpec("echo", "u1", {"n": 2})])
    2
    >>> engine.flush(5.0), seen
    (True, [1, 2])
    >>> engine.close()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.protocols import JobQueue
from hmem.types import Job, JobCounts, JobSpec

__all__ = ["LEASE_S", "POLL_S", "JobEngine", "JobKind", "RetryPolicy", "is_outage"]

log = logging.getLogger("hmem.jobs")

#: How long a taken job is leased: past it (its process died) another run takes it.
LEASE_S = 300.0
#: How often an idle engine looks at a queue other processes share.
POLL_S = 2.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When a failed job runs again, and when it is set aside.

    >>> [RetryPolicy().delay(n) for n in (1, 2, 3, 10)]
    [0.5, 1.0, 2.0, 30.0]
    """

    attempts: int = 5  # runs refused for the job's own data before it is quarantined
    first_s: float = 0.5
    max_s: float = 30.0

    def __post_init__(self) -> None:
        if not (isinstance(self.attempts, int) and self.attempts >= 1 and 0 < self.first_s <= self.max_s):
            raise ConfigError(f"RetryPolicy needs attempts >= 1 and 0 < first_s <= max_s, got {self!r}")

    def delay(self, attempts: int) -> float:
        """Seconds before the next run of a job that has failed ``attempts`` times."""
        return float(min(self.max_s, self.first_s * 2.0 ** max(0, attempts - 1)))


@dataclass(frozen=True, slots=True)
class JobKind:
    """A kind of job and how the engine runs it: ``run(jobs)`` does the work of a batch
    (all of one kind; one user's jobs in order) and raises if any of it failed."""

    name: str
    run: Callable[[Sequence[Job]], None]
    batch: int = 1
    lanes: int = 1
    idle_s: float = 0.0
    urgent_at: int | None = None
    coalesce: bool = False  # submit drops a job whose (user, key) already waits

    def __post_init__(self) -> None:
        if not (self.batch >= 1 and self.lanes >= 1 and self.idle_s >= 0):
            raise ConfigError(f"job kind {self.name!r} needs batch >= 1, lanes >= 1 and idle_s >= 0")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says a backend is away (retry the job as it is) rather than that
    the job's own data is refused (count it towards quarantine)."""
    return isinstance(exc, BackendUnavailable | ConnectionError | TimeoutError)


@dataclass(slots=True)
class _State:
    kind: JobKind
    threads: list[threading.Thread] = field(default_factory=list)
    hint: bool = True  # jobs may be due (cleared by an empty take, set by a submit)
    last_submit: float = 0.0
    submitted: int = 0  # since the last empty take: a lower bound of what waits
    running: dict[str, int] = field(default_factory=dict)  # user -> jobs of this kind running here
    paused: int = 0  # drops in progress: take nothing meanwhile
    failed_at: float = 0.0  # monotonic time of the latest failed run
    error: str | None = None  # the latest failure, until a run succeeds


class JobEngine:
    """Runs the jobs of a :class:`~hmem.protocols.JobQueue` (see the module doc).

    Threads start with the first job of their kind; ``exclusive``: this process is the
    queue's only user (the embedded default holds the data folder's lock), so the jobs a
    dead process held are due at once instead of when their lease ends. ``poll_s``: for a
    queue other processes write too (Redis, a shared SQLite file), look for due jobs this
    often even when this process submitted none (a dead instance's, once their lease ends).
    """

    def __init__(self, queue: JobQueue, *, policy: RetryPolicy | None = None, lease_s: float = LEASE_S,
                 exclusive: bool = False, poll_s: float | None = None, name: str = "hmem-jobs") -> None:
        self.queue = queue
        self._poll_s = poll_s
        self.policy = policy or RetryPolicy()
        self._lease_s = lease_s
        self._name = name
        self._cond = threading.Condition()
        self._kinds: dict[str, _State] = {}
        self._flushers = 0
        self._closed = False
        if exclusive:
            recovered = queue.recover()
            if recovered:
                log.info("%d background job(s) of an earlier run are due again", recovered)

    # -- set-up ----------------------------------------------------------------------

    def register(self, kind: JobKind) -> None:
        """Run ``kind``'s jobs from now on (and those an earlier process left)."""
        with self._cond:
            if kind.name in self._kinds:
                raise ConfigError(f"job kind {kind.name!r} is registered already")
            self._kinds[kind.name] = _State(kind)
            left = self.queue.counts().get(kind.name, JobCounts())
            if left.waiting or left.running or self._poll_s:
                self._kinds[kind.name].submitted = left.waiting
                self._start_locked(self._kinds[kind.name])

    # -- the write side ----------------------------------------------------------------

    def submit(self, specs: Sequence[JobSpec]) -> int:
        """Store the jobs durably (they survive a crash from here on) and wake their
        threads; how many were stored (a coalescing kind drops one that already waits)."""
        if self._closed:
            raise InvalidInput(f"{self._name} is closed; open the Memory again", field="engine")
        by_kind: dict[str, list[JobSpec]] = {}
        for spec in specs:
            if spec.kind not in self._kinds:
                raise InvalidInput(f"no handler for job kind {spec.kind!r}", field="kind")
            by_kind.setdefault(spec.kind, []).append(spec)
        stored = 0
        for name, group in by_kind.items():
            state = self._kinds[name]
            n = self.queue.put(group, coalesce=state.kind.coalesce)
            stored += n
            with self._cond:
                state.hint, state.last_submit = True, time.monotonic()
                state.submitted += n
                self._start_locked(state)
                self._cond.notify_all()
        return stored

    def wait_below(self, kind: str, limit: int, timeout: float | None = None) -> bool:
        """Wait until fewer than ``limit`` jobs of ``kind`` wait or run (a producer that
        outruns its workers slows down instead of queueing without end)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            counts = self.queue.counts().get(kind, JobCounts())
            if counts.waiting + counts.running < limit:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with self._cond:
                self._cond.wait(0.05 if left is None else min(0.05, left))

    def drop(self, user_id: str, *, kind: str | None = None, keys: Sequence[str] | None = None) -> int:
        """Delete the user's jobs, after the runs of them in flight here have ended (so
        nothing a dropped job writes outlives the data it was about)."""
        states = [state for name, state in self._kinds.items() if kind is None or name == kind]
        with self._cond:
            for state in states:  # no new run of these kinds starts until the drop is done
                state.paused += 1
            try:
                while any(state.running.get(user_id) for state in states):
                    self._cond.wait(0.1)
                return self.queue.drop(user_id, kind=kind, keys=keys)
            finally:
                for state in states:
                    state.paused -= 1
                self._cond.notify_all()

    # -- waiting and reporting -----------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def flush(self, timeout: float | None = 60.0, *, kinds: Sequence[str] | None = None,
              until_failing: bool = False) -> bool:
        """Wait until no job (of ``kinds``) waits or runs, quarantined ones aside; False
        after ``timeout`` (the jobs are kept and run later; the log says why).
        ``until_failing``: give up as soon as every kind left has failed a run since the
        call began (a backend is down: waiting longer saves nothing; for shutdowns)."""
        began = time.monotonic()
        deadline = None if timeout is None else began + timeout
        with self._cond:
            self._flushers += 1
            self._cond.notify_all()
        try:
            while True:
                busy = {name: c for name, c in self.queue.counts().items()
                        if (kinds is None or name in kinds) and (c.waiting or c.running)}
                if not busy or self._closed:
                    return not busy
                if until_failing and all(name in self._kinds and self._kinds[name].failed_at >= began
                                         for name in busy):
                    log.warning("background jobs left waiting for the next run (their backend refuses): %s",
                                {n: c.waiting + c.running for n, c in busy.items()})
                    return False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    errors = {name: s.error for name, s in self._kinds.items() if s.error}
                    log.warning("background jobs still wait after %g s: %s%s", timeout,
                                {n: c.waiting + c.running for n, c in busy.items()},
                                f" (failing: {errors})" if errors else "")
                    return False
                with self._cond:
                    for name in busy:
                        if name in self._kinds:
                            self._kinds[name].hint = True
                            self._start_locked(self._kinds[name])
                    self._cond.notify_all()
                    self._cond.wait(0.02 if left is None else min(0.02, left))
        finally:
            with self._cond:
                self._flushers -= 1

    def report(self, user_id: str | None = None) -> dict[str, Any]:
        """What waits, runs and is quarantined, per kind (of one user, or of all), with
        each kind's latest error and the quarantined jobs (for stats, ``/readyz`` and
        the inspector)."""
        counts = self.queue.counts(user_id=user_id)
        names = sorted(set(counts) | set(self._kinds))
        return {
            "kinds": {name: {"waiting": counts.get(name, JobCounts()).waiting,
                             "running": counts.get(name, JobCounts()).running,
                             "quarantined": counts.get(name, JobCounts()).quarantined,
                             "error": self._kinds[name].error if name in self._kinds else None}
                      for name in names},
            "quarantined": [{"id": j.id, "kind": j.kind, "user_id": j.user_id, "key": j.key,
                             "attempts": j.attempts, "error": j.error}
                            for j in self.queue.quarantined(user_id=user_id)],
        }

    def requeue(self, ids: Sequence[str]) -> int:
        """Run quarantined jobs again (after the cause was fixed); how many."""
        n = self.queue.requeue(ids)
        with self._cond:
            for state in self._kinds.values():
                state.hint = True
                if n:
                    self._start_locked(state)
            self._cond.notify_all()
        return n

    def close(self, timeout: float | None = 10.0) -> None:
        """Run what waits (up to ``timeout``; not at all while jobs fail: they stay in
        the queue for the next process) and stop the threads. Idempotent."""
        with self._cond:
            if self._closed:
                return
            failing = any(state.error for state in self._kinds.values())
        if not failing:
            self.flush(timeout, until_failing=True)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = [t for state in self._kinds.values() for t in state.threads]
        for thread in threads:
            thread.join(timeout=5.0)

    # -- the threads ---------------------------------------------------------------------

    def _start_locked(self, state: _State) -> None:
        if self._closed:
            return
        state.threads = [t for t in state.threads if t.is_alive()]
        while len(state.threads) < state.kind.lanes:
            thread = threading.Thread(target=self._loop, args=(state,), daemon=True,
                                      name=f"{self._name}-{state.kind.name}-{len(state.threads)}")
            state.threads.append(thread)
            thread.start()

    def _loop(self, state: _State) -> None:
        kind = state.kind
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    wait = self._wait_locked(state)
                    if wait == 0.0:
                        break
                    if wait is None and self._poll_s and not state.paused:
                        self._cond.wait(self._poll_s)
                        state.hint = True  # another process may have queued some
                        continue
                    self._cond.wait(wait)
                try:
                    jobs = self.queue.take(kind.name, kind.batch, lease_s=self._lease_s)
                    due = None if jobs else self.queue.next_due(kind.name)
                except Exception as exc:  # the queue is away (or closed under us): try again later
                    state.error = f"{type(exc).__name__}: {exc}"
                    log.warning("the background queue did not answer (%s); trying again in %g s", state.error,
                                self.policy.max_s)
                    self._cond.wait(self.policy.max_s)
                    continue
                if not jobs:
                    state.hint, state.submitted = False, 0
                    if due is not None:  # in back-off: look again when it is due
                        self._cond.wait(max(0.01, due - time.time()))
                        state.hint = True
                    continue
                state.submitted = max(0, state.submitted - len(jobs))
                for job in jobs:
                    state.running[job.user_id] = state.running.get(job.user_id, 0) + 1
            try:
                self._run(state, jobs)
            finally:
                with self._cond:
                    for job in jobs:
                        left = state.running[job.user_id] - 1
                        if left:
                            state.running[job.user_id] = left
                        else:
                            del state.running[job.user_id]
                    state.hint = True  # the user's next jobs (held back while these ran) may be due
                    self._cond.notify_all()

    def _wait_locked(self, state: _State) -> float | None:
        """0 to take now; else how long to wait (None: until woken)."""
        if not state.hint or state.paused:
            return None
        kind = state.kind
        urgent = self._flushers or (kind.urgent_at is not None and state.submitted >= kind.urgent_at)
        if urgent or not kind.idle_s:
            return 0.0
        due = kind.idle_s - (time.monotonic() - state.last_submit)
        return 0.0 if due <= 0 else due

    def _run(self, state: _State, jobs: Sequence[Job]) -> None:
        try:
            state.kind.run(jobs)
        except Exception as exc:
            if len(jobs) > 1 and not is_outage(exc):
                # One bad job must not hold the batch back: each alone finds it.
                for job in jobs:
                    self._run(state, [job])
                return
            self._failed(state, jobs, exc)
            return
        self.queue.done([job.id for job in jobs])
        state.error = None

    def _failed(self, state: _State, jobs: Sequence[Job], exc: Exception) -> None:
        error = f"{type(exc).__name__}: {exc}"
        state.error, state.failed_at = error, time.monotonic()
        outage = is_outage(exc)
        attempts = jobs[0].attempts + 1
        if not outage and attempts >= self.policy.attempts:
            self.queue.fail([j.id for j in jobs], error, retry_at=None)
            log.error("background job %s of %r (user %s) quarantined after %d failed runs: %s",
                      jobs[0].id, state.kind.name, jobs[0].user_id, attempts, error)
            return
        delay = self.policy.delay(attempts if not outage else min(attempts, 16))
        self.queue.fail([j.id for j in jobs], error, retry_at=time.time() + delay)
        log.warning("background %s job(s) failed (run %d; kept, tried again in %g s): %s",
                    state.kind.name, attempts, delay, error)
