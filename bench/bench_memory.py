"""End-to-end benchmark of the Memory facade on the embedded default stack.

Run:  .venv/bin/python bench/bench_memory.py                       (1k / 10k / 100k items)
      .venv/bin/python bench/bench_memory.py --sizes 1000,10000    (quicker)

Stack: ``Memory.open(tmp)``'s parts (``build_parts``) — SQLite sessions/summaries/profile/items/BM25, Chroma
PersistentClient, all-MiniLM-L6-v2 on CPU (the default int8 ONNX build; it was the torch one
before 2026-12-02) behind the SQLite embedding cache.

1. Ingest through the real write path, real model:
   - turns/s through ``Memory.add`` (the sample conversations of ``data/``, one add per
     session: archive + offline fact/profile extraction + compaction), until ``flush()``
     returns (the turns' sentence keys are built behind the adds);
   - items/s through the Memory's ``LongTermStore.remember_many`` (batches of 100
     synthetic facts, with write-time dedup).
2. Latency at N items for one user (N = --sizes): one query embedding, ``recall(k=10)``,
   ``context(budget=4000)`` and ``context()`` with default arguments (memory budget and
   calibrated stop), p50/p95 over --queries new questions each (every query text is new,
   so its embedding is computed and counted).
   Filler items are synthetic archived turns of two sentences (so each has two sentence
   keys; ``--no-sentence-keys`` measures without them) written through
   ``LongTermStore.archive_turns`` in batches of 2,000; their vectors are seeded
   pseudo-random unit vectors (embedding 100k texts would take ~4 min unloaded and far
   longer on a shared 2-core box; index cost does not depend on where vectors came
   from). Queries use the real model.
3. Peak RSS after each phase.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from hmem.build import build_parts
from hmem.config import Settings
from hmem.eval.datasets import load_sample
from hmem.eval.runner import conversation_batches
from hmem.longterm.store import LongTermStore
from hmem.memory import Memory
from hmem.providers.onnx import OnnxMiniLMEmbedder
from hmem.types import Message

PEOPLE = ["my sister", "my boss", "our neighbour", "my friend Tom", "my daughter", "my partner", "grandma", "Priya"]
VERBS = ["visited", "booked a table at", "complained about", "loves", "wants to see", "moved near", "painted",
         "photographed", "cycled to", "wrote about", "dreams of", "works at"]
PLACES = ["a small bakery", "the harbour", "an old cinema", "the botanical garden", "a jazz bar", "the library",
          "a ramen shop", "the climbing gym", "a vineyard", "the night market", "a bookshop", "the museum"]
CITIES = ["Lisbon", "Kyoto", "Berlin", "Oslo", "Porto", "Seoul", "Austin", "Lyon", "Hanoi", "Quito"]
WHEN = ["last week", "in March", "on Sunday", "yesterday", "two years ago", "every Friday", "this summer"]


class BenchEmbedder:
    """The real model; while ``fake`` is on, batches of more than 8 texts get seeded
    pseudo-random unit vectors instead (filler only; queries are always real)."""

    def __init__(self) -> None:
        self.real = OnnxMiniLMEmbedder()
        self.fake = False

    @property
    def model_name(self) -> str:
        return self.real.model_name

    @property
    def dimension(self) -> int:
        return 384

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.real.embed_query(texts)  # questions are always real

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not self.fake or len(texts) <= 8:
            return self.real.embed(texts)
        out = []
        for t in texts:
            seed = int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


def sentence(rng: random.Random) -> str:
    return (f"{rng.choice(PEOPLE).capitalize()} {rng.choice(VERBS)} {rng.choice(PLACES)} in "
            f"{rng.choice(CITIES)} {rng.choice(WHEN)}, #{rng.randrange(10**6)}.")


def question(rng: random.Random) -> str:
    return f"Who {rng.choice(VERBS)} {rng.choice(PLACES)} in {rng.choice(CITIES)}? ({rng.randrange(10**9)})"


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def row(cells: Sequence[object]) -> None:
    print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)


def ingest_phase(mem: Memory, lt: LongTermStore) -> None:
    ds = load_sample()
    turns = 0
    start = time.perf_counter()
    for conv in ds.conversations:
        for session_id, messages in conversation_batches(conv):
            mem.add(f"ingest-{conv.id}", session_id, messages)
            turns += len(messages)
    mem.flush(600)  # the turns' sentence keys are built behind the adds: counted here
    add_s = time.perf_counter() - start
    rng = random.Random(7)
    facts = [sentence(rng) for _ in range(1000)]
    start = time.perf_counter()
    for i in range(0, len(facts), 100):
        lt.remember_many("ingest-facts", facts[i : i + 100])
    facts_s = time.perf_counter() - start
    print("\n### Ingest (real model)\n")
    row(["path", "records", "seconds", "per second"])
    row(["---"] * 4)
    row(["Memory.add (sample conversations, one add per session; then flush: keys built)", f"{turns} turns", f"{add_s:.1f}",
         f"{turns / add_s:.1f} turns/s"])
    row(["longterm.remember_many (batches of 100 facts, dedup on)", f"{len(facts)} items", f"{facts_s:.1f}",
         f"{len(facts) / facts_s:.1f} items/s"])
    print(f"\npeak RSS after ingest: {rss_mb():.0f} MB")


def fill(lt: LongTermStore, user: str, upto: int, rng: random.Random, have: int) -> tuple[int, float]:
    start = time.perf_counter()
    base = datetime(2024, 1, 1, tzinfo=UTC)
    n = have
    while n < upto:
        batch = min(2000, upto - n)
        # Two sentences a turn, so that each filler turn has sentence keys (two), as a chat's do.
        msgs = [Message(role="user" if (n + i) % 2 == 0 else "assistant", content=f"{sentence(rng)} {sentence(rng)}",
                        id=f"f{n + i}", created_at=base + timedelta(minutes=n + i)) for i in range(batch)]
        lt.archive_turns(user, f"s{n // 200}", msgs)
        n += batch
    return n, time.perf_counter() - start


def latency_phase(mem: Memory, lt: LongTermStore, emb: BenchEmbedder, sizes: list[int], queries: int, *,
                  compare: dict[str, float | int] | None = None) -> None:
    """Recall and context() latency per size; with ``compare`` (LongTermConfig fields), each
    query is also asked under that config, alternating, and reported on a second row."""
    user, rng, have = "scale-user", random.Random(11), 0
    # A live session so context() assembles history + summary + profile + recalled items.
    mem.add(user, "live", [Message(role="user" if i % 2 == 0 else "assistant", content=sentence(rng), id=f"live{i}")
                           for i in range(20)])
    print("\n### Latency by items per user (queries use the real model)\n")
    row(["items", "fill s", "query embedding p50 ms", "recall p50 ms", "recall p95 ms", "context p50 ms",
         "context p95 ms", "context() default p50 ms", "default / embedding", "peak RSS MB"])
    row(["---"] * 10)
    for size in sizes:
        emb.fake = True
        have, fill_s = fill(lt, user, size, rng, have)
        lt.flush_keys(3600)  # their keys are built behind, with the same seeded vectors
        emb.fake = False
        configs = {"": lt.config} | ({f" ({compare})": replace(lt.config, **compare)} if compare else {})
        recall_ms: dict[str, list[float]] = {name: [] for name in configs}
        context_ms: dict[str, list[float]] = {name: [] for name in configs}
        default_ms: dict[str, list[float]] = {name: [] for name in configs}
        embed_ms: list[float] = []
        for _ in range(queries):
            t0 = time.perf_counter()
            emb.real.embed_query([question(rng)])  # one new query, as recall embeds it
            embed_ms.append((time.perf_counter() - t0) * 1000)
            for name, config in configs.items():
                q, q2 = question(rng), question(rng)  # new texts: the embedding cache would answer a repeat
                lt.config = config
                t0 = time.perf_counter()
                mem.recall(user, q, 10)
                recall_ms[name].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                mem.context(user, "live", query=q2, budget=4000)
                context_ms[name].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                mem.context(user, "live", query=question(rng))  # default arguments: the memory budget and stop
                default_ms[name].append((time.perf_counter() - t0) * 1000)
        lt.config = configs[""]
        embed_p50 = statistics.median(embed_ms)
        for name in configs:
            row([f"{lt.count(user):,}{name}", f"{fill_s:.0f}", f"{embed_p50:.1f}", f"{statistics.median(recall_ms[name]):.1f}",
                 f"{pct(recall_ms[name], 95):.1f}", f"{statistics.median(context_ms[name]):.1f}",
                 f"{pct(context_ms[name], 95):.1f}", f"{statistics.median(default_ms[name]):.1f}",
                 f"{statistics.median(default_ms[name]) / embed_p50:.2f}x", f"{rss_mb():.0f}"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="items per user to measure at")
    parser.add_argument("--queries", type=int, default=50, help="queries per size (recall and context each)")
    parser.add_argument("--skip-ingest", action="store_true")
    parser.add_argument("--no-sentence-keys", action="store_true", help="sentence_keys=false (the baseline)")
    parser.add_argument("--compare", metavar="KEY=VALUE", nargs="*", default=[],
                        help="also time each query under LongTermConfig with these fields (e.g. session_weight=0)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    emb = BenchEmbedder()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="hmem-bench-") as tmp:
        # Memory.open(tmp) is Memory(build_parts(...)); the parts give the fill its long-term store.
        parts = build_parts(Settings.from_env({}, data_dir=str(Path(tmp)), sentence_keys=not args.no_sentence_keys),
                            embedder=emb)
        mem = Memory(parts)
        try:
            emb.real.embed(["warm up the model"])
            if not args.skip_ingest:
                ingest_phase(mem, parts.longterm)
            compare = {k: int(v) if v.isdigit() else float(v) for k, _, v in (pair.partition("=") for pair in args.compare)}
            latency_phase(mem, parts.longterm, emb, sizes, args.queries, compare=compare or None)
        finally:
            mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
