"""The background engine (hmem.jobs) on the reference queue: order, retries, quarantine,
outages, flush and close. The durable queues' own behaviour is the JobQueue contract
(tests/contract/test_job_queue.py); a crash replay is tests/integration/test_job_replay.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from hmem.backends.memory.jobs import MemoryJobQueue
from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.jobs import JobEngine, JobKind, RetryPolicy
from hmem.types import Job, JobSpec

FAST = RetryPolicy(attempts=3, first_s=0.01, max_s=0.05)


def _engine(**kw: object) -> JobEngine:
    return JobEngine(MemoryJobQueue(), policy=FAST, **kw)  # type: ignore[arg-type]


def test_one_users_jobs_run_in_order_while_other_users_run_beside_them() -> None:
    engine = _engine()
    ran: list[tuple[str, int]] = []
    active: dict[str, int] = {}
    overlap: list[str] = []
    lock = threading.Lock()

    def run(jobs: Sequence[Job]) -> None:
        for job in jobs:
            with lock:
                active[job.user_id] = active.get(job.user_id, 0) + 1
                if active[job.user_id] > 1:
                    overlap.append(job.user_id)
            time.sleep(0.001)
            with lock:
                ran.append((job.user_id, job.payload["n"]))
                active[job.user_id] -= 1

    engine.register(JobKind("work", run, lanes=4))
    engine.submit([JobSpec("work", f"u{n % 5}", {"n": n}) for n in range(100)])
    assert engine.flush(10.0)
    assert sorted(ran) == sorted((f"u{n % 5}", n) for n in range(100))  # each exactly once
    for user in {u for u, _ in ran}:
        mine = [n for u, n in ran if u == user]
        assert mine == sorted(mine), user
    assert not overlap
    engine.close()


def test_a_poison_job_is_quarantined_and_the_rest_of_its_batch_still_runs() -> None:
    engine = _engine()
    done: list[int] = []

    def run(jobs: Sequence[Job]) -> None:
        if any(job.payload["n"] == 3 for job in jobs):
            raise ValueError("refused: bad metadata")
        done.extend(job.payload["n"] for job in jobs)

    engine.register(JobKind("keys", run, batch=10))
    engine.submit([JobSpec("keys", f"u{n}", {"n": n}, key=f"i{n}") for n in range(6)])
    assert engine.flush(5.0)  # quarantined jobs do not hold flush up
    assert sorted(done) == [0, 1, 2, 4, 5]
    report = engine.report()
    assert report["kinds"]["keys"]["quarantined"] == 1
    [stuck] = report["quarantined"]
    assert (stuck["user_id"], stuck["key"], stuck["attempts"]) == ("u3", "i3", FAST.attempts)
    assert "bad metadata" in stuck["error"]
    engine.close()


def test_requeued_job_runs_after_the_fix() -> None:
    engine = _engine()
    broken = {"on": True}
    done: list[str] = []

    def run(jobs: Sequence[Job]) -> None:
        if broken["on"]:
            raise ValueError("no")
        done.extend(j.user_id for j in jobs)

    engine.register(JobKind("k", run))
    engine.submit([JobSpec("k", "u1")])
    assert engine.flush(5.0) and done == []
    [stuck] = engine.report()["quarantined"]
    broken["on"] = False
    engine.requeue([stuck["id"]])
    assert engine.flush(5.0)
    assert done == ["u1"] and engine.report()["quarantined"] == []
    engine.close()


def test_an_outage_is_retried_until_the_backend_answers_never_quarantined() -> None:
    engine = _engine()
    failures = {"left": 8}  # more than FAST.attempts
    done: list[int] = []

    def run(jobs: Sequence[Job]) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise BackendUnavailable("Chroma at 127.0.0.1:1 is unreachable")
        done.extend(j.payload["n"] for j in jobs)

    engine.register(JobKind("move", run, batch=4))
    engine.submit([JobSpec("move", "u1", {"n": n}) for n in range(3)])
    assert engine.flush(10.0)
    assert done == [0, 1, 2]
    assert engine.report()["quarantined"] == []
    engine.close()


def test_flush_gives_up_after_its_timeout_and_keeps_the_jobs() -> None:
    engine = JobEngine(MemoryJobQueue(), policy=RetryPolicy(attempts=100, first_s=0.05, max_s=0.05))
    engine.register(JobKind("k", lambda jobs: (_ for _ in ()).throw(ValueError("always"))))
    engine.submit([JobSpec("k", "u1")])
    started = time.monotonic()
    assert engine.flush(0.3) is False
    assert time.monotonic() - started < 3.0
    assert engine.report()["kinds"]["k"]["waiting"] + engine.report()["kinds"]["k"]["running"] == 1
    assert "always" in (engine.report()["kinds"]["k"]["error"] or "")
    engine.close(timeout=0.2)  # failing: close does not wait for the job; it stays queued
    assert engine.queue.counts()["k"].waiting == 1


def test_idle_kinds_wait_for_a_pause_unless_flushed_or_urgent() -> None:
    engine = _engine()
    ran: list[int] = []
    engine.register(JobKind("idle", lambda jobs: ran.extend(j.payload["n"] for j in jobs), idle_s=30.0, batch=100,
                            urgent_at=5))
    engine.submit([JobSpec("idle", "u1", {"n": n}) for n in range(3)])
    time.sleep(0.2)
    assert ran == []  # no pause yet, and not urgent
    assert engine.flush(5.0) and ran == [0, 1, 2]  # a flush does not wait for the pause
    engine.submit([JobSpec("idle", "u1", {"n": n}) for n in range(3, 9)])  # 6 >= urgent_at
    deadline = time.monotonic() + 5.0
    while len(ran) < 9 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ran == list(range(9))
    engine.close()


def test_a_coalescing_kind_keeps_one_waiting_job_per_key() -> None:
    engine = _engine()
    gate = threading.Event()
    ran: list[str] = []

    def run(jobs: Sequence[Job]) -> None:
        gate.wait(5.0)
        ran.extend(j.payload["session"] for j in jobs)

    engine.register(JobKind("compact", run, coalesce=True))
    stored = [engine.submit([JobSpec("compact", "u1", {"session": "s1"}, key="s1")]) for _ in range(5)]
    # The first may already run (then the second waits); never more than two are stored.
    assert sum(stored) <= 2
    gate.set()
    assert engine.flush(5.0)
    assert 1 <= len(ran) <= 2 and set(ran) == {"s1"}
    engine.close()


def test_drop_waits_for_the_users_run_in_flight() -> None:
    engine = _engine()
    started, release = threading.Event(), threading.Event()
    finished: list[float] = []

    def run(jobs: Sequence[Job]) -> None:
        started.set()
        release.wait(5.0)
        finished.append(time.monotonic())

    engine.register(JobKind("k", run))
    engine.submit([JobSpec("k", "u1", key="a"), JobSpec("k", "u1", key="b")])
    assert started.wait(5.0)
    threading.Timer(0.2, release.set).start()
    engine.drop("u1", kind="k")
    dropped_at = time.monotonic()
    assert finished and finished[0] <= dropped_at  # the run in flight ended first
    assert engine.flush(5.0) and len(finished) == 1  # the second job was dropped, never ran
    engine.close()


def test_bad_input_is_refused_and_changes_nothing() -> None:
    # Tried: a kind nobody registered, a second registration of a kind, a submit after
    # close, a non-JSON payload, bad policies and kinds.
    engine = _engine()
    engine.register(JobKind("k", lambda jobs: None))
    with pytest.raises(InvalidInput):
        engine.submit([JobSpec("nobody", "u1")])
    with pytest.raises(InvalidInput):
        engine.submit([JobSpec("k", "u1", {"x": object()})])
    assert engine.queue.counts() == {}
    with pytest.raises(ConfigError):
        engine.register(JobKind("k", lambda jobs: None))
    for bad in ({"attempts": 0}, {"first_s": 0.0}, {"first_s": 2.0, "max_s": 1.0}):
        with pytest.raises(ConfigError):
            RetryPolicy(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        JobKind("k", lambda jobs: None, batch=0)
    engine.close()
    with pytest.raises(InvalidInput):
        engine.submit([JobSpec("k", "u1")])
    assert engine.queue.counts() == {}


def test_close_gives_up_once_every_kind_left_fails_and_keeps_the_jobs() -> None:
    # The backend is down before any run was tried (the kind waits for a pause that never
    # comes): close tries once, sees the refusal, and does not sit out its timeout.
    engine = JobEngine(MemoryJobQueue(), policy=RetryPolicy(attempts=3, first_s=0.05, max_s=0.1))

    def down(jobs: Sequence[Job]) -> None:
        raise BackendUnavailable("Chroma at 127.0.0.1:1 is unreachable")

    engine.register(JobKind("vectors", down, idle_s=3600.0))
    engine.submit([JobSpec("vectors", "u1")])
    started = time.monotonic()
    engine.close(timeout=30.0)
    assert time.monotonic() - started < 10.0
    assert engine.queue.counts()["vectors"].waiting == 1  # kept for the next process
    assert engine.report()["quarantined"] == []  # an outage is no fault of the job
