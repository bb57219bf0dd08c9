"""Long-term store benchmark: hybrid recall latency, ingest throughput, RSS, and the
Chroma per-user scoping choice (collection per user vs one collection + where filter).

Run:  .venv/bin/python bench/bench_recall.py                 (10k items, 200 queries)
      .venv/bin/python bench/bench_recall.py --items 2000    (quick)

Stack: the embedded default — SQLite items + SQLite BM25 + Chroma PersistentClient +
all-MiniLM-L6-v2 (CPU) behind the SQLite embedding cache, all in a temp folder.
Items are synthetic chat facts (seeded templates). Every recall query is a new text,
so its embedding is computed (not cached) and counted in the recall time.
Scoping is measured with random 384-d unit vectors (the index cost does not depend on
where vectors came from): the target user holds N items, two other users N/2 each.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.items import SqliteItemStore
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.longterm.options import RecallOptions
from hmem.longterm.store import LongTermStore
from hmem.providers.embed import CachedEmbedder, SentenceTransformerEmbedder, SqliteEmbeddingCache

SUBJECTS = ["I", "My sister", "My boss", "Our neighbour", "My friend Tom", "My daughter", "We", "My partner",
            "My brother", "Grandma"]
VERBS = ["visited", "booked a table at", "complained about", "loves", "wants to see", "moved near", "works at",
         "painted", "photographed", "cycled to", "wrote about", "dreams of"]
OBJECTS = ["a small bakery", "the harbour", "an old cinema", "the botanical garden", "a jazz bar", "the library",
           "a ramen shop", "the climbing gym", "a vineyard", "the night market", "a bookshop", "the museum"]
PLACES = ["in Lisbon", "in Kyoto", "in Berlin", "in Oslo", "in Porto", "in Seoul", "in Austin", "in Lyon",
          "in Hanoi", "in Quito", "downtown", "near the station"]
TIMES = ["last week", "in March", "on Sunday", "yesterday", "two years ago", "every Friday", "this summer",
         "after work", "in 2019", "at dawn"]
KINDS = ["fact", "event", "preference", "turn"]


def corpus(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(PLACES)} " \
               f"{rng.choice(TIMES)} (note {rng.randrange(10**6)})"
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def queries(n: int, seed: int = 2) -> list[str]:
    rng = random.Random(seed)
    return [f"when did {rng.choice(SUBJECTS).lower()} go to {rng.choice(OBJECTS)} {rng.choice(PLACES)} #{i}"
            for i in range(n)]


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p))


def timed(fn: Callable[[], Any], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def rss_mb() -> tuple[float, float]:
    current = 0.0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def row(name: str, ms: list[float]) -> str:
    return f"| {name:<44} | {statistics.median(ms):8.2f} | {pct(ms, 95):8.2f} | {len(ms):5d} |"


def bench_store(root: Path, n_items: int, n_queries: int, batch: int) -> None:
    db = SqliteDatabase(root / "hmem.db")
    model = SentenceTransformerEmbedder()
    emb = CachedEmbedder(model, SqliteEmbeddingCache(db))
    lt = LongTermStore(SqliteItemStore(db), ChromaVectorIndex(chroma_persistent_client(root / "chroma")),
                       SqliteLexicalIndex(db), emb)
    texts = corpus(n_items)
    t = time.perf_counter()
    model.embed(["warm up the model"])
    load_s = time.perf_counter() - t
    rng = random.Random(3)
    entries = [{"text": x, "kind": rng.choice(KINDS), "importance": round(rng.random(), 2),
                "session_id": f"s{i // 200}"} for i, x in enumerate(texts)]
    t = time.perf_counter()
    for start in range(0, n_items, batch):
        lt.remember_many("bench-user", entries[start : start + batch])
    ingest_s = time.perf_counter() - t
    t = time.perf_counter()
    embed_only = len(model.embed(texts[:1000]))
    embed_rate = embed_only / (time.perf_counter() - t)
    t = time.perf_counter()
    lt.reindex("bench-user")
    reindex_s = time.perf_counter() - t
    print(f"\nmodel load {load_s:.1f}s; items stored: {lt.count('bench-user')}")
    print("\n| ingest | items/s |\n|---|---|")
    print(f"| remember_many, batch {batch}, with dedup (embed + 3 stores) | {n_items / ingest_s:8.0f} |")
    print(f"| model embedding alone, batch 64 | {embed_rate:8.0f} |")
    print(f"| reindex (all vectors from the embedding cache) | {n_items / reindex_s:8.0f} |")

    qs = queries(n_queries)
    it = iter(qs * 10)
    for q in qs[:5]:
        lt.recall("bench-user", q + " warm", k=10)
    lt_embed = timed(lambda: model.embed([next(it)]), n_queries)
    it = iter(qs)
    plain = timed(lambda: lt.recall("bench-user", next(it), k=10), n_queries)
    it = iter(q + " f" for q in qs)
    filtered = timed(lambda: lt.recall("bench-user", next(it), k=10, options=RecallOptions(kinds=["fact", "event"])), n_queries)
    it = iter(q + " s" for q in qs)
    session = timed(lambda: lt.recall("bench-user", next(it), k=10, options=RecallOptions(session_id="s7")), n_queries)
    it = iter(q + " b" for q in qs)
    boosted = timed(lambda: lt.recall("bench-user", next(it), k=10, options=RecallOptions(recency_half_life=86400 * 30, importance_weight=1.0, mmr_lambda=0.7)), n_queries)
    qvec = model.embed(["a fixed query about the harbour"])[0]
    dense = timed(lambda: lt.vectors.query("bench-user", qvec, 50), n_queries)
    lexical = timed(lambda: lt.lexical.search("bench-user", "harbour jazz Lisbon", 50), n_queries)
    print(f"\n| {n_items:,} items, one user, k=10 (new query text each time) | p50 ms | p95 ms | runs |")
    print("|---|---|---|---|")
    print(row("query embedding alone (model, 1 text)", lt_embed))
    print(row("dense top-50 alone (Chroma, collection/user)", dense))
    print(row("BM25 top-50 alone (SQLite lexical)", lexical))
    print(row("recall hybrid RRF (incl. query embedding)", plain))
    print(row("recall + kinds filter (2 of 4 kinds)", filtered))
    print(row("recall + session filter (200 items)", session))
    print(row("recall + recency + importance + MMR", boosted))
    cur, peak = rss_mb()
    print(f"\nRSS after recall benchmark: {cur:.0f} MB (peak {peak:.0f} MB)")


def bench_scoping(root: Path, n_items: int, n_queries: int) -> None:
    rng = np.random.default_rng(5)
    dim = 384

    def vecs(n: int) -> np.ndarray[Any, Any]:
        m = rng.normal(size=(n, dim)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    users = {"target": n_items, "other1": n_items // 2, "other2": n_items // 2}
    data = {u: vecs(n) for u, n in users.items()}
    results: dict[str, dict[str, list[float]]] = {}
    for scoping in ("collection", "where"):
        idx = ChromaVectorIndex(chroma_persistent_client(root / f"scope-{scoping}"), scoping=scoping)  # type: ignore[arg-type]
        t = time.perf_counter()
        for u, m in data.items():
            for s in range(0, len(m), 1000):
                idx.upsert(u, [f"{u}-{i}" for i in range(s, min(s + 1000, len(m)))], m[s : s + 1000].tolist(),
                           [{"kind": KINDS[i % 4]} for i in range(s, min(s + 1000, len(m)))])
        add_s = time.perf_counter() - t
        qs = vecs(n_queries)
        res: dict[str, list[float]] = {}
        for k in (10, 50):
            it = iter(qs)
            res[f"k={k}"] = timed(lambda idx=idx, it=it, k=k: idx.query("target", next(it).tolist(), k), n_queries)
        it = iter(qs)
        res["k=50 + kind filter"] = timed(
            lambda idx=idx, it=it: idx.query("target", next(it).tolist(), 50, where={"kind": "fact"}), n_queries)
        res["add"] = [add_s * 1000]
        results[scoping] = res
    total = sum(users.values())
    print(f"\n| Chroma scoping, target user {n_items:,} of {total:,} vectors | collection/user p50 | p95 "
          "| shared+where p50 | p95 | where/collection (p50) |")
    print("|---|---|---|---|---|---|")
    for key in ("k=10", "k=50", "k=50 + kind filter"):
        c, w = results["collection"][key], results["where"][key]
        print(f"| query {key} | {statistics.median(c):.2f} | {pct(c, 95):.2f} | {statistics.median(w):.2f} | "
              f"{pct(w, 95):.2f} | {statistics.median(w) / statistics.median(c):.1f}x |")
    print(f"| add all {total:,} vectors (s) | {results['collection']['add'][0] / 1000:.1f} | | "
          f"{results['where']['add'][0] / 1000:.1f} | | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--skip-scoping", action="store_true")
    args = ap.parse_args()
    print(f"cpus: {os.cpu_count()}; items: {args.items}; queries: {args.queries}")
    with tempfile.TemporaryDirectory() as tmp:
        bench_store(Path(tmp), args.items, args.queries, args.batch)
        if not args.skip_scoping:
            bench_scoping(Path(tmp), args.items, args.queries)


if __name__ == "__main__":
    main()
