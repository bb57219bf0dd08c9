"""Several app instances (processes) on one Redis: compaction (load → replace with
compare-and-set) racing with appends loses nothing."""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import replace

import pytest
from redis_helpers import REDIS_URL, redis_prefix  # noqa: F401  (fixture)

from hmem.backends.redis.sessions import RedisSessionStore
from hmem.errors import ConflictError
from hmem.types import Message

pytestmark = [pytest.mark.integration, pytest.mark.slow]

APPENDS = 250
COMPACTIONS = 25


def _appender(url: str, prefix: str, writer: int) -> None:
    store = RedisSessionStore.from_url(url, prefix=prefix)
    for i in range(APPENDS):
        store.append("u1", "hot", [Message(role="user", content=f"w{writer} #{i}", id=f"w{writer}-{i}")])
    store.close()


def _compactor(url: str, prefix: str, worker: int, results: multiprocessing.Queue[tuple[int, int, int]]) -> None:
    """Rewrites every message's metadata (keeping all messages), CAS-retrying on conflicts."""
    store = RedisSessionStore.from_url(url, prefix=prefix)
    done = conflicts = 0
    while done < COMPACTIONS:
        state = store.load("u1", "hot")
        if not state.messages:  # spawned before the appenders: a rewrite of nothing proves nothing
            time.sleep(0.005)
            continue
        rewritten = [replace(m, metadata={**m.metadata, f"c{worker}": done}) for m in state.messages]
        try:
            store.replace("u1", "hot", rewritten, state.version)
            done += 1
        except ConflictError:
            conflicts += 1
    results.put((worker, done, conflicts))
    store.close()


def test_compaction_racing_appends_across_processes_loses_nothing(redis_prefix) -> None:  # noqa: F811
    client, prefix = redis_prefix
    ctx = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[tuple[int, int, int]] = ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(REDIS_URL, prefix, w)) for w in range(2)]
    procs += [ctx.Process(target=_compactor, args=(REDIS_URL, prefix, c, results)) for c in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    outcomes = sorted(results.get(timeout=5) for _ in range(2))
    print("compactor outcomes (worker, done, conflicts):", outcomes)
    assert [o[1] for o in outcomes] == [COMPACTIONS, COMPACTIONS]

    state = RedisSessionStore(client, prefix=prefix).load("u1", "hot")
    ids = [m.id for m in state.messages]
    assert len(ids) == 2 * APPENDS and len(set(ids)) == len(ids)
    for w in range(2):
        assert [int(i.split("-")[1]) for i in ids if i.startswith(f"w{w}-")] == list(range(APPENDS))
    # every write was counted once: 500 appends + 50 successful replaces
    assert state.version == 2 * APPENDS + 2 * COMPACTIONS
    # the compactions really rewrote stored messages (and those rewrites survived later appends)
    assert any("c0" in m.metadata for m in state.messages) and any("c1" in m.metadata for m in state.messages)
