"""Fit the recalled tier's stopping rule: each hit's chance of holding the answer.

For every answerable question of a set, recalls as ``Memory.context`` does (best hit per
source message, up to ``--depth``) and records, per hit, what the assembler can see
when it decides (its rank, its score against the best one, whether both retrievers
found it) and whether it is a gold evidence turn. ``--fit`` fits a logistic regression
on the dev sets (LoCoMo dev conversations 1-3, our sample set, the assistant set) and
reports how well it is calibrated on the held-out parts (LoCoMo dev 4-5, our assistant
and mixed test splits): the coefficients are what
:data:`hmem.assembly.stopping.DEFAULT_STOP` holds.

Run (stores are the ones ``bench_context_depth.py --workdir`` ingested)::

    .venv/bin/python bench/fit_stopping.py --root /work/depth --fit
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from _ingest import ingest_once, load_dataset, part_ids

from hmem._reads import distinct_sources
from hmem.assembly.stopping import features
from hmem.memory import Memory

#: (dataset, part) pairs the rule is fitted on, and those it is checked on.
FIT = (("locomo", "tune"), ("sample", "all"), ("assistant", "all"))
CHECK = (("locomo", "confirm"), ("assistant-test", "all"), ("mixed-test", "all"))
NO_ANSWER = ("not mentioned in the conversation",)


def dump(root: Path, name: str, part: str, depth: int) -> list[dict[str, object]]:
    """Per hit: question id, features, label; cached in ``root/features-<name>-<part>.jsonl``."""
    cache = root / f"features-{name}-{part}.jsonl"
    if cache.exists():
        return [json.loads(line) for line in cache.read_text().splitlines()]
    from tqdm import tqdm

    dataset = load_dataset(name)
    conversations = part_ids(dataset, name, part)
    workdir = root / name
    workdir.mkdir(parents=True, exist_ok=True)
    mem = Memory.open(workdir / "data")
    rows: list[dict[str, object]] = []
    try:
        ingest_once(mem, workdir, [c for c in dataset.conversations if c.id in conversations])
        questions = [q for c in conversations for q in dataset.questions_for(c)
                     if q.evidence and q.answer.strip() and q.answer not in NO_ANSWER and q.category != "adversarial"]
        for q in tqdm(questions, desc=f"recall {name} {part}", unit="q", file=sys.stderr):
            hits = distinct_sources(mem.recall(q.conversation_id, q.question, k=depth))
            gold = set(q.evidence)
            for rank, (hit, x) in enumerate(zip(hits, features(hits), strict=True), start=1):
                rows.append({"q": q.id, "set": name, "rank": rank, "x": list(x),
                             "y": int((hit.item.source_message_id or "") in gold)})
    finally:
        mem.close()
    cache.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def fit(xs: Sequence[Sequence[float]], ys: Sequence[int], weights: Sequence[float], ridge: float = 1e-3) -> list[float]:
    """Weighted logistic regression by Newton's method; returns ``[bias, *coefficients]``."""
    import numpy as np

    x = np.column_stack([np.ones(len(xs)), np.asarray(xs, dtype=float)])
    y = np.asarray(ys, dtype=float)
    w = np.asarray(weights, dtype=float)
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ beta))
        gradient = x.T @ (w * (y - p)) - ridge * beta
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-9:
            break
    return [float(b) for b in beta]


def calibration(rows: Sequence[dict[str, object]], beta: Sequence[float]) -> list[tuple[str, int, float, float]]:
    """Bins of predicted chance: (bin, hits, mean predicted, observed share)."""
    edges = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 1.01)
    out = []
    for low, high in itertools.pairwise(edges):
        chosen = [(p, int(r["y"])) for r in rows  # type: ignore[call-overload]
                  if low <= (p := _chance(beta, r["x"])) < high]  # type: ignore[arg-type]
        if chosen:
            out.append((f"{low:.2f}-{min(high, 1):.2f}", len(chosen), sum(p for p, _ in chosen) / len(chosen),
                        sum(y for _, y in chosen) / len(chosen)))
    return out


def _chance(beta: Sequence[float], x: Sequence[float]) -> float:
    z = beta[0] + sum(b * v for b, v in zip(beta[1:], x, strict=True))
    return 1 / (1 + math.exp(-z))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, required=True, help="one work folder per set (bench_context_depth's)")
    parser.add_argument("--depth", type=int, default=60)
    parser.add_argument("--fit", action="store_true", help="fit on the dev parts, check on the held-out ones")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    fitted = {pair: dump(args.root, *pair, args.depth) for pair in FIT}
    if not args.fit:
        return
    xs, ys, ws = [], [], []
    for rows in fitted.values():
        questions = {r["q"] for r in rows}
        for r in rows:  # each set weighs the same, each question within a set the same
            xs.append(r["x"])
            ys.append(r["y"])
            ws.append(1.0 / len(questions))
    beta = fit(xs, ys, ws)  # type: ignore[arg-type]
    print("coefficients (bias, log rank, score / best, both retrievers):", [round(b, 4) for b in beta])
    checked = {pair: dump(args.root, *pair, args.depth) for pair in CHECK}
    for (name, part), rows in {**fitted, **checked}.items():
        print(f"\n{name} ({part}), {len({r['q'] for r in rows})} questions: bin, hits, predicted, observed")
        for label, n, predicted, observed in calibration(rows, beta):
            print(f"  {label:<10} {n:>6} {predicted:>7.3f} {observed:>7.3f}")


if __name__ == "__main__":
    main()
