"""Redis going away under a running store: fail fast and clearly, never half-write,
recover without rebuilding the store. Each test starts its own ``redis-server`` on a
free loopback port (never the shared one on 6379)."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis_server import RedisServer

from hmem.backends.redis.client import connect_redis
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.errors import BackendUnavailable, DuplicateId
from hmem.types import Message

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    srv = RedisServer(tmp_path)
    srv.start()
    yield srv
    srv.stop()


def batch(tag: str, n: int) -> list[Message]:
    return [Message(role="user", content=f"{tag} part {i}", id=f"{tag}-{i}") for i in range(n)]


def test_killed_server_fails_fast_and_the_same_store_recovers(server: RedisServer) -> None:
    store = RedisSessionStore(connect_redis(server.url, socket_timeout=5.0, socket_connect_timeout=2.0))
    for i in range(20):
        store.append("u1", "s1", batch(f"b{i}", 2))
    server.kill()
    for call in (lambda: store.append("u1", "s1", batch("late", 2)), lambda: store.load("u1", "s1"),
                 lambda: store.list_sessions("u1")):
        start = time.perf_counter()
        with pytest.raises(BackendUnavailable) as info:
            call()
        elapsed = time.perf_counter() - start
        assert elapsed < 1.0, f"took {elapsed:.2f}s; the timeouts are 2 s / 5 s and a refused connection is instant"
        assert f"127.0.0.1:{server.port}" in str(info.value)
    server.start()  # same port, empty (no persistence)
    assert store.load("u1", "s1").version == 0
    assert store.append("u1", "s1", batch("after", 3)) == 1  # scripts reloaded, pool reconnected
    assert [m.id for m in store.load("u1", "s1").messages] == ["after-0", "after-1", "after-2"]


def test_hung_server_times_out_within_the_operation_timeout(server: RedisServer) -> None:
    store = RedisSessionStore(connect_redis(server.url, socket_timeout=0.5, socket_connect_timeout=0.5))
    store.append("u1", "s1", batch("before", 1))
    server.signal(signal.SIGSTOP)
    try:
        start = time.perf_counter()
        with pytest.raises(BackendUnavailable):
            store.append("u1", "s1", batch("maybe", 2))
        elapsed = time.perf_counter() - start
        assert elapsed < 1.5, f"took {elapsed:.2f}s with a 0.5 s operation timeout"
    finally:
        server.signal(signal.SIGCONT)
    # The outcome of the timed-out append is unknown (the server may run it after
    # resuming). Retrying it is safe: it lands once, or DuplicateId says it already did.
    with contextlib.suppress(DuplicateId):
        store.append("u1", "s1", batch("maybe", 2))
    ids = [m.id for m in store.load("u1", "s1").messages]
    assert ids == ["before-0", "maybe-0", "maybe-1"]


def test_a_resent_append_is_applied_once(server: RedisServer) -> None:
    """redis-py resends a script after a connection error with the same arguments;
    the token makes that resend a no-op instead of a DuplicateId or a double write."""
    client = connect_redis(server.url)
    store = RedisSessionStore(client)
    keys = store._session_keys("u1", "s1")
    args = ["s1", 0, "token-1", "m1", Message(role="user", content="x", id="m1").to_json()]
    first = store._append(keys=keys, args=args)
    resent = store._append(keys=keys, args=args)
    assert [int(first[1]), int(resent[1])] == [1, 1]
    assert [m.id for m in store.load("u1", "s1").messages] == ["m1"]
    other = store._append(keys=keys, args=["s1", 0, "token-2", *args[3:]])  # a genuine duplicate
    assert other[0] == b"DUP"


def test_crash_mid_run_leaves_no_partial_batch(tmp_path: Path) -> None:
    """With AOF fsync=always, kill -9 during concurrent appends of 5-message batches:
    after restart every batch is there whole or not at all, and every acknowledged
    batch is there."""
    srv = RedisServer(tmp_path, aof=True)
    srv.start()
    try:
        store = RedisSessionStore(connect_redis(srv.url, socket_timeout=2.0))
        acked: list[str] = []
        stop = threading.Event()

        def writer(w: int) -> None:
            i = 0
            while not stop.is_set():
                tag = f"w{w}b{i}"
                try:
                    store.append("u1", "s1", batch(tag, 5))
                except BackendUnavailable:
                    return
                acked.append(tag)
                i += 1

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        srv.kill()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        assert len(acked) > 10
        srv.start()  # reloads the AOF
        state = store.load("u1", "s1")
        ids = [m.id for m in state.messages]
        assert len(ids) == 5 * state.version
        tags = [mid.rsplit("-", 1)[0] for mid in ids]
        for start in range(0, len(ids), 5):  # batches are contiguous and complete
            assert tags[start : start + 5] == [tags[start]] * 5
            assert [mid.rsplit("-", 1)[1] for mid in ids[start : start + 5]] == ["0", "1", "2", "3", "4"]
        assert set(acked) <= set(tags), "an acknowledged append was lost"
    finally:
        srv.stop()
