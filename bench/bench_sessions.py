"""Session store latency: append and load, p50/p95, memory vs SQLite vs Redis.

For each backend and session size (default 100 and 10,000 messages) the session is
prefilled, then timed: single-message appends onto it, full loads, and
``load(last_n=20)`` (what a turn usually reads). Redis is the server given by
``--redis-url`` (a throw-away key prefix, deleted afterwards). A last table times
decoding the stored rows alone: validating ``Message.from_json`` vs the trusted
``Message._from_storage`` the stores use (same rows, same run).

    .venv/bin/python bench/bench_sessions.py [--sizes 100 10000] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.redis.client import connect_redis
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.sessions import SqliteSessionStore
from hmem.protocols import SessionStore
from hmem.types import Message


def message(i: int) -> Message:
    role = "user" if i % 2 == 0 else "assistant"
    return Message(role=role, content=f"message {i}: " + "some typical chat text, about twenty words long. " * 2,
                   id=f"m{i}")


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


@contextmanager
def backends(redis_url: str) -> Iterator[dict[str, Callable[[], SessionStore]]]:
    with tempfile.TemporaryDirectory() as tmp:
        db = SqliteDatabase(Path(tmp) / "bench.db")
        client = connect_redis(redis_url)
        prefix = f"hmembench-{secrets.token_hex(4)}"
        try:
            yield {
                "memory": MemorySessionStore,
                "sqlite": lambda: SqliteSessionStore(db),
                "redis": lambda: RedisSessionStore(client, prefix=prefix),
            }
        finally:
            keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
            for i in range(0, len(keys), 500):
                client.delete(*keys[i : i + 500])
            client.close()
            db.close()


def run(sizes: list[int], redis_url: str, appends: int) -> list[tuple[str, int, str, float, float]]:
    rows = []
    with backends(redis_url) as makers:
        for size in sizes:
            loads = max(10, min(200, 200_000 // size))
            for name, make in makers.items():
                store = make()
                session = f"bench-{size}"
                for start in range(0, size, 500):
                    store.append("u1", session, [message(i) for i in range(start, min(size, start + 500))])
                counter = iter(range(size, size + appends))
                # loads first, so they read exactly `size` messages; then the appends grow it a little
                results = {
                    "load all": timed(lambda s=store, ses=session: s.load("u1", ses), loads),
                    "load last 20": timed(lambda s=store, ses=session: s.load("u1", ses, last_n=20), 200),
                    "append 1 msg": timed(lambda s=store, ses=session, c=counter: s.append("u1", ses, [message(next(c))]),
                                          appends),
                }
                for op, samples in results.items():
                    rows.append((op, size, name, pct(samples, 0.5), pct(samples, 0.95)))
    return rows


def decode_rows(sizes: list[int]) -> list[tuple[int, str, float, float]]:
    """Decoding a session's stored JSON rows: the validating path vs the trusted one the
    stores use on load (same rows, same run)."""
    rows = []
    for size in sizes:
        bodies = [message(i).to_json() for i in range(size)]
        repeat = max(10, min(200, 200_000 // size))
        for name, decode in (("from_json", Message.from_json), ("_from_storage", Message._from_storage)):
            samples = timed(lambda d=decode, bs=bodies: [d(b) for b in bs], repeat)
            rows.append((size, name, pct(samples, 0.5), pct(samples, 0.95)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--appends", type=int, default=300)
    args = parser.parse_args()
    rows = run(args.sizes, args.redis_url, args.appends)
    p50 = {(op, size, name): a for op, size, name, a, _ in rows}
    print(f"{'operation':<14}{'msgs':>7}  {'backend':<8}{'p50 ms':>9}{'p95 ms':>9}{'p50 / sqlite':>14}")
    for op, size, name, a, b in rows:
        ratio = a / p50[(op, size, "sqlite")] if p50[(op, size, "sqlite")] else float("nan")
        print(f"{op:<14}{size:>7}  {name:<8}{a:>9.3f}{b:>9.3f}{ratio:>13.2f}x")
    decoded = decode_rows(args.sizes)
    slow = {size: a for size, name, a, _ in decoded if name == "from_json"}
    print(f"\n{'decode rows':<14}{'msgs':>7}  {'path':<14}{'p50 ms':>9}{'p95 ms':>9}{'µs/msg':>8}{'speed-up':>10}")
    for size, name, a, b in decoded:
        print(f"{'':<14}{size:>7}  {name:<14}{a:>9.3f}{b:>9.3f}{a * 1000 / size:>8.2f}{slow[size] / a:>9.2f}x")


if __name__ == "__main__":
    main()
