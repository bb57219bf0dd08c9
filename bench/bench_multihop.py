"""Does a second, pseudo-relevance-feedback round help recall? R@10/R@25 per category.

Ingests a dataset through ``Memory.add`` once (kept in ``--workdir``, with a marker, so
later runs reuse it), then asks every question with ``Memory.recall`` under each
``--settings`` entry and maps the hits to source turns exactly as
:func:`hmem.eval.runner` does for ``default`` (distinct ``source_message_id``, depth
``2 * k``). A setting is ``name:key=value,key=value`` over :class:`LongTermConfig`'s
feedback knobs (``feedback_rounds``, ``feedback_docs``, ``feedback_terms``,
``feedback_weight``); ``off`` is one round.

Tune on LoCoMo dev conversations 1-3 (``--part tune``) and on the sample set; confirm
the chosen setting once on conversations 4-5 (``--part confirm``) and never choose by
looking at them.

Run::

    .venv/bin/python bench/bench_multihop.py --dataset locomo --part tune --workdir /tmp/hmem-multihop \\
        --settings "off:feedback_rounds=1" "prf:feedback_rounds=2"

``--planner`` recalls through :class:`~hmem.longterm.planner.LLMQueryPlanner` with the LLM
the ``HMEM_LLM_*`` variables name (the ingest stays offline, so a store ingested without
it is reused as it is).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from _ingest import ingest_once, load_dataset, part_ids

from hmem.build import build_llm, build_parts
from hmem.config import Settings
from hmem.eval.metrics import QuestionResult, Report, aggregate
from hmem.eval.model import EvalDataset, EvalQuestion
from hmem.longterm.planner import LLMQueryPlanner
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from hmem.memory import Memory

#: As ``hmem eval``: the recall call asks for ``2 * max(KS)`` items, so the ranks match its ``default``.
KS = (5, 10, 25, 50)
#: Categories in report order (LoCoMo's five; the sample set has its own, printed after).
ORDER = ("single-hop", "multi-hop", "temporal", "open-domain", "adversarial")


def _open(workdir: Path, dataset: EvalDataset) -> tuple[Memory, LongTermStore]:
    """The Memory in ``workdir`` (every conversation of ``dataset`` ingested once) and its
    long-term store, whose ``config`` the settings swap."""
    parts = build_parts(Settings.from_env({}, data_dir=str(workdir / "data")))
    mem = Memory(parts)
    ingest_once(mem, workdir, dataset.conversations)
    return mem, parts.longterm


def _parse_setting(text: str) -> tuple[str, dict[str, Any]]:
    name, _, body = text.partition(":")
    known = {f.name: f.type for f in fields(LongTermConfig)}
    out: dict[str, Any] = {}
    for pair in filter(None, body.split(",")):
        key, _, value = pair.partition("=")
        if key not in known:
            raise SystemExit(f"unknown LongTermConfig field {key!r} in setting {text!r}")
        out[key] = float(value) if "." in value else int(value) if value.lstrip("-").isdigit() else value
    return name, out


def _ask(mem: Memory, questions: Sequence[EvalQuestion], ask: int) -> tuple[list[QuestionResult], list[int]]:
    results, found_in_round2 = [], []
    k = min(max(KS), ask)
    for q in questions:
        start = time.perf_counter()
        hits = mem.recall(q.conversation_id, q.question, ask)
        elapsed = time.perf_counter() - start
        turns = list(dict.fromkeys(h.item.source_message_id for h in hits if h.item.source_message_id))
        results.append(QuestionResult(q.id, q.category, tuple(q.evidence), tuple(turns[:k]), elapsed))
        found_in_round2.append(sum(1 for h in hits if h.round > 1))
    return results, found_in_round2


def _print(label: str, report: Report, round2: Sequence[int], ks: Sequence[int]) -> None:
    cats = [c for c in ORDER if c in report.per_category] + [c for c in report.per_category if c not in ORDER]
    lat = report.latency
    print(f"\n{label}  (latency p50 {1000 * (lat.p50 if lat else 0):.1f} ms, p95 "
          f"{1000 * (lat.p95 if lat else 0):.1f} ms; hits found by a later round per question {sum(round2) / max(len(round2), 1):.2f})")
    print(f"{'category':<14} {'n':>4} " + " ".join(f"{'R@' + str(k):>6}" for k in ks))
    for name, m in [("overall", report.overall)] + [(c, report.per_category[c]) for c in cats]:
        if not m.n:
            continue
        print(f"{name:<14} {m.n:>4} " + " ".join(f"{100 * (m.recall[k] or 0):>6.1f}" for k in ks))


def _paired(label: str, base: Report, other: Report, k: int = 10) -> None:
    """Questions whose R@k went up / down against the first setting, with a two-sided
    sign test: with a few dozen questions per category, a point is one question."""
    before = {q.question_id: q.recall[k] for q in base.questions if q.has_evidence}
    after = {q.question_id: q.recall[k] for q in other.questions if q.has_evidence}
    ups = sum(1 for q, v in after.items() if (v or 0) > (before[q] or 0))
    downs = sum(1 for q, v in after.items() if (v or 0) < (before[q] or 0))
    n = ups + downs
    tail = sum(math.comb(n, i) for i in range(min(ups, downs) + 1)) / 2**n if n else 1.0
    print(f"  R@{k} vs the first setting ({label}): {ups} questions up, {downs} down, "
          f"sign test p = {min(1.0, 2 * tail):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=("locomo", "sample"), default="locomo")
    parser.add_argument("--part", choices=("tune", "confirm", "all"), default="tune")
    parser.add_argument("--workdir", type=Path, required=True, help="keeps the ingested store between runs")
    parser.add_argument("--settings", nargs="+", default=["off:feedback_rounds=1", "prf:feedback_rounds=2"])
    parser.add_argument("--ask", type=int, default=2 * max(KS),
                        help="how many hits each recall asks for (default 100, as hmem eval); R@k is printed for k up "
                             "to it: --ask 10 shows what a caller asking for 10 hits gets")
    parser.add_argument("--planner", action="store_true",
                        help="recall with the LLM query planner (hmem.longterm.planner), the LLM from HMEM_LLM_* "
                             "in the environment; ingest stays offline")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    dataset = load_dataset(args.dataset)
    workdir = args.workdir / args.dataset
    workdir.mkdir(parents=True, exist_ok=True)
    mem, store = _open(workdir, dataset)
    if args.planner:
        llm = build_llm(Settings.from_env())
        if llm is None:
            raise SystemExit("--planner needs an LLM: set HMEM_LLM_MODEL (and HMEM_LLM_BASE_URL, HMEM_LLM_API_KEY)")
        store.planner = LLMQueryPlanner(llm)
    keep = set(part_ids(dataset, args.dataset, args.part))
    questions = [q for q in dataset.questions if q.conversation_id in keep and q.evidence]
    base = store.config
    if args.ask < 1:
        raise SystemExit(f"--ask must be at least 1, got {args.ask}")
    ks = [k for k in KS if k <= args.ask]
    _ask(mem, questions[:20], args.ask)  # warm-up: caches and lazily built indexes, so the first setting's latency is not an outlier
    first: Report | None = None
    try:
        for text in args.settings:
            name, knobs = _parse_setting(text)
            store.config = replace(base, **knobs)
            results, round2 = _ask(mem, questions, args.ask)
            report = aggregate(results, KS)
            part = args.part if args.dataset == "locomo" else "all"
            _print(f"{args.dataset} {part} [{name}] {knobs} (asking {args.ask})", report, round2, ks)
            if first is None:
                first = report
            else:
                for k in [k for k in (10, 25) if k in ks]:
                    _paired("all", first, report, k)
    finally:
        store.config = base
        mem.close()


if __name__ == "__main__":
    main()
