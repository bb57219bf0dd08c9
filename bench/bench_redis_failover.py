"""What ``HMEM_REDIS_WAIT_REPLICAS`` costs, and what one item costs in Redis and Chroma.

1. On a real six-node Redis Cluster on loopback (tests/cluster_helpers.py, three
   masters + three replicas): latency of a session append, an item put and a whole
   ``Memory.add`` (hash embedder, vectors in memory: the Redis writes are what is
   measured) with ``WAIT`` off and with ``WAIT 1`` after every write.
2. Redis memory and disk per long-term item: a throwaway ``redis-server`` gets
   ``--items`` archived turns (realistic text, spread over 100 users) through
   ``RedisItemStore``; ``used_memory`` before/after and the RDB size after ``SAVE``.
3. Chroma disk per vector: ``--chroma-items`` random 384-d vectors (MiniLM's size) into an
   embedded ``PersistentClient``, one collection per user as hmem does.

    .venv/bin/python bench/bench_redis_failover.py [--appends 400] [--items 20000] [--chroma-items 20000]

The failover counts themselves (acknowledged / present / lost / duplicated, with and
without WAIT) come from tests/integration/test_redis_failover.py (run with ``-s``).
"""

from __future__ import annotations

import argparse
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from cluster_helpers import ClusterInfo, HashEmbedder, delete_prefix, free_ports, running_cluster

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.redis.client import RedisClient, ReplicaWait, connect_redis
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.config import Settings
from hmem.memory import Memory
from hmem.types import MemoryItem, Message

WORDS = ["lisbon", "flight", "sister", "berlin", "ramen", "coffee", "meeting", "project", "deadline", "doctor",
         "gym", "swim", "piano", "garden", "birthday", "concert", "train", "hotel", "budget", "invoice", "dentist",
         "recipe", "movie", "novel", "hiking"]


def turn_text(rng: random.Random) -> str:
    """~150 characters, the length of a typical chat turn in the sample conversations."""
    return " ".join(rng.choices(WORDS, k=22)).capitalize() + "."


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def timed(n: int, fn: Callable[[int], object]) -> tuple[float, float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - started)
    return percentiles(samples)


def _wait_rows(cluster: ClusterInfo, client: RedisClient, replicas: int, appends: int) -> list[tuple[str, float, float]]:
    wait = ReplicaWait(replicas, 1000)
    prefix = f"bench-{secrets.token_hex(4)}"
    sessions = RedisSessionStore(client, prefix=prefix, wait=wait)
    items = RedisItemStore(client, prefix=prefix, wait=wait)
    rng = random.Random(1)
    users = [f"user{u}" for u in range(20)]
    rows = [
        (f"session append, WAIT {replicas}", *timed(appends, lambda i: sessions.append(
            users[i % 20], "s1", [Message(role="user", content=turn_text(rng))]))),
        (f"item put (1 turn), WAIT {replicas}", *timed(appends, lambda i: items.put([MemoryItem(
            id=f"t{i}", user_id=users[i % 20], text=turn_text(rng), kind="turn", source_message_id=f"m{i}")]))),
    ]
    data_dir = tempfile.mkdtemp(prefix="hmem-bench-")
    env = {"HMEM_REDIS_URL": cluster.url, "HMEM_REDIS_PREFIX": prefix, "HMEM_VECTORS": "memory",
           "HMEM_DATA_DIR": data_dir, "HMEM_REDIS_WAIT_REPLICAS": str(replicas)}
    with Memory.from_settings(Settings.from_env(env), embedder=HashEmbedder()) as mem:
        rows.append((f"Memory.add (1 turn), WAIT {replicas}", *timed(appends // 2, lambda i: mem.add(
            users[i % 20], "s2", [{"role": "user", "content": turn_text(rng)}]))))
    shutil.rmtree(data_dir, ignore_errors=True)
    delete_prefix(client, prefix)  # type: ignore[arg-type]
    return rows


def wait_cost(appends: int) -> None:
    with running_cluster() as cluster:
        client = connect_redis(cluster.url)
        rows = [row for replicas in (0, 1) for row in _wait_rows(cluster, client, replicas, appends)]
        client.close()
    print(f"\nRedis Cluster on loopback (3 masters + 3 replicas), {appends} appends per row "
          f"({appends // 2} for Memory.add); ms")
    print("| write                                 |   p50 |   p95 |")
    print("|---------------------------------------|-------|-------|")
    for name, p50, p95 in rows:
        print(f"| {name:<37} | {p50:5.2f} | {p95:5.2f} |")


@contextmanager
def throwaway_redis() -> Iterator[tuple[int, Path]]:
    workdir = Path(tempfile.mkdtemp(prefix="hmem-bench-redis-"))
    [port] = free_ports(1)
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True,
                              check=False).stdout.strip() == "PONG":
                break
            time.sleep(0.05)
        yield port, workdir
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def redis_per_item(n: int) -> None:
    rng = random.Random(2)
    with throwaway_redis() as (port, workdir):
        client = connect_redis(f"redis://127.0.0.1:{port}/0")
        store = RedisItemStore(client)
        before = int(client.info("memory")["used_memory"])
        started = time.perf_counter()
        for start in range(0, n, 1000):
            user = f"user{(start // 1000) % 100}"
            store.put([MemoryItem(id=f"i{i}", user_id=user, text=turn_text(rng), kind="turn", session_id="s1",
                                  source_message_id=f"m{i}", speaker="user") for i in range(start, min(n, start + 1000))])
        ingest_s = time.perf_counter() - started
        after = int(client.info("memory")["used_memory"])
        client.save()
        rdb = (workdir / "dump.rdb").stat().st_size
        client.close()
    print(f"\nRedis (single node, 7.0) with {n:,} archived turns of ~150 chars over 100 users:")
    print(f"  used_memory +{(after - before) / 2**20:.1f} MiB = {(after - before) / n:.0f} B per item "
          f"(items + dedup/source indexes + change log); RDB {rdb / 2**20:.1f} MiB = {rdb / n:.0f} B per item; "
          f"put in batches of 1,000: {n / ingest_s:,.0f} items/s")


def chroma_per_item(n: int) -> None:
    path = Path(tempfile.mkdtemp(prefix="hmem-bench-chroma-"))
    rng = random.Random(3)
    try:
        index = ChromaVectorIndex(chroma_persistent_client(path))
        users = 20
        started = time.perf_counter()
        for u in range(users):
            per_user = n // users
            for start in range(0, per_user, 1000):
                ids = [f"v{i}" for i in range(start, min(per_user, start + 1000))]
                index.upsert(f"user{u}", ids, [[rng.gauss(0, 1) for _ in range(384)] for _ in ids])
        ingest_s = time.perf_counter() - started
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    finally:
        shutil.rmtree(path, ignore_errors=True)
    print(f"\nChroma embedded (PersistentClient), {n:,} vectors of 384 floats, {users} users (one collection each):")
    print(f"  disk {size / 2**20:.1f} MiB = {size / n:.0f} B per vector; upsert in batches of 1,000: "
          f"{n / ingest_s:,.0f} vectors/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=400)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--chroma-items", type=int, default=20000)
    args = parser.parse_args()
    wait_cost(args.appends)
    if args.items:
        redis_per_item(args.items)
    if args.chroma_items:
        chroma_per_item(args.chroma_items)


if __name__ == "__main__":
    main()
