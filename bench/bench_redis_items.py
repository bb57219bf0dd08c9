"""Long-term items in Redis vs SQLite, and the shared BM25 cache, at one user's N items.

Times (median and p95 in ms) the ItemStore calls LongTermStore makes — ``find_ids``
with a kinds filter (Redis: from the dedup index), with a metadata filter (O(n) in
Python over all items in Redis), with 10 source message ids (indexed), unfiltered, ``find_duplicate``, ``get`` of 50 ids —
on SqliteItemStore (file) and RedisItemStore, then SharedLexicalIndex: a query on a
current cache (one ``generation`` round trip + BM25) vs MemoryLexicalIndex, a
catch-up after another instance wrote one item, and a full rebuild of the user.

    .venv/bin/python bench/bench_redis_items.py [--items 10000] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import random
import secrets
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.redis.client import connect_redis
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.lexical import SharedLexicalIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.items import SqliteItemStore
from hmem.longterm.index_text import lexical_text
from hmem.protocols import ItemFilter, ItemStore
from hmem.types import MemoryItem

WORDS = [
    "lisbon", "flight", "sister", "berlin", "ramen", "coffee", "meeting", "project", "deadline", "doctor", "gym",
    "swim", "piano", "garden", "birthday", "concert", "train", "hotel", "budget", "invoice", "dentist", "recipe",
    "movie", "novel", "hiking",
]
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def make_items(n: int) -> list[MemoryItem]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        turn = i % 3 != 0
        out.append(MemoryItem(
            id=f"i{i}", user_id="bench", text=" ".join(rng.choices(WORDS, k=14)) + f" #{i}",
            kind="turn" if turn else "fact", session_id=f"s{i // 50}", source_message_id=f"m{i}" if turn else None,
            speaker="user" if turn else None, created_at=T0 + timedelta(minutes=i), metadata={"n": i % 7},
        ))
    return out


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return samples[len(samples) // 2] * 1000, samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))] * 1000


def row(name: str, sqlite: tuple[float, float] | None, redis_: tuple[float, float]) -> None:
    left = f"{sqlite[0]:9.2f} {sqlite[1]:9.2f}" if sqlite else f"{'-':>9} {'-':>9}"
    ratio = f"{redis_[0] / sqlite[0]:7.1f}x" if sqlite else f"{'':>8}"
    print(f"| {name:<44} | {left} | {redis_[0]:9.2f} {redis_[1]:9.2f} | {ratio} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    items = make_items(args.items)
    client = connect_redis(args.redis_url)
    prefix = f"hmembench-{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory() as tmp:
        db = SqliteDatabase(Path(tmp) / "bench.db")
        stores: dict[str, ItemStore] = {"sqlite": SqliteItemStore(db), "redis": RedisItemStore(client, prefix=prefix)}
        put = {}
        for name, store in stores.items():
            t = time.perf_counter()
            for start in range(0, len(items), 100):
                store.put(items[start : start + 100])
            put[name] = (time.perf_counter() - t) * 1000 / (len(items) / 100)
        sources = frozenset(f"m{i}" for i in range(1, 30, 3))
        cases: list[tuple[str, Callable[[ItemStore], object]]] = [
            ("find_ids(kinds={turn})  [redis: kind index]", lambda s: s.find_ids("bench", ItemFilter(
                kinds=frozenset({"turn"})))),
            ("find_ids(metadata={n: 3})  [O(n) both]", lambda s: s.find_ids("bench", ItemFilter(metadata={"n": 3}))),
            ("find_ids(kinds, 10 source ids)  [indexed]", lambda s: s.find_ids("bench", ItemFilter(
                kinds=frozenset({"turn"}), source_message_ids=sources))),
            ("find_ids() unfiltered", lambda s: s.find_ids("bench")),
            ("find_duplicate (miss)", lambda s: s.find_duplicate("bench", "fact", "not stored anywhere")),
            ("get(50 ids)", lambda s: s.get("bench", [f"i{i}" for i in range(0, 5000, 100)])),
        ]
        print(f"{args.items:,} items of one user; ms, median and p95 over {args.repeat} runs\n")
        print(f"| {'operation':<44} | {'sqlite p50':>9} {'p95':>9} | {'redis p50':>9} {'p95':>9} | {'ratio':>8} |")
        print(f"|{'-' * 46}|{'-' * 21}|{'-' * 21}|{'-' * 10}|")
        print(f"| {'put (batch of 100)':<44} | {put['sqlite']:9.2f} {'':>9} | {put['redis']:9.2f} {'':>9} | "
              f"{put['redis'] / put['sqlite']:7.1f}x |")
        for name, case in cases:
            row(name, timed(lambda c=case: c(stores["sqlite"]), args.repeat),
                timed(lambda c=case: c(stores["redis"]), args.repeat))
        redis_store = stores["redis"]
        assert isinstance(redis_store, RedisItemStore)
        shared = SharedLexicalIndex(redis_store)
        reference = MemoryLexicalIndex()
        reference.add_many("bench", [(it.id, lexical_text(it)) for it in items])
        shared.search("bench", "warm up", k=10)
        query = "flight to lisbon with my sister"
        print()
        print(f"| {'BM25 query / upkeep':<44} | {'memory p50':>9} {'p95':>9} | {'shared p50':>9} {'p95':>9} | "
              f"{'ratio':>8} |")
        print(f"|{'-' * 46}|{'-' * 21}|{'-' * 21}|{'-' * 10}|")
        row("search k=50, cache current", timed(lambda: reference.search("bench", query, k=50), args.repeat),
            timed(lambda: shared.search("bench", query, k=50), args.repeat))
        row("generation() check alone", None, timed(lambda: redis_store.generation("bench"), args.repeat))
        counter = iter(range(10**9))

        def catch_up() -> None:
            n = next(counter)
            redis_store.put([MemoryItem(id=f"new{n}", user_id="bench", text=f"new note {n} about lisbon")])
            shared.search("bench", query, k=50)

        row("another instance put 1 item, then search", None, timed(catch_up, args.repeat))

        def rebuild() -> None:
            shared.delete_user("bench")
            shared.search("bench", query, k=50)

        row("full rebuild of the user, then search", None, timed(rebuild, max(3, args.repeat // 5)))
        db.close()
    for key in client.scan_iter(match=f"{prefix}:*"):
        client.delete(key)
    client.close()


if __name__ == "__main__":
    main()
