"""How deep should a prompt's recall go? Answer-in-context per budget and relevance cut-off.

Ingests a dataset through ``Memory.add`` (kept in ``--workdir``, so later runs reuse it),
then asks every answerable question in a new, empty session with ``Memory.context``
(default arguments unless told) at several budgets, and scores the assembled messages
with :func:`hmem.eval.answers.containment` (strict / loose answer in context) plus the
share of gold evidence turns kept, the tokens used and what stopped the recalled tier.

The cut-off is chosen on a *tune* part and confirmed on the rest: LoCoMo dev
conversations 1-3 tune, 4-5 confirm (``--part``); the sample set is a second tune set.
Rule, fixed before measuring: the highest cut-off whose loose answer-in-context at
4,000 tokens stays within 1 point of no cut-off on the tune part.

``--dump FILE`` writes the raw contexts (JSON lines) instead of scoring, using only
``Memory.context(query=, budget=, k=)``: run it with ``PYTHONPATH`` set to an older
checkout to measure "before", then ``--score FILE`` scores the dump with this checkout.

Run::

    .venv/bin/python bench/bench_context_depth.py --dataset locomo --workdir /tmp/hmem-depth \\
        --cutoffs none,0.1,0.2,0.3,0.4,0.5 --part tune
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _ingest import DATASETS, ingest_once, load_dataset, part_ids

from hmem.cli.eval_cmd import parse_setting
from hmem.eval.model import EvalDataset, EvalQuestion
from hmem.eval.opener import check_settings
from hmem.memory import Memory

QUERY_SESSION = "hmem-bench-depth"
#: The categories of the issue's "today" table (LoCoMo); "all" adds temporal.
ISSUE_CATEGORIES = ("single-hop", "multi-hop", "open-domain")
NO_ANSWER = ("not mentioned in the conversation",)


@dataclass
class Row:
    """One question at one budget under one setting."""

    question: str
    category: str
    budget: int | None  # None: context()'s default (the model's window)
    text: str
    tokens: int
    kept_turns: list[str]
    gold: list[str]
    answer: str
    stopped_by: str | None = None


@dataclass
class Cell:
    strict: list[float] = field(default_factory=list)
    loose: list[float] = field(default_factory=list)
    evidence: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    stops: Counter[str] = field(default_factory=Counter)


def _open(workdir: Path, dataset: EvalDataset, conversations: Sequence[str],
          settings: dict[str, Any] | None = None) -> Memory:
    mem = Memory.open(workdir / "data", **(settings or {}))
    ingest_once(mem, workdir, [c for c in dataset.conversations if c.id in conversations])
    return mem


def _variant(mem: Memory, spec: str) -> Memory:
    """``mem``'s parts with options changed by ``spec``: comma-separated ``price=`` (the
    calibrated stop's tokens per answer), ``memory=`` (memory budget, ``none``),
    ``excerpt=`` (excerpt tokens, ``none``), ``dates=`` (1/0: the template's
    ``resolve_dates``). Close only ``mem``: the parts are shared."""
    from dataclasses import replace

    from hmem.assembly.stopping import StopRule
    from hmem.backends.memory.jobs import MemoryJobQueue
    from hmem.jobs import JobEngine

    parts = mem._parts  # the bench's own Memory; MemoryParts are meant to be replaced so
    options = parts.options
    for pair in spec.split(","):
        key, _, value = pair.partition("=")
        number = None if value == "none" else float(value)
        if key == "price":
            options = replace(options, stop=None if number is None else StopRule(tokens_per_answer=number))
        elif key == "dates":  # resolve_dates of the template: dates=0 shows turns as said
            options = replace(options, template=replace(options.template, resolve_dates=bool(number)))
        elif key in ("memory", "excerpt"):
            field = {"memory": "memory_budget", "excerpt": "excerpt_tokens"}[key]
            options = replace(options, **{field: None if number is None else int(number)})
        else:
            raise SystemExit(f"unknown variant key {key!r} (price, memory, excerpt, dates)")
    # Reads only: an engine of its own (the store's engine has its job kinds registered).
    return Memory(replace(parts, options=options, on_close=(), engine=JobEngine(MemoryJobQueue())))


def _questions(dataset: EvalDataset, conversations: Sequence[str]) -> list[EvalQuestion]:
    out = []
    for conv in conversations:
        for q in dataset.questions_for(conv):
            if q.evidence and q.answer.strip() and q.answer not in NO_ANSWER and q.category != "adversarial":
                out.append(q)
    return out


def _ask(mem: Memory, questions: Sequence[EvalQuestion], budgets: Sequence[int | None], **context: Any) -> list[Row]:
    from tqdm import tqdm

    rows = []
    for q in tqdm(questions, desc=f"ask {context or 'defaults'}", unit="q", file=sys.stderr, leave=False):
        for budget in budgets:
            ctx = mem.context(q.conversation_id, QUERY_SESSION, query=q.question, budget=budget, **context)
            kept = [r.ref for r in ctx.report.items if r.tier == "recalled" and r.kept]
            turns = list(dict.fromkeys(i.source_message_id for i in mem.items(q.conversation_id, ids=kept)
                                       if i.source_message_id))
            tier = ctx.report.tier("recalled")
            rows.append(Row(q.id, q.category, budget, "\n".join(str(m.get("content") or "") for m in ctx.messages),
                            ctx.tokens, turns, list(q.evidence), q.answer, getattr(tier, "stopped_by", None)))
    return rows


def _score(rows: Iterable[Row], categories: Sequence[str] | None) -> dict[int | None, Cell]:
    from hmem.eval.answers import containment

    cells: dict[int | None, Cell] = {}
    for row in rows:
        if categories is not None and row.category not in categories:
            continue
        cell = cells.setdefault(row.budget, Cell())
        found = containment(row.answer, row.text)
        cell.strict.append(float(found.strict))
        cell.loose.append(float(found.loose))
        cell.evidence.append(len(set(row.gold) & set(row.kept_turns)) / len(row.gold))
        cell.tokens.append(row.tokens)
        cell.stops[row.stopped_by or "-"] += 1
    return cells


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _budgets(cells: dict[int | None, Cell]) -> list[int | None]:
    """Budgets in order, the default (None) first."""
    return sorted(cells, key=lambda b: -1 if b is None else b)


def _name(budget: int | None) -> str:
    return "default" if budget is None else str(budget)


def _print(label: str, cells: dict[int | None, Cell]) -> None:
    print(f"\n{label}")
    print(f"{'budget':>7} {'strict':>7} {'loose':>7} {'evid.':>7} {'tokens':>7} {'evid/1k':>8}  n    stopped by")
    for budget in _budgets(cells):
        c = cells[budget]
        tokens = _mean(c.tokens)
        per_1k = 1000 * _mean(c.evidence) / tokens if tokens else 0.0
        stops = ", ".join(f"{k} {v}" for k, v in c.stops.most_common())
        print(f"{_name(budget):>7} {100 * _mean(c.strict):>7.1f} {100 * _mean(c.loose):>7.1f} {100 * _mean(c.evidence):>7.1f}"
              f" {tokens:>7.0f} {per_1k:>8.1f}  {len(c.tokens):<4} {stops}")


def _print_grid(label: str, grid: dict[str, dict[int | None, Cell]]) -> None:
    """One line per setting: loose answer-in-context / mean tokens at each budget."""
    budgets = _budgets({b: Cell() for cells in grid.values() for b in cells})
    print(f"\n{label}: loose answer in context / mean tokens")
    print(f"{'setting':<24}" + "".join(f"{'budget ' + _name(b):>14}" for b in budgets))
    for name, cells in grid.items():
        print(f"{name:<24}" + "".join(f"{100 * _mean(cells[b].loose):>7.1f} / {_mean(cells[b].tokens):<5.0f}"
                                      for b in budgets))


def _print_rows(grid: dict[str, dict[int | None, Cell]]) -> None:
    """Every metric per setting and budget, one line each."""
    print(f"{'setting':<24} {'budget':>6} {'strict':>7} {'loose':>7} {'evid.':>7} {'tokens':>7} {'evid/1k':>8} {'n':>5}")
    for name, cells in grid.items():
        for budget in _budgets(cells):
            c = cells[budget]
            tokens = _mean(c.tokens)
            per_1k = 1000 * _mean(c.evidence) / tokens if tokens else 0.0
            print(f"{name:<24} {_name(budget):>6} {100 * _mean(c.strict):>7.1f} {100 * _mean(c.loose):>7.1f} "
                  f"{100 * _mean(c.evidence):>7.1f} {tokens:>7.0f} {per_1k:>8.1f} {len(c.tokens):>5}")


def _cutoff(text: str) -> float | None:
    return None if text.strip().lower() in ("none", "off") else float(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", choices=DATASETS, default="locomo")
    parser.add_argument("--part", choices=("tune", "confirm", "all"), default="all")
    parser.add_argument("--workdir", type=Path, required=True, help="keeps the ingested store between runs")
    parser.add_argument("--budgets", default="500,1000,2000,4000", help="comma-separated; 'default': no budget "
                        "argument (the model's window)")
    parser.add_argument("--cutoffs", default=None, help="comma-separated relevance cut-offs (none = off); "
                        "default: Memory.context's own default only")
    parser.add_argument("--k", type=int, default=None, help="pass k= to Memory.context (an upper bound)")
    parser.add_argument("--dump", type=Path, default=None, help="write raw contexts (JSON lines) instead of scoring")
    parser.add_argument("--variants", default=None, help="with --dump: semicolon-separated option changes, one "
                        "dump each (FILE-<variant>.jsonl), e.g. 'price=3000;price=6000,excerpt=80' (see _variant)")
    parser.add_argument("--score", type=Path, nargs="+", default=None, help="score dumps written by --dump")
    parser.add_argument("--set", action="append", default=[], type=parse_setting, metavar="NAME=VALUE",
                        help="open the store with this setting (repeatable), as `hmem eval --set`: "
                        "e.g. --set speaker_weight=0 for a before/after on one store")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    budgets = [None if b.strip() == "default" else int(b) for b in args.budgets.split(",")]

    if args.score:
        keep = None if args.part == "all" else set(part_ids(load_dataset(args.dataset), args.dataset, args.part))
        dumps = {}
        for path in args.score:
            rows = [Row(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
            dumps[path.stem] = [r for r in rows if keep is None or r.question.split(":")[0] in keep]
        for label, categories in (("all answerable", None), (", ".join(ISSUE_CATEGORIES), ISSUE_CATEGORIES)):
            print(f"\n{args.dataset} ({args.part}), {label}")
            _print_rows({name: _score(rows, categories) for name, rows in dumps.items()})
        return

    dataset = load_dataset(args.dataset)
    conversations = part_ids(dataset, args.dataset, args.part)
    args.workdir.mkdir(parents=True, exist_ok=True)
    chosen = check_settings(dict(args.set)) if args.set else {}
    mem = _open(args.workdir, dataset, conversations, chosen)
    questions = _questions(dataset, conversations)
    extra: dict[str, Any] = {} if args.k is None else {"k": args.k}
    try:
        if args.dump:
            targets = [(args.dump, mem)]
            if args.variants:
                targets = [(args.dump.with_name(f"{args.dump.stem}-{v.replace('=', '').replace(',', '-')}"
                                                f"{args.dump.suffix}"), _variant(mem, v))
                           for v in args.variants.split(";")]
            for path, asked in targets:
                rows = _ask(asked, questions, budgets, **extra)
                path.write_text("".join(json.dumps(r.__dict__) + "\n" for r in rows))
                print(f"wrote {len(rows)} rows to {path}")
            return
        settings: list[dict[str, Any]] = [dict(extra)]
        if args.cutoffs:
            settings = [{**extra, "relevance_cutoff": _cutoff(c)} for c in args.cutoffs.split(",")]
        grid: dict[str, dict[int | None, Cell]] = {}
        for setting in settings:
            rows = _ask(mem, questions, budgets, **setting)
            label = f"{args.dataset} ({args.part}, {len(questions)} questions) {setting or 'defaults'}"
            _print(f"{label}: all answerable", _score(rows, None))
            if args.dataset == "locomo":
                _print(f"{label}: {', '.join(ISSUE_CATEGORIES)}", _score(rows, ISSUE_CATEGORIES))
            name = "cut-off " + str(setting.get("relevance_cutoff", "default")) if args.cutoffs else "defaults"
            grid[name] = _score(rows, None)
        _print_grid(f"{args.dataset} ({args.part}, {len(questions)} questions, all answerable)", grid)
    finally:
        mem.close()


if __name__ == "__main__":
    main()
