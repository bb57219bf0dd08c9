"""Group commit (hmem/longterm/_group.py): concurrent writes of one user queued behind its
lock are written as one batch — one vector upsert for many — and each caller still gets
exactly its own results. Unit tests of the queue, then the real store (the real model;
all-memory and SQLite + Chroma embedded + SQLite BM25)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from longterm_fixtures import Stack, make_stack

from hmem.longterm._group import GroupCommit

pytestmark = pytest.mark.slow


def _queue_behind_a_held_lock(n: int, write_all: Callable[[Sequence[int]], Sequence[Any]]) -> dict[int, Any]:
    """``n`` threads run writes while the lock is held, so all queue; then it is let go."""
    group: GroupCommit[int, Any] = GroupCommit()
    lock = threading.Lock()
    got: dict[int, Any] = {}

    def call(i: int) -> None:
        try:
            got[i] = group.run("u1", lock, i, write_all)
        except Exception as exc:  # the test reads what each caller saw
            got[i] = exc

    with lock:
        threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 10
        while len(group._queued.get("u1", [])) < n and time.monotonic() < deadline:  # all queued
            time.sleep(0.005)
    for t in threads:
        t.join(10)
    return got


def test_writes_queued_behind_the_lock_are_written_in_one_batch_each_caller_its_own_result() -> None:
    batches: list[list[int]] = []

    def write_all(writes: Sequence[int]) -> list[int]:
        batches.append(list(writes))
        return [w * 10 for w in writes]

    got = _queue_behind_a_held_lock(8, write_all)
    assert got == {i: i * 10 for i in range(8)}
    assert len(batches) == 1 and sorted(batches[0]) == list(range(8))


def test_a_failed_batch_fails_every_caller_in_it_and_the_next_write_runs_alone() -> None:
    def write_all(writes: Sequence[int]) -> list[int]:
        raise OSError("disk full")

    got = _queue_behind_a_held_lock(5, write_all)
    assert all(isinstance(e, OSError) and str(e) == "disk full" for e in got.values()) and len(got) == 5
    group: GroupCommit[int, int] = GroupCommit()
    assert group.run("u1", threading.Lock(), 3, lambda ws: [w + 1 for w in ws]) == 4  # nothing left queued


def test_a_write_all_that_loses_a_result_is_an_error_not_a_silent_none() -> None:
    got = _queue_behind_a_held_lock(3, lambda writes: list(writes)[:-1])
    assert all(isinstance(e, AssertionError) for e in got.values())


class _CountingVectors:
    """The real vector index, counting upsert calls (everything else passes through)."""

    def __init__(self, real: Any) -> None:
        self.real, self.upserts = real, 0

    def upsert(self, *args: Any, **kw: Any) -> Any:
        self.upserts += 1
        return self.real.upsert(*args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture(params=["memory", "sqlite+chroma"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    return make_stack(str(request.param), tmp_path)


def test_concurrent_ingests_of_one_user_share_upserts_and_each_gets_its_own_turns(stack: Stack) -> None:
    """16 threads archive 3 turns each into one user while a write holds its lock; then a
    17th archives a turn one of them already did (it is skipped), and two remember the
    same fact at once (stored once). Every turn is stored once and found by recall."""
    counting = _CountingVectors(stack.store.vectors)
    stack.store.vectors = counting  # type: ignore[assignment]
    stack.store.embedder.embed([f"thread {n} turn {i}: the {n}th walk by the river" for n in range(16) for i in range(3)])
    results: dict[int, Any] = {}
    lock = stack.store._lock("u1")

    def archive(n: int) -> None:
        msgs = [{"role": "user", "content": f"thread {n} turn {i}: the {n}th walk by the river", "id": f"m{n}-{i}"}
                for i in range(3)]
        results[n] = stack.store.archive_turns("u1", f"s{n % 4}", msgs)

    with lock:  # a write in progress: the others queue behind it
        threads = [threading.Thread(target=archive, args=(n,)) for n in range(16)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(stack.store._group._queued.get("u1", [])) < 16 and time.monotonic() < deadline:
            time.sleep(0.005)
    for t in threads:
        t.join(30)
    assert sorted(results) == list(range(16))
    for n, res in results.items():  # each caller: exactly its own three turns
        assert sorted(it.source_message_id or "" for it in res.stored) == [f"m{n}-{i}" for i in range(3)]
        assert res.skipped == ()
    assert counting.upserts == 1, counting.upserts  # all 16 were queued: one write for them all
    assert stack.counts("u1") == (48, 48, 48)
    again = stack.store.archive_turns("u1", "s1", [{"role": "user", "content": "thread 1 turn 0: the 1th walk by the river",
                                                    "id": "m1-0"}])
    assert again.stored == () and again.skipped == ("m1-0",)
    facts: dict[int, Any] = {}
    threads = [threading.Thread(target=lambda n: facts.__setitem__(n, stack.store.remember("u1", "Maya is vegetarian.")),
                                args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert {r.item.id for r in facts.values()} == {next(r.item.id for r in facts.values())}  # one item
    assert sorted(r.status for r in facts.values()) == ["skipped", "stored"]
    assert stack.counts("u1") == (49, 49, 49)
    hits = stack.store.recall("u1", "the 7th walk by the river, turn 2", k=5)
    assert "thread 7 turn 2" in hits[0].item.text
