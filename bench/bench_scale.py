"""Many users on the production stack: Redis + a ``chroma run`` server (issue #17 §3).

    .venv/bin/python bench/bench_scale.py --users 100 --items 1000      # 100k items
    .venv/bin/python bench/bench_scale.py --users 1000 --items 1000     # the 1M-item run

Stack: a throwaway ``redis-server`` (one node, no persistence until the final ``SAVE``)
for sessions, summaries, profile and items; a throwaway ``chroma run`` server for the
vectors (one collection per user); one ``Memory`` in this process on both, with the
packaged MiniLM for queries. Filler items are archived turns written through
``LongTermStore.archive_turns`` in batches of up to 2,000 with seeded pseudo-random
vectors (bench_memory.py's ``BenchEmbedder``/``fill``: embedding 1M texts is not
affordable here; index cost does not depend on where vectors came from).

Reports: ingest time and items/s; ``recall(k=10)`` p50/p95 per user (``--queries`` new
questions for each of ``--sample`` users, the per-user medians/p95 summarised); ``context()``
p95; peak RSS of this app process; Redis ``used_memory`` and RDB size, and the Chroma
server's folder, each per 1M items (scaled linearly from the run).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bench_memory import BenchEmbedder, fill, pct, question, rss_mb, sentence
from bench_redis_failover import throwaway_redis
from chroma_helpers import start_chroma, stop_chroma

from hmem.backends.redis.client import connect_redis
from hmem.build import build_parts
from hmem.config import Settings
from hmem.memory import Memory
from hmem.types import Message


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--items", type=int, default=1000, help="items per user")
    parser.add_argument("--sample", type=int, default=20, help="users whose recall latency is measured")
    parser.add_argument("--queries", type=int, default=10, help="recall and context() queries per sampled user")
    args = parser.parse_args()
    emb = BenchEmbedder()
    emb.real.embed(["warm up the model"])
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"{args.users:,} users x {args.items:,} items = {args.users * args.items:,} items")
    chroma_dir = Path(tempfile.mkdtemp(prefix="hmem-bench-chroma-"))
    data_dir = Path(tempfile.mkdtemp(prefix="hmem-bench-data-"))
    chroma = start_chroma(chroma_dir)
    try:
        with throwaway_redis() as (port, redis_dir):
            url = f"redis://127.0.0.1:{port}/0"
            probe = connect_redis(url, socket_timeout=600.0)  # SAVE of ~1 GiB takes longer than the default 5 s
            before = int(probe.info("memory")["used_memory"])
            settings = Settings.from_env({"HMEM_REDIS_URL": url, "HMEM_VECTORS": f"chroma://127.0.0.1:{chroma.port}",
                                          "HMEM_DATA_DIR": str(data_dir)})
            parts = build_parts(settings, embedder=emb)
            mem, lt = Memory(parts), parts.longterm
            rng = random.Random(5)
            users = [f"user{u:05d}" for u in range(args.users)]
            emb.fake = True
            started = time.perf_counter()
            for n, user in enumerate(users, 1):
                fill(lt, user, args.items, rng, 0)
                if n % max(1, args.users // 10) == 0:
                    print(f"  ingested {n:,} users, {time.perf_counter() - started:.0f} s", flush=True)
            ingest_s = time.perf_counter() - started
            emb.fake = False
            used = int(probe.info("memory")["used_memory"]) - before
            recall_p50: list[float] = []
            recall_p95: list[float] = []
            context_ms: list[float] = []
            for user in rng.sample(users, min(args.sample, len(users))):
                mem.add(user, "live", [Message(role="user" if i % 2 == 0 else "assistant", content=sentence(rng),
                                               id=f"live{i}") for i in range(10)])
                samples = []
                for _ in range(args.queries):
                    t0 = time.perf_counter()
                    mem.recall(user, question(rng), 10)
                    samples.append((time.perf_counter() - t0) * 1000)
                    t0 = time.perf_counter()
                    mem.context(user, "live", query=question(rng), budget=4000)
                    context_ms.append((time.perf_counter() - t0) * 1000)
                recall_p50.append(statistics.median(samples))
                recall_p95.append(pct(samples, 95))
            mem.close()
            print(f"  measured: ingest {ingest_s:.0f} s; recall p50 median {statistics.median(recall_p50):.1f} ms; "
                  f"context p95 {pct(context_ms, 95):.1f} ms; RSS {rss_mb():.0f} MB; used_memory {used / 2**20:.0f} MiB",
                  flush=True)
            probe.save()
            rdb = (redis_dir / "dump.rdb").stat().st_size
            probe.close()
        chroma_bytes = folder_bytes(chroma_dir)
    finally:
        stop_chroma(chroma)
        shutil.rmtree(chroma_dir, ignore_errors=True)
        shutil.rmtree(data_dir, ignore_errors=True)
    total = args.users * args.items
    per_million = 1_000_000 / total
    print(f"\n| {args.users:,} users x {args.items:,} items on Redis + chroma run | value |")
    print("|---|---|")
    print(f"| ingest (archive_turns, batches <= 2,000, pseudo-random vectors) | {ingest_s:.0f} s, "
          f"{total / ingest_s:,.0f} items/s |")
    print(f"| recall k=10, per-user p50: median / worst of {len(recall_p50)} users | "
          f"{statistics.median(recall_p50):.1f} / {max(recall_p50):.1f} ms |")
    print(f"| recall k=10, per-user p95: median / worst | {statistics.median(recall_p95):.1f} / {max(recall_p95):.1f} ms |")
    print(f"| context() budget 4000: p50 / p95 over all sampled queries | {statistics.median(context_ms):.1f} / "
          f"{pct(context_ms, 95):.1f} ms |")
    print(f"| peak RSS of the app process | {rss_mb():.0f} MB |")
    print(f"| Redis used_memory | {used / 2**20:.0f} MiB = {used * per_million / 2**30:.2f} GiB per 1M items |")
    print(f"| Redis RDB | {rdb / 2**20:.0f} MiB = {rdb * per_million / 2**30:.2f} GiB per 1M items |")
    print(f"| Chroma server folder | {chroma_bytes / 2**20:.0f} MiB = {chroma_bytes * per_million / 2**30:.2f} GiB "
          "per 1M items |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
