"""The :class:`~hmem.protocols.JobQueue` contract suite.

Subclass :class:`JobQueueContract` and override the ``job_backend`` fixture to return a
:class:`JobQueueBackend`. Its ``make()`` opens a queue; when ``persistent``, queues made
by one backend share storage (the same file, the same server), so a job put through one
is taken through the next, as after a restart or from another process.

The suite moves time with the ``now=`` of :meth:`~hmem.protocols.JobQueue.take` and the
``retry_at`` of :meth:`~hmem.protocols.JobQueue.fail`, never by sleeping; ``put`` stamps
jobs with the real clock, so tests read the clock once after their puts (``T``) and take
at ``T`` plus offsets.

Example::

    import pytest
    from hmem.testing.contracts import JobQueueBackend, JobQueueContract

    class TestMyJobQueue(JobQueueContract):
        @pytest.fixture
        def job_backend(self, tmp_path) -> JobQueueBackend:
            return JobQueueBackend(lambda: MyJobQueue(tmp_path / "jobs.db"), persistent=True)

:func:`run_workers` is the concurrency check the suite runs; call it with several queue
objects over one storage (two connections, two clients) to check that they too never
lease one job twice, nor let two takes hold jobs of one user at once.

The order a take's list gives jobs of different users in is left open (a backend may
list them by ``seq`` or user by user); the suite compares each user's jobs, in order
(:func:`by_user`).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from hmem.backends._jobs import MAX_PAYLOAD_BYTES
from hmem.errors import InvalidInput
from hmem.protocols import JobQueue
from hmem.types import Job, JobCounts, JobSpec

__all__ = ["JobQueueBackend", "JobQueueContract", "WorkerReport", "run_workers"]

KIND = "keys"
LEASE = 60.0


@dataclass(frozen=True)
class JobQueueBackend:
    """``make()`` opens a queue. When ``persistent``, queues made by one backend share
    storage, so jobs put through one are taken through the next."""

    make: Callable[[], JobQueue]
    persistent: bool


@dataclass
class WorkerReport:
    """What :func:`run_workers` saw: how often each job id was taken, the most takes
    holding jobs of one user at once, the most jobs one take returned, and each user's
    payload numbers in the order taken."""

    taken: Counter[str] = field(default_factory=Counter)
    max_takes_per_user: int = 0
    largest_take: int = 0
    order: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    errors: list[BaseException] = field(default_factory=list)


def run_workers(queues: Sequence[JobQueue], *, threads: int = 4, users: int = 20, per_user: int = 10,
                limits: Sequence[int] = (1, 3, 12), timeout_s: float = 60.0) -> WorkerReport:
    """Put ``users`` × ``per_user`` jobs through ``queues[0]``, then let ``threads``
    threads (thread ``i`` on ``queues[i % len(queues)]``, taking up to
    ``limits[i % len(limits)]`` jobs at a time) take jobs, hold them a moment and finish
    them, until all are done; record what a correct queue must never allow: a job taken
    twice or never, two takes holding jobs of one user at once, a user's jobs out of order."""
    specs = [JobSpec(KIND, f"w{u}", {"n": n}, key=f"w{u}-{n}") for n in range(per_user) for u in range(users)]
    assert queues[0].put(specs) == len(specs)
    report = WorkerReport()
    lock = threading.Lock()
    holding: Counter[str] = Counter()  # per user: how many takes hold its jobs now
    deadline = time.monotonic() + timeout_s

    def work(queue: JobQueue, limit: int) -> None:
        try:
            while time.monotonic() < deadline:
                with lock:
                    if sum(report.taken.values()) >= len(specs):
                        return
                jobs = queue.take(KIND, limit, lease_s=LEASE)
                if not jobs:
                    time.sleep(0.001)
                    continue
                users_held = {job.user_id for job in jobs}
                with lock:
                    report.largest_take = max(report.largest_take, len(jobs))
                    for job in jobs:  # a take lists each user's jobs in order
                        report.taken[job.id] += 1
                        report.order[job.user_id].append(int(job.payload["n"]))
                    for user in users_held:
                        holding[user] += 1
                        report.max_takes_per_user = max(report.max_takes_per_user, holding[user])
                time.sleep(0.0005)  # the "work": gives other threads a chance to overlap
                with lock:  # before done(): once done, the users' next jobs may be taken at once
                    for user in users_held:
                        holding[user] -= 1
                queue.done([job.id for job in jobs])
        except BaseException as exc:  # reported to the test, not lost in the thread
            with lock:
                report.errors.append(exc)

    workers = [threading.Thread(target=work, args=(queues[i % len(queues)], limits[i % len(limits)]))
               for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout_s + 5)
    return report


def spec(user: str = "u1", n: int = 0, *, kind: str = KIND, key: str | None = None) -> JobSpec:
    return JobSpec(kind, user, {"n": n}, key=key)


def ns(jobs: Sequence[Job]) -> list[tuple[str, int]]:
    """(user, payload n) of each job, in order: what the tests compare."""
    return [(job.user_id, job.payload["n"]) for job in jobs]


def by_user(jobs: Sequence[Job]) -> dict[str, list[int]]:
    """Each user's payload numbers, in the order listed: what the tests compare when a
    take returns jobs of several users (their order across users is left open)."""
    out: dict[str, list[int]] = {}
    for job in jobs:
        out.setdefault(job.user_id, []).append(job.payload["n"])
    return out


def _over_limit_payload() -> dict[str, Any]:
    """A payload whose JSON is exactly one byte over :data:`MAX_PAYLOAD_BYTES`."""
    overhead = len(json.dumps({"x": ""}, ensure_ascii=False).encode())
    payload = {"x": "a" * (MAX_PAYLOAD_BYTES - overhead + 1)}
    assert len(json.dumps(payload, ensure_ascii=False).encode()) == MAX_PAYLOAD_BYTES + 1
    return payload


@dataclass(frozen=True)
class Bad:
    why: str
    call: Callable[[JobQueue, str], Any]  # (queue, id of a running job)


# Each must raise InvalidInput and leave the queue as it was. Tried: user ids that are
# empty, hold a NUL or are padded; an empty kind and an empty key; payloads that are not
# JSON (an object(), a set inside) or one byte too large; a non-JobSpec in the batch
# (after a valid spec: nothing of the batch may be stored); a bare JobSpec instead of a
# sequence; take with limit 0, -1 or True, lease_s 0, -1, NaN or inf, an empty kind;
# fail with retry_at NaN, inf or a string; drop with an empty user id.
BAD_INPUTS = [
    Bad("empty user id", lambda q, _i: q.put([spec("")])),
    Bad("NUL in user id", lambda q, _i: q.put([spec("u\x00x")])),
    Bad("padded user id", lambda q, _i: q.put([spec(" u1")])),
    Bad("empty kind", lambda q, _i: q.put([spec(kind="")])),
    Bad("empty key", lambda q, _i: q.put([spec(key="")])),
    Bad("payload object()", lambda q, _i: q.put([JobSpec(KIND, "u1", object())])),  # type: ignore[arg-type]
    Bad("set in payload", lambda q, _i: q.put([JobSpec(KIND, "u1", {"s": {1, 2}})])),
    Bad("payload one byte too large", lambda q, _i: q.put([JobSpec(KIND, "u1", _over_limit_payload())])),
    Bad("non-JobSpec after a valid one", lambda q, _i: q.put([spec("u9"), {"kind": KIND}])),  # type: ignore[list-item]
    Bad("bare JobSpec", lambda q, _i: q.put(spec("u9"))),  # type: ignore[arg-type]
    Bad("limit 0", lambda q, _i: q.take(KIND, 0, lease_s=LEASE)),
    Bad("limit -1", lambda q, _i: q.take(KIND, -1, lease_s=LEASE)),
    Bad("limit True", lambda q, _i: q.take(KIND, True, lease_s=LEASE)),
    Bad("lease_s 0", lambda q, _i: q.take(KIND, 1, lease_s=0)),
    Bad("lease_s -1", lambda q, _i: q.take(KIND, 1, lease_s=-1)),
    Bad("lease_s NaN", lambda q, _i: q.take(KIND, 1, lease_s=math.nan)),
    Bad("lease_s inf", lambda q, _i: q.take(KIND, 1, lease_s=math.inf)),
    Bad("take of an empty kind", lambda q, _i: q.take("", 1, lease_s=LEASE)),
    Bad("retry_at NaN", lambda q, i: q.fail([i], "boom", retry_at=math.nan)),
    Bad("retry_at inf", lambda q, i: q.fail([i], "boom", retry_at=math.inf)),
    Bad("retry_at a string", lambda q, i: q.fail([i], "boom", retry_at="soon")),  # type: ignore[arg-type]
    Bad("drop of an empty user id", lambda q, _i: q.drop("")),
]


class JobQueueContract:
    """Behaviour every :class:`~hmem.protocols.JobQueue` must show: a take leases, of
    the users with nothing of the kind running, users in the order of their oldest job
    and each user's jobs oldest first up to one in back-off (so one user's jobs run in
    order, one take at a time); leases that run out (at-least-once), back-off that holds
    the user's later jobs, quarantine that holds nothing, coalescing, drop and counts per
    user, ``next_due`` as when a take could next return a job, bad input rejected with
    nothing changed, persistence, and no job leased twice nor one user's jobs held by two
    takes under concurrent takers."""

    @pytest.fixture
    def job_backend(self) -> JobQueueBackend:
        raise NotImplementedError("override the `job_backend` fixture to return a JobQueueBackend")

    @pytest.fixture
    def queue(self, job_backend: JobQueueBackend) -> Iterator[JobQueue]:
        queue = job_backend.make()
        yield queue
        queue.close()

    def test_implements_the_port(self, queue: JobQueue) -> None:
        assert isinstance(queue, JobQueue)

    # -- put and take -----------------------------------------------------------------

    def test_put_then_take_returns_jobs_oldest_first_intact(self, queue: JobQueue) -> None:
        payload = {"text": "北京 🐼 \"quoted\"\n", "ids": [1, 2, 3], "nested": {"f": 0.5, "ok": True, "none": None}}
        before = time.time()
        assert queue.put([JobSpec(KIND, "u1", payload, key="i1"), spec("u2", 2), spec("u3", 3, key="i3")]) == 3
        after = time.time()
        jobs = queue.take(KIND, 10, lease_s=LEASE)
        assert [(j.user_id, j.key) for j in jobs] == [("u1", "i1"), ("u2", None), ("u3", "i3")]
        first = jobs[0]
        assert first.payload == payload and first.kind == KIND
        assert (first.attempts, first.error) == (0, None)
        assert before - 1 <= first.created_at <= after + 1
        assert [j.payload for j in jobs[1:]] == [{"n": 2}, {"n": 3}]
        assert jobs[0].seq < jobs[1].seq < jobs[2].seq
        assert len({j.id for j in jobs}) == 3 and all(isinstance(j.id, str) for j in jobs)

    def test_take_never_returns_more_than_limit(self, queue: JobQueue) -> None:
        queue.put([spec(f"u{i}", i) for i in range(5)])
        assert ns(queue.take(KIND, 3, lease_s=LEASE)) == [("u0", 0), ("u1", 1), ("u2", 2)]
        assert ns(queue.take(KIND, 1, lease_s=LEASE)) == [("u3", 3)]
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("u4", 4)]
        assert queue.take(KIND, 10, lease_s=LEASE) == []

    def test_take_of_another_kind_returns_nothing(self, queue: JobQueue) -> None:
        queue.put([spec("u1", 1)])
        assert queue.take("other", 10, lease_s=LEASE) == []
        assert queue.counts() == {KIND: JobCounts(waiting=1)}
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("u1", 1)]

    def test_put_of_nothing_stores_nothing(self, queue: JobQueue) -> None:
        assert queue.put([]) == 0
        assert queue.counts() == {}

    def test_a_payload_of_exactly_the_maximum_size_round_trips(self, queue: JobQueue) -> None:
        payload = _over_limit_payload()
        payload["x"] = payload["x"][:-1]
        assert queue.put([JobSpec(KIND, "u1", payload)]) == 1
        [job] = queue.take(KIND, 1, lease_s=LEASE)
        assert job.payload == payload

    # -- order per user ----------------------------------------------------------------

    def test_one_users_jobs_of_a_kind_run_in_order_one_take_at_a_time(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2), spec("b", 1)])
        first = queue.take(KIND, 1, lease_s=LEASE)
        assert ns(first) == [("a", 1)]
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("b", 1)]  # a2 waits while a1 runs
        assert queue.take(KIND, 10, lease_s=LEASE) == []
        queue.done([first[0].id])
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("a", 2)]

    def test_a_take_returns_each_users_due_jobs_together_oldest_first(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("b", 1), spec("a", 2), spec("a", 3)])
        jobs = queue.take(KIND, 10, lease_s=LEASE)
        assert len(jobs) == 4 and by_user(jobs) == {"a": [1, 2, 3], "b": [1]}
        assert queue.counts() == {KIND: JobCounts(running=4)}
        assert queue.take(KIND, 10, lease_s=LEASE) == []

    def test_limit_cuts_a_users_run_and_the_rest_waits_for_it(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2), spec("a", 3)])
        first = queue.take(KIND, 2, lease_s=LEASE)
        assert ns(first) == [("a", 1), ("a", 2)]
        assert queue.take(KIND, 10, lease_s=LEASE) == []  # a3 waits while a1 and a2 run
        queue.done([j.id for j in first])
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("a", 3)]

    def test_the_user_with_the_oldest_job_goes_first_with_its_whole_run(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("b", 1), spec("a", 2)])
        assert ns(queue.take(KIND, 2, lease_s=LEASE)) == [("a", 1), ("a", 2)]  # not a1 and b1
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("b", 1)]

    def test_a_users_run_stops_at_a_job_in_back_off(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2), spec("a", 3), spec("b", 1)])
        t = time.time()
        held = queue.take(KIND, 3, lease_s=LEASE, now=t)
        assert ns(held) == [("a", 1), ("a", 2), ("a", 3)]
        a1, a2, a3 = held
        queue.fail([a1.id], "x", retry_at=t)  # due again at once
        queue.fail([a2.id], "x", retry_at=t + 100)  # backs off
        queue.fail([a3.id], "x", retry_at=t)  # due, but behind a2
        taken = queue.take(KIND, 10, lease_s=LEASE, now=t + 1)
        assert by_user(taken) == {"a": [1], "b": [1]}
        queue.done([j.id for j in taken])
        assert queue.take(KIND, 10, lease_s=LEASE, now=t + 50) == []
        assert ns(queue.take(KIND, 10, lease_s=LEASE, now=t + 101)) == [("a", 2), ("a", 3)]

    def test_kinds_do_not_block_each_other(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2, kind="other")])
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("a", 1)]
        assert ns(queue.take("other", 10, lease_s=LEASE)) == [("a", 2)]

    # -- leases ----------------------------------------------------------------------

    def test_a_running_job_is_taken_again_only_after_its_lease_ends(self, queue: JobQueue) -> None:
        queue.put([spec("u1", 1)])
        t = time.time()
        [job] = queue.take(KIND, 10, lease_s=30, now=t)
        assert queue.counts() == {KIND: JobCounts(running=1)}
        assert queue.take(KIND, 10, lease_s=30, now=t + 29) == []
        [again] = queue.take(KIND, 10, lease_s=30, now=t + 31)  # its worker died: replayed
        assert (again.id, again.payload, again.attempts) == (job.id, job.payload, 0)
        assert queue.take(KIND, 10, lease_s=30, now=t + 60) == []  # the new lease runs to t + 61

    def test_recover_makes_held_jobs_due_at_once(self, queue: JobQueue) -> None:
        queue.put([spec("u1", 1), spec("u1", 2), spec("u2", 1)])
        t = time.time()
        taken = queue.take(KIND, 10, lease_s=LEASE, now=t)
        assert by_user(taken) == {"u1": [1, 2], "u2": [1]}
        assert queue.take(KIND, 10, lease_s=LEASE, now=t) == []
        assert queue.recover() == 3
        assert queue.counts() == {KIND: JobCounts(waiting=3)}
        again = queue.take(KIND, 10, lease_s=LEASE, now=t)
        assert sorted(j.seq for j in again) == sorted(j.seq for j in taken)
        assert queue.recover() == 3
        assert queue.recover() == 0

    # -- failures ---------------------------------------------------------------------

    def test_fail_with_retry_at_backs_off_and_holds_the_users_later_jobs(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2), spec("b", 1)])
        t = time.time()
        [a1] = queue.take(KIND, 1, lease_s=LEASE, now=t)
        queue.fail([a1.id], "boom", retry_at=t + 100)
        assert queue.counts() == {KIND: JobCounts(waiting=3)}
        [b1] = queue.take(KIND, 10, lease_s=LEASE, now=t + 50)  # a1 backs off, a2 waits behind it
        assert ns([b1]) == [("b", 1)]
        queue.done([b1.id])
        queue.put([spec("b", 2)])
        [b2] = queue.take(KIND, 10, lease_s=LEASE, now=t + 99)  # other users go on meanwhile
        assert ns([b2]) == [("b", 2)]
        queue.done([b2.id])
        [retried] = queue.take(KIND, 1, lease_s=LEASE, now=t + 101)
        assert (retried.id, retried.attempts, retried.error) == (a1.id, 1, "boom")
        queue.fail([a1.id], "boom again", retry_at=t + 200)
        assert queue.take(KIND, 10, lease_s=LEASE, now=t + 150) == []  # a2 still waits behind a1
        retried, a2 = queue.take(KIND, 10, lease_s=LEASE, now=t + 201)  # a1 due again, a2 with it
        assert (retried.id, retried.attempts, retried.error) == (a1.id, 2, "boom again")
        assert ns([a2]) == [("a", 2)] and (a2.attempts, a2.error) == (0, None)

    def test_fail_without_retry_quarantines_and_blocks_nothing(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2), spec("b", 1)])
        [a1] = queue.take(KIND, 1, lease_s=LEASE)
        queue.fail([a1.id], "bad payload", retry_at=None)
        assert queue.counts() == {KIND: JobCounts(waiting=2, quarantined=1)}
        [stuck] = queue.quarantined()
        assert (stuck.id, stuck.attempts, stuck.error, stuck.payload) == (a1.id, 1, "bad payload", {"n": 1})
        assert queue.quarantined(user_id="a") == [stuck]
        assert queue.quarantined(user_id="b") == []
        taken = queue.take(KIND, 10, lease_s=LEASE)  # the quarantined a1 holds nothing back
        assert by_user(taken) == {"a": [2], "b": [1]}
        queue.done([j.id for j in taken])
        assert queue.take(KIND, 10, lease_s=LEASE, now=time.time() + 10 * LEASE) == []  # a1 is never taken
        assert queue.counts() == {KIND: JobCounts(quarantined=1)}

    def test_requeue_makes_a_quarantined_job_due_again_with_attempts_cleared(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1)])
        [a1] = queue.take(KIND, 10, lease_s=LEASE)
        queue.fail([a1.id], "bad", retry_at=None)
        assert queue.take(KIND, 10, lease_s=LEASE) == []
        assert queue.next_due(KIND) is None
        assert queue.requeue([a1.id, "999999999", "nope"]) == 1
        assert queue.requeue([a1.id]) == 0  # no longer quarantined
        assert queue.quarantined() == []
        [again] = queue.take(KIND, 10, lease_s=LEASE)
        assert (again.id, again.attempts, again.error) == (a1.id, 0, None)

    def test_a_requeued_older_job_waits_while_a_newer_one_of_its_user_runs(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2)])
        [a1] = queue.take(KIND, 1, lease_s=LEASE)
        queue.fail([a1.id], "bad", retry_at=None)
        [a2] = queue.take(KIND, 10, lease_s=LEASE)
        assert queue.requeue([a1.id]) == 1
        assert queue.take(KIND, 10, lease_s=LEASE) == []  # a2 runs: nothing else of a's
        queue.done([a2.id])
        assert [j.id for j in queue.take(KIND, 10, lease_s=LEASE)] == [a1.id]

    def test_quarantined_lists_oldest_first_within_limit(self, queue: JobQueue) -> None:
        queue.put([spec(f"u{i}", i, kind=("k1", "k2")[i % 2]) for i in range(5)])
        t = time.time()
        for kind in ("k1", "k2"):
            for job in queue.take(kind, 10, lease_s=LEASE, now=t):
                queue.fail([job.id], f"e{job.payload['n']}", retry_at=None)
        assert [j.error for j in queue.quarantined()] == ["e0", "e1", "e2", "e3", "e4"]
        assert [j.error for j in queue.quarantined(limit=2)] == ["e0", "e1"]
        assert [j.error for j in queue.quarantined(user_id="u3")] == ["e3"]
        assert queue.counts() == {"k1": JobCounts(quarantined=3), "k2": JobCounts(quarantined=2)}

    def test_done_fail_and_requeue_of_unknown_ids_change_nothing(self, queue: JobQueue) -> None:
        queue.put([spec("u1", 1)])
        [job] = queue.take(KIND, 10, lease_s=LEASE)
        before = queue.counts()
        queue.done(["999999999", "nope", "", "0"])
        queue.fail(["999999999", "nope"], "x", retry_at=None)
        assert queue.requeue(["999999999", job.id]) == 0  # job is running, not quarantined
        assert queue.counts() == before
        queue.done([job.id])
        queue.done([job.id])  # a second done of a finished job: ignored
        assert queue.counts() == {}

    # -- coalescing --------------------------------------------------------------------

    def test_coalesce_drops_a_spec_matching_a_waiting_job(self, queue: JobQueue) -> None:
        assert queue.put([spec("u1", 1, key="i1")]) == 1
        assert queue.put([spec("u1", 2, key="i1")], coalesce=True) == 0
        # differing in key, user or kind: stored
        assert queue.put([spec("u1", 3, key="i2"), spec("u2", 4, key="i1"), spec("u1", 5, kind="other", key="i1")],
                         coalesce=True) == 3
        assert queue.put([spec("u1", 6, key="i1")]) == 1  # without coalesce: stored
        assert queue.put([spec("u3", 7, key="i9"), spec("u3", 8, key="i9")], coalesce=True) == 1  # within a batch
        assert queue.put([spec("u4", 9, key="i10"), spec("u4", 10, key="i1")], coalesce=True) == 2  # a prefix only
        assert queue.counts() == {KIND: JobCounts(waiting=7), "other": JobCounts(waiting=1)}
        assert by_user(queue.take(KIND, 10, lease_s=LEASE)) == {"u1": [1, 3, 6], "u2": [4], "u3": [7], "u4": [9, 10]}

    def test_coalesce_keeps_a_spec_matching_only_a_running_or_quarantined_job(self, queue: JobQueue) -> None:
        queue.put([spec("u1", 1, key="i1")])
        [running] = queue.take(KIND, 10, lease_s=LEASE)
        # the running job may have read its input already: the new change needs its own run
        assert queue.put([spec("u1", 2, key="i1")], coalesce=True) == 1
        assert queue.put([spec("u1", 3, key="i1")], coalesce=True) == 0  # now one waits
        queue.fail([running.id], "bad", retry_at=None)
        [second] = queue.take(KIND, 10, lease_s=LEASE)
        assert ns([second]) == [("u1", 2)]
        queue.done([second.id])
        assert queue.put([spec("u1", 4, key="i1")], coalesce=True) == 1  # only a quarantined one left

    def test_coalesce_matches_jobs_without_key_by_kind_and_user(self, queue: JobQueue) -> None:
        assert queue.put([spec("u1", 1)]) == 1
        assert queue.put([spec("u1", 2)], coalesce=True) == 0
        assert queue.put([spec("u1", 3, key="i1")], coalesce=True) == 1

    # -- drop, counts, next_due ----------------------------------------------------------

    def test_drop_removes_just_the_named_jobs(self, queue: JobQueue) -> None:
        queue.put([spec("u", 1, key="i1"), spec("u", 2, key="i2"), spec("u", 3), spec("u", 4, kind="k2", key="i1"),
                   spec("v", 5, key="i1")])
        assert queue.drop("u", kind=KIND, keys=["i1", "zz"]) == 1
        assert queue.drop("u", kind=KIND, keys=[]) == 0
        assert queue.drop("u", kind="k2") == 1
        assert queue.counts(user_id="u") == {KIND: JobCounts(waiting=2)}
        assert queue.drop("u", keys=["i2"]) == 1
        assert queue.drop("u") == 1
        assert queue.drop("u") == 0
        assert queue.counts(user_id="u") == {}
        assert queue.counts() == {KIND: JobCounts(waiting=1)}
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("v", 5)]

    def test_drop_removes_running_and_quarantined_jobs(self, queue: JobQueue) -> None:
        queue.put([spec("u", 1), spec("u", 2, kind="k2")])
        [running] = queue.take(KIND, 10, lease_s=LEASE)
        [stuck] = queue.take("k2", 10, lease_s=LEASE)
        queue.fail([stuck.id], "bad", retry_at=None)
        assert queue.drop("u") == 2
        assert queue.counts() == {} and queue.quarantined() == []
        queue.done([running.id])  # its worker finishes later: ignored
        queue.fail([running.id], "late", retry_at=None)
        assert queue.counts() == {} and queue.quarantined() == []
        queue.put([spec("u", 3)])
        assert ns(queue.take(KIND, 10, lease_s=LEASE)) == [("u", 3)]  # nothing left holds u back

    def test_counts_per_kind_and_per_user(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2), spec("b", 1), spec("a", 3, kind="k2"), spec("b", 2, kind="k2")])
        assert ns(queue.take(KIND, 1, lease_s=LEASE)) == [("a", 1)]
        taken = queue.take("k2", 10, lease_s=LEASE)
        assert by_user(taken) == {"a": [3], "b": [2]}
        [a3] = [j for j in taken if j.user_id == "a"]
        queue.fail([a3.id], "bad", retry_at=None)
        assert queue.counts() == {KIND: JobCounts(waiting=2, running=1), "k2": JobCounts(running=1, quarantined=1)}
        assert queue.counts(user_id="a") == {KIND: JobCounts(waiting=1, running=1), "k2": JobCounts(quarantined=1)}
        assert queue.counts(user_id="b") == {KIND: JobCounts(waiting=1), "k2": JobCounts(running=1)}
        assert queue.counts(user_id="nobody") == {}

    def test_next_due_is_the_earliest_due_of_the_waiting_users(self, queue: JobQueue) -> None:
        assert queue.next_due(KIND) is None
        before = time.time()
        queue.put([spec("a", 1), spec("b", 1)])
        due = queue.next_due(KIND)
        assert due is not None and before - 1 <= due <= time.time() + 1
        assert queue.next_due("other") is None
        t = time.time()
        taken = queue.take(KIND, 10, lease_s=LEASE, now=t)
        assert by_user(taken) == {"a": [1], "b": [1]}
        [a1] = [j for j in taken if j.user_id == "a"]
        [b1] = [j for j in taken if j.user_id == "b"]
        assert queue.next_due(KIND) is None  # both run
        queue.fail([b1.id], "x", retry_at=t + 500)
        queue.fail([a1.id], "x", retry_at=t + 300)
        assert queue.next_due(KIND) == pytest.approx(t + 300, abs=0.01)
        queue.fail([a1.id], "x", retry_at=None)
        assert queue.next_due(KIND) == pytest.approx(t + 500, abs=0.01)

    def test_next_due_is_when_a_take_could_next_return_a_job(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1), spec("a", 2)])
        t = time.time()
        [a1] = queue.take(KIND, 1, lease_s=LEASE, now=t)
        assert queue.next_due(KIND) is None  # a2 waits, but only for a1, which runs
        queue.fail([a1.id], "x", retry_at=t + 300)
        # a2 is due, but behind a1 in back-off: no take returns a job before t + 300
        assert queue.next_due(KIND) == pytest.approx(t + 300, abs=0.01)
        assert queue.take(KIND, 10, lease_s=LEASE, now=t + 299) == []
        before = time.time()
        queue.put([spec("b", 1)])
        due = queue.next_due(KIND)  # b1, due now
        assert due is not None and before - 1 <= due <= time.time() + 1
        [b1] = queue.take(KIND, 10, lease_s=LEASE, now=time.time())
        assert ns([b1]) == [("b", 1)]
        assert queue.next_due(KIND) == pytest.approx(t + 300, abs=0.01)  # b runs; a still backs off
        queue.fail([a1.id], "x", retry_at=None)  # quarantined: a2 is a's oldest now, and due
        due = queue.next_due(KIND)
        assert due is not None and due <= time.time()

    def test_users_are_isolated(self, queue: JobQueue) -> None:
        queue.put([spec("a", 1, key="k"), spec("b", 1, key="k"), spec("a:b", 1, key="k"), spec("{a}", 1, key="k")])
        assert queue.counts(user_id="a") == {KIND: JobCounts(waiting=1)}
        assert queue.drop("a", keys=["k"]) == 1
        assert queue.drop("a") == 0
        assert queue.counts(user_id="b") == {KIND: JobCounts(waiting=1)}
        assert queue.counts(user_id="a:b") == {KIND: JobCounts(waiting=1)}
        assert queue.counts() == {KIND: JobCounts(waiting=3)}
        assert sorted(u for u, _n in ns(queue.take(KIND, 10, lease_s=LEASE))) == ["a:b", "b", "{a}"]

    # -- bad input ---------------------------------------------------------------------

    @pytest.mark.parametrize("bad", BAD_INPUTS, ids=lambda b: b.why)
    def test_bad_input_raises_and_changes_nothing(self, queue: JobQueue, bad: Bad) -> None:
        queue.put([spec("u1", 1), spec("u2", 1)])
        [running] = queue.take(KIND, 1, lease_s=LEASE)
        before = queue.counts()
        with pytest.raises(InvalidInput):
            bad.call(queue, running.id)
        assert queue.counts() == before
        assert queue.quarantined() == []
        queue.done([running.id])
        [waiting] = queue.take(KIND, 10, lease_s=LEASE)
        assert (waiting.user_id, waiting.attempts) == ("u2", 0)

    # -- persistence ---------------------------------------------------------------------

    def test_jobs_put_through_one_queue_are_taken_through_a_new_one(self, job_backend: JobQueueBackend) -> None:
        if not job_backend.persistent:
            pytest.skip("this backend keeps jobs only in its own instance")
        first = job_backend.make()
        first.put([JobSpec(KIND, "u1", {"n": 1, "text": "茶"}, key="i1"), spec("u2", 2)])
        first.close()
        second = job_backend.make()
        jobs = second.take(KIND, 10, lease_s=LEASE)
        assert [(j.user_id, j.key, j.payload) for j in jobs] == [("u1", "i1", {"n": 1, "text": "茶"}),
                                                                  ("u2", None, {"n": 2})]
        second.close()

    def test_a_lease_of_a_dead_queue_is_taken_again_after_it_ends(self, job_backend: JobQueueBackend) -> None:
        if not job_backend.persistent:
            pytest.skip("this backend keeps jobs only in its own instance")
        dead = job_backend.make()
        dead.put([spec("u1", 1), spec("u1", 2)])
        t = time.time()
        [held] = dead.take(KIND, 1, lease_s=30, now=t)
        dead.close()  # its process died holding the lease
        heir = job_backend.make()
        assert heir.counts() == {KIND: JobCounts(waiting=1, running=1)}
        assert heir.take(KIND, 10, lease_s=30, now=t + 10) == []  # u1's second job waits for the held one
        again = heir.take(KIND, 10, lease_s=30, now=t + 31)
        assert ns(again) == [("u1", 1), ("u1", 2)] and again[0].id == held.id
        heir.close()

    # -- concurrency ---------------------------------------------------------------------

    def test_concurrent_takers_take_every_job_once_and_one_take_per_user_at_a_time(self, queue: JobQueue) -> None:
        report = run_workers([queue], threads=4, users=20, per_user=10)
        assert report.errors == []
        assert len(report.taken) == 200 and set(report.taken.values()) == {1}
        assert report.max_takes_per_user == 1, "two takes held jobs of one user at once"
        assert report.largest_take > 1, "no take returned several jobs: batches went untested"
        assert all(order == list(range(10)) for order in report.order.values())
        assert queue.counts() == {}
