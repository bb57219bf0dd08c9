"""Concurrent writers to one profile key: threads (memory, SQLite, Redis: each thread on
its own pooled connection, as separate app instances would be) and processes (SQLite).

After the storm there must be exactly one current value, and the history must hold
every write exactly once as a chain of non-overlapping intervals.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis_helpers import redis_client_prefix

from hmem.backends.memory.profile import MemoryProfileStore
from hmem.backends.redis.profile import RedisProfileStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.profile import SqliteProfileStore
from hmem.errors import CapacityError
from hmem.profile.model import history_problems
from hmem.protocols import ProfileStore

THREADS = 8
WRITES = 25


@pytest.fixture(params=["memory", "sqlite", "redis"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., ProfileStore]]:
    if request.param == "memory":
        yield MemoryProfileStore
        return
    if request.param == "redis":  # the WATCH/MULTI transaction persisting each plan
        with redis_client_prefix() as (client, prefix):
            yield lambda **kw: RedisProfileStore(client, prefix=prefix, **kw)
        return
    db = SqliteDatabase(tmp_path / "profile.db")  # a file: each thread gets its own connection
    yield lambda **kw: SqliteProfileStore(db, **kw)
    db.close()


def _run_threads(target: Callable[[int], None], n: int = THREADS) -> None:
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # surfaced below, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors


def _assert_consistent(store: ProfileStore, expected_values: set[str], *, deletions: int = 0) -> None:
    history = store.history("u1", "location")
    counts = Counter(e.value for e in history if e.value is not None)
    assert set(counts) == expected_values, "a write is missing or unexpected"
    assert all(c == 1 for c in counts.values()), "a write appears twice"
    assert sum(1 for e in history if e.value is None) == deletions
    assert history_problems(history) == []
    current = store.get("u1", "location")
    newest = history[-1]
    assert (current.value if current else None) == newest.value
    assert len([e for e in store.all("u1") if e.key == "location"]) == (0 if newest.value is None else 1)


def test_threads_setting_one_key_leave_one_value_and_a_complete_history(
    make_store: Callable[..., ProfileStore],
) -> None:
    store = make_store()
    barrier = threading.Barrier(THREADS)

    def writer(i: int) -> None:
        barrier.wait()
        for j in range(WRITES):
            store.set("u1", "Location", f"city-{i}-{j}")

    _run_threads(writer)
    _assert_consistent(store, {f"city-{i}-{j}" for i in range(THREADS) for j in range(WRITES)})


def test_threads_mixing_set_and_delete_keep_the_chain(make_store: Callable[..., ProfileStore]) -> None:
    store = make_store()
    barrier = threading.Barrier(THREADS)
    deleted = Counter[bool]()
    lock = threading.Lock()

    def writer(i: int) -> None:
        barrier.wait()
        for j in range(WRITES):
            store.set("u1", "location", f"city-{i}-{j}")
            ok = store.delete("u1", "location")
            with lock:
                deleted[ok] += 1

    _run_threads(writer)
    _assert_consistent(store, {f"city-{i}-{j}" for i in range(THREADS) for j in range(WRITES)}, deletions=deleted[True])
    assert deleted[True] >= 1


def test_the_key_cap_holds_under_concurrent_new_keys(make_store: Callable[..., ProfileStore]) -> None:
    store = make_store(max_keys=5)
    barrier = threading.Barrier(THREADS)
    refused = Counter[int]()
    lock = threading.Lock()

    def writer(i: int) -> None:
        barrier.wait()
        try:
            store.set("u1", f"key_{i}", "v")
        except CapacityError:
            with lock:
                refused[i] += 1

    _run_threads(writer)
    assert len(store.all("u1")) == 5 and sum(refused.values()) == THREADS - 5


_CHILD = textwrap.dedent(
    """
    import sys
    from hmem.backends.sqlite.db import SqliteDatabase
    from hmem.backends.sqlite.profile import SqliteProfileStore
    path, worker, writes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    store = SqliteProfileStore(SqliteDatabase(path))
    sys.stdin.readline()  # start together
    for j in range(writes):
        store.set("u1", "location", f"proc-{worker}-{j}")
    """
)


def test_processes_setting_one_key_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SqliteProfileStore(SqliteDatabase(path))  # create the schema once, up front
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path), str(w), str(WRITES)],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    db = SqliteDatabase(path)
    _assert_consistent(SqliteProfileStore(db), {f"proc-{w}-{j}" for w in range(4) for j in range(WRITES)})
    db.close()
