"""No lost writes: many threads / processes appending to ONE session all survive.

Checked for every backend: the final count is exact, no message is lost or
doubled, each writer's messages keep that writer's order, and the version
equals the number of acknowledged appends.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from redis_helpers import REDIS_URL, redis_prefix  # noqa: F401  (fixture)

from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.sessions import SqliteSessionStore
from hmem.protocols import SessionStore
from hmem.types import Message

THREADS, PER_THREAD = 8, 200


def writer_message(writer: int, i: int) -> Message:
    return Message(role="user", content=f"writer {writer} message {i}", id=f"w{writer}-{i}")


def assert_all_there_in_order(messages: tuple[Message, ...], writers: int, per_writer: int) -> None:
    seen = [m.id for m in messages]
    assert len(seen) == writers * per_writer
    assert len(set(seen)) == len(seen), "a message was stored twice"
    for w in range(writers):
        mine = [int(mid.split("-")[1]) for mid in seen if mid.startswith(f"w{w}-")]
        assert mine == list(range(per_writer)), f"writer {w}: lost or reordered messages"


@pytest.fixture(params=["memory", "sqlite", "redis"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    if request.param == "memory":
        yield MemorySessionStore()
    elif request.param == "sqlite":
        db = SqliteDatabase(tmp_path / "s.db")
        yield SqliteSessionStore(db)
        db.close()
    else:
        client, prefix = request.getfixturevalue("redis_prefix")
        yield RedisSessionStore(client, prefix=prefix)


def run_threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def body(n: int) -> None:
        try:
            start.wait()
            target(n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_appending_to_one_session_lose_nothing(shared_store: SessionStore) -> None:
    versions: list[int] = []

    def append_all(writer: int) -> None:
        for i in range(PER_THREAD):
            versions.append(shared_store.append("u1", "hot", [writer_message(writer, i)]))

    run_threads(THREADS, append_all)
    state = shared_store.load("u1", "hot")
    assert_all_there_in_order(state.messages, THREADS, PER_THREAD)
    assert state.version == THREADS * PER_THREAD
    assert sorted(versions) == list(range(1, THREADS * PER_THREAD + 1)), "two appends got the same version"


# -- processes ------------------------------------------------------------------------


def _sqlite_worker(path: str, writer: int, count: int) -> None:
    db = SqliteDatabase(path)
    store = SqliteSessionStore(db)
    for i in range(count):
        store.append("u1", "hot", [writer_message(writer, i)])
    db.close()


def _redis_worker(url: str, prefix: str, writer: int, count: int) -> None:
    store = RedisSessionStore.from_url(url, prefix=prefix)
    for i in range(count):
        store.append("u1", "hot", [writer_message(writer, i)])
    store.close()


def run_processes(target: Callable[..., None], args: list[tuple[object, ...]]) -> None:
    ctx = multiprocessing.get_context("spawn")  # no fork of a threaded pytest process
    procs = [ctx.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * len(procs)


@pytest.mark.slow
def test_processes_appending_to_one_sqlite_file_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    SqliteSessionStore(SqliteDatabase(path))  # create the schema once, up front
    run_processes(_sqlite_worker, [(path, w, 200) for w in range(4)])
    state = SqliteSessionStore(SqliteDatabase(path)).load("u1", "hot")
    assert_all_there_in_order(state.messages, 4, 200)
    assert state.version == 800


@pytest.mark.slow
def test_processes_appending_through_redis_lose_nothing(redis_prefix) -> None:  # noqa: F811
    client, prefix = redis_prefix
    run_processes(_redis_worker, [(REDIS_URL, prefix, w, 250) for w in range(4)])
    state = RedisSessionStore(client, prefix=prefix).load("u1", "hot")
    assert_all_there_in_order(state.messages, 4, 250)
    assert state.version == 1000
