"""BM25 query latency: hmem's lexical indexes vs rank_bm25, plus insert cost and RSS.

Run:  .venv/bin/python bench/bench_bm25.py            (10k and 100k documents)
      .venv/bin/python bench/bench_bm25.py --zh       (Chinese tokenization choice)

The corpus is synthetic and deterministic (seeded): short chat-like documents of
6-24 words drawn from a Zipf(1.1) vocabulary of 40,000 pseudo-words, with English
function words mixed in. Queries are 2-5 words from the same distribution.
"ours" times include tokenizing the query; rank_bm25 gets pre-tokenized queries and
is timed as get_scores + argpartition top-10. Ratios compare numbers of the same run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from rank_bm25 import BM25Okapi

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.longterm.bm25 import Bm25Index, term_counts
from hmem.longterm.text import CjkMode, tokenize

T = TypeVar("T")
K = 10
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
FUNCTION_WORDS = [
    "i",
    "the",
    "a",
    "to",
    "and",
    "of",
    "my",
    "was",
    "is",
    "it",
    "in",
    "we",
    "for",
    "that",
    "on",
    "with",
    "you",
    "at",
]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_corpus(n_docs: int, n_queries: int, seed: int = 42) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocab: list[str] = []
    seen: set[str] = set()
    while len(vocab) < 40_000:
        word = "".join(rng.choices(SYLLABLES, k=rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    weights = np.array([1 / (r + 1) ** 1.1 for r in range(len(vocab))])
    cum = np.cumsum(weights / weights.sum())
    nprng = np.random.default_rng(seed)

    def words(k: int) -> list[str]:
        return [vocab[i] for i in np.searchsorted(cum, nprng.random(k))]

    docs = []
    for _ in range(n_docs):
        content = words(rng.randint(6, 24))
        for _ in range(rng.randint(1, 5)):
            content.insert(rng.randrange(len(content) + 1), rng.choice(FUNCTION_WORDS))
        docs.append(" ".join(content))
    queries = [" ".join(words(rng.randint(2, 5))) for _ in range(n_queries)]
    return docs, queries


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def each(items: list[T], run: Callable[[T], object]) -> tuple[float, float]:
    """Median and p95 (ms) of ``run(item)`` over the items."""
    samples = []
    for item in items:
        start = time.perf_counter()
        run(item)
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def bench_size(n_docs: int, n_queries: int, n_oracle_queries: int) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    docs, queries = make_corpus(n_docs + 1000, n_queries)
    extra = docs[n_docs:]  # for the single-insert timing, added on top of the full corpus
    docs = docs[:n_docs]
    pairs = [(f"d{i}", text) for i, text in enumerate(docs)]
    tag = f"{n_docs // 1000}k"

    start = time.perf_counter()
    tokenized = [tokenize(text) for text in docs]
    tok_us = (time.perf_counter() - start) / n_docs * 1e6
    rows.append((f"{tag} tokenize one document", f"{tok_us:.1f} µs", ""))

    base_rss = rss_mb()
    memory = MemoryLexicalIndex()
    start = time.perf_counter()
    memory.add_many("u", pairs)
    rows.append((f"{tag} memory: bulk add_many", f"{(time.perf_counter() - start) / n_docs * 1e6:.1f} µs/doc", ""))
    rows.append((f"{tag} memory: RSS of the index", f"{rss_mb() - base_rss:.0f} MB", "approx."))
    med, p95 = each(list(enumerate(extra)), lambda p: memory.add("u", f"x{p[0]}", p[1]))
    rows.append((f"{tag} memory: add one doc (incl. tokenize)", f"{med:.3f} ms", f"p95 {p95:.3f} ms"))
    for i in range(len(extra)):
        memory.remove("u", f"x{i}")

    tmp = tempfile.TemporaryDirectory()
    db_path = Path(tmp.name) / "hmem.db"
    sqlite = SqliteLexicalIndex(SqliteDatabase(db_path))
    start = time.perf_counter()
    for i in range(0, n_docs, 5000):
        sqlite.add_many("u", pairs[i : i + 5000])
    rows.append(
        (f"{tag} sqlite: add_many (5k per txn)", f"{(time.perf_counter() - start) / n_docs * 1e6:.1f} µs/doc", "")
    )
    med, p95 = each(list(enumerate(extra)), lambda p: sqlite.add("u", f"x{p[0]}", p[1]))
    rows.append((f"{tag} sqlite: add one doc (own txn, committed)", f"{med:.3f} ms", f"p95 {p95:.3f} ms"))
    for i in range(len(extra)):
        sqlite.remove("u", f"x{i}")

    cold = SqliteLexicalIndex(SqliteDatabase(db_path))
    before = rss_mb()
    start = time.perf_counter()
    cold.search("u", queries[0], K)
    rows.append(
        (
            f"{tag} sqlite: cold load of the user (first query)",
            f"{(time.perf_counter() - start) * 1000:.0f} ms",
            f"+{rss_mb() - before:.0f} MB RSS",
        )
    )

    start = time.perf_counter()
    oracle = BM25Okapi(tokenized)
    rows.append((f"{tag} rank_bm25: build", f"{(time.perf_counter() - start):.1f} s", ""))

    def rank_bm25_top(q: list[str]) -> np.ndarray:
        scores = oracle.get_scores(q)
        return np.argpartition(-scores, K)[:K]

    q_tokens = [tokenize(q) for q in queries]
    ours_mem = each(queries, lambda q: memory.search("u", q, K))
    ours_sql = each(queries, lambda q: cold.search("u", q, K))
    sub = q_tokens[:n_oracle_queries]
    ref = each([" ".join(t) for t in sub], lambda q: rank_bm25_top(q.split(" ")))
    for label, (med, p95) in (("memory", ours_mem), ("sqlite (warm cache)", ours_sql), ("rank_bm25", ref)):
        ratio = "" if label == "rank_bm25" else f"{ref[0] / med:.0f}x faster (median)"
        rows.append((f"{tag} query top-{K}: {label}", f"{med:.3f} ms (p95 {p95:.3f})", ratio))

    # Consistency cost: another instance writes one doc, then this one queries.
    writer = SqliteLexicalIndex(SqliteDatabase(db_path))
    it = iter(range(10**9))

    def write_then_query() -> None:
        writer.add("u", f"w{next(it)}", extra[0])
        start_q = time.perf_counter()
        cold.search("u", queries[1], K)
        samples.append((time.perf_counter() - start_q) * 1000)

    samples: list[float] = []
    for _ in range(50):
        write_then_query()
    samples.sort()
    rows.append(
        (
            f"{tag} sqlite: query right after another instance wrote",
            f"{statistics.median(samples):.3f} ms",
            f"p95 {samples[int(0.95 * len(samples))]:.3f} ms",
        )
    )

    agree = 0
    for q, qt in zip(queries[:n_oracle_queries], sub, strict=True):
        scores = oracle.get_scores(qt)
        ours = {h.id: h.score for h in memory.search("u", q, K)}
        agree += all(abs(scores[int(d[1:])] - s) < 1e-6 for d, s in ours.items())
    rows.append((f"{tag} check: our top-{K} scores equal rank_bm25's", f"{agree}/{n_oracle_queries} queries", ""))
    rows.append((f"{tag} process RSS at end", f"{rss_mb():.0f} MB", ""))
    tmp.cleanup()
    return rows


def bench_zh(cjk_modes: list[CjkMode]) -> list[tuple[str, str, str]]:
    data = json.loads((Path(__file__).parent / "data" / "lexical_zh_sample.json").read_text(encoding="utf-8"))
    rows: list[tuple[str, str, str]] = []
    for mode in cjk_modes:
        index = Bm25Index()
        for doc_id, text in data["docs"].items():
            index.add(doc_id, term_counts(tokenize(text, cjk=mode)))
        mrr = r5 = hit1 = 0.0
        for item in data["queries"]:
            ranked = [d for d, _ in index.top_k(tokenize(item["q"], cjk=mode), 10)]
            gold = set(item["gold"])
            mrr += next((1 / (i + 1) for i, d in enumerate(ranked) if d in gold), 0.0)
            r5 += len(gold & set(ranked[:5])) / len(gold)
            hit1 += bool(ranked) and ranked[0] in gold
        n = len(data["queries"])
        texts = list(data["docs"].values())
        us = timed(lambda m=mode, ts=texts: [tokenize(t, cjk=m) for t in ts], 20)[0] / len(texts) * 1000
        rows.append((f"cjk={mode}", f"MRR@10 {mrr / n:.3f}  R@5 {r5 / n:.3f}  P@1 {hit1 / n:.3f}", f"{us:.1f} µs/doc"))
    rows.insert(0, ("sample", f"{len(data['docs'])} docs, {len(data['queries'])} queries", ""))
    return rows


def print_table(rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<28}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300, help="queries timed for our indexes")
    parser.add_argument("--oracle-queries", type=int, default=40, help="queries timed for rank_bm25 (slow)")
    parser.add_argument("--zh", action="store_true", help="only compare the Chinese tokenization modes")
    args = parser.parse_args()
    if args.zh:
        print_table(bench_zh(["bigram", "unigram+bigram", "jieba", "jieba+bigram"]))
        return
    tokenize("warm up 预热 jieba")
    tokenize("预热", cjk="jieba")
    for n in args.sizes:
        print_table(bench_size(n, args.queries, args.oracle_queries))
        print()


if __name__ == "__main__":
    main()
