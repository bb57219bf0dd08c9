"""``hmem eval``: replay a dataset through hmem and score turn-level retrieval.

Ingests every conversation through ``Memory.add`` into a fresh embedded store (a
temporary folder unless ``--workdir``), asks each question under the chosen
configurations (bm25, dense, hybrid, hybrid+recency, default, context, answer) and
prints recall@k overall and per category, MRR, nDCG@10 and query latency; the answer
configuration adds, per budget, how often the gold answer is in Memory.context()'s
prompt. With ``--out`` it also writes results.json, results.md and a recall@k plot.

Example::

    hmem eval --dataset sample
    hmem eval --dataset locomo --path ../shared/data/locomo/locomo_dev.json \\
        --corrections ../shared/data/locomo/audit_corrections_dev.json --k 5,10,25,50 --out results/
    hmem eval --dataset locomo --limit-conversations 1 --configs bm25,default --json
    hmem eval --dataset sample --configs answer --answer-budgets 500,1000,2000,4000 --context-k 100
    hmem eval --dataset locomo --configs default --set session_weight=0 --set feedback_rounds=1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from hmem.cli.common import Output, positive_int
from hmem.errors import InvalidInput

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.eval.model import EvalDataset
    from hmem.eval.runner import EvalRun

__all__ = ["load_eval_dataset", "parse_answer_budgets", "parse_configs", "parse_context_k", "parse_ks", "parse_setting",
           "register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "eval",
        help="score retrieval quality on the sample set, LoCoMo or LongMemEval",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", choices=("sample", "locomo", "longmemeval"), default="sample",
                   help="which dataset (default: sample, shipped in data/)")
    p.add_argument("--path", default=None,
                   help="dataset file or folder (sample: data/conversations; locomo: ../shared/data/locomo/locomo_dev.json)")
    p.add_argument("--corrections", default=None, help="LoCoMo audit corrections file (WRONG_CITATION rows)")
    p.add_argument("--k", dest="ks", default="5,10,25,50", type=parse_ks, help="comma-separated ks (default 5,10,25,50)")
    p.add_argument("--configs", default=None, type=parse_configs,
                   help="comma-separated configurations "
                        "(default: all of bm25,dense,hybrid,hybrid+recency,default,context,answer; "
                        "ablation: default and each ranking stage off in turn, without-<stage>, no-stages)")
    p.add_argument("--limit-conversations", type=positive_int, default=None, metavar="N",
                   help="only the first N conversations")
    p.add_argument("--limit-questions", type=positive_int, default=None, metavar="N",
                   help="at most N questions per conversation")
    p.add_argument("--budget", type=positive_int, default=None, metavar="TOKENS",
                   help="token budget of the `context` configuration (default 4000)")
    p.add_argument("--answer-budgets", default=None, type=parse_answer_budgets, metavar="TOKENS,...",
                   help="comma-separated token budgets of the `answer` configuration (default 500,1000,2000,4000)")
    p.add_argument("--context-k", default=None, type=parse_context_k, metavar="N",
                   help="recall depth k (1-1000) of the `answer` configuration's Memory.context calls "
                        "(default: context's own depth)")
    p.add_argument("--set", dest="settings", action="append", default=[], type=parse_setting, metavar="NAME=VALUE",
                   help="open the store with this setting beside the embedded default (repeatable): a "
                        "hmem.config.Settings field or its HMEM_* variable, e.g. --set session_weight=0 "
                        "--set embed_provider=e5; the environment is not read, the report lists them")
    p.add_argument("--out", default=None, metavar="DIR", help="write results.json, results.md and recall_at_k.png here")
    p.add_argument("--workdir", default=None, metavar="DIR", help="keep the replayed store here (default: temporary)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    p.set_defaults(func=_run)


def parse_ks(text: str) -> tuple[int, ...]:
    """``"5,10,25"`` → ``(5, 10, 25)``; argparse turns a ValueError into a usage error."""
    try:
        ks = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k takes comma-separated positive integers, got {text!r}") from None
    if not ks or ks[0] < 1 or ks[-1] > 500:
        raise argparse.ArgumentTypeError(f"--k takes comma-separated integers from 1 to 500, got {text!r}")
    return ks


def parse_setting(text: str) -> tuple[str, str]:
    """``"session_weight=0"`` or ``"HMEM_SESSION_WEIGHT=0"`` → ``("session_weight", "0")``;
    the value keeps any later ``=`` (a URL). The name and value are checked when the run starts."""
    name, sep, value = text.partition("=")
    name = name.strip().lower().removeprefix("hmem_")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--set takes NAME=VALUE (a Settings field, e.g. session_weight=0), got {text!r}")
    return name, value.strip()


def parse_answer_budgets(text: str) -> tuple[int, ...]:
    """``"500,1000"`` → ``(500, 1000)``; an argparse usage error for anything but positive integers."""
    usage = f"--answer-budgets takes comma-separated positive token counts such as 500,1000,2000,4000, got {text!r}"
    try:
        budgets = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(usage) from None
    if not budgets or budgets[0] < 1:
        raise argparse.ArgumentTypeError(usage)
    return budgets


def parse_context_k(text: str) -> int:
    """``"100"`` → ``100``; a usage error outside 1..1000."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--context-k takes an integer from 1 to 1000, got {text!r}") from None
    if not 1 <= k <= 1000:
        raise argparse.ArgumentTypeError(f"--context-k takes an integer from 1 to 1000, got {text!r}")
    return k


def parse_configs(text: str) -> tuple[str, ...]:
    from hmem.eval.runner import ABLATIONS, CONFIG_NAMES

    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [n for n in names if n not in CONFIG_NAMES and n not in ABLATIONS and n != "ablation"]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown configuration(s) {unknown or [text]}; choose from {', '.join(CONFIG_NAMES)}, or ablation "
            f"(default and {', '.join(ABLATIONS)}: each ranking stage off in turn)"
        )
    return names


def load_eval_dataset(name: str, path: str | None, corrections: str | None) -> EvalDataset:
    """The dataset named on the command line (LoCoMo defaults to ``../shared/data/locomo``)."""
    from hmem.eval.datasets import default_locomo_dir, load_locomo, load_longmemeval, load_sample

    if corrections is not None and name != "locomo":
        raise InvalidInput("--corrections only applies to --dataset locomo", field="corrections")
    if name == "sample":
        return load_sample(path)
    if name == "locomo":
        return load_locomo(path or default_locomo_dir() / "locomo_dev.json", corrections_path=corrections)
    if path is None:
        raise InvalidInput("--dataset longmemeval needs --path to longmemeval_s.json (or _m / _oracle)", field="path")
    return load_longmemeval(path)


def _run(args: argparse.Namespace) -> int:
    from hmem.eval.report import summary, write_results
    from hmem.eval.runner import ANSWER_BUDGETS, DEFAULT_CONTEXT_BUDGET, run_eval

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    dataset = load_eval_dataset(args.dataset, args.path, args.corrections)
    run = run_eval(
        dataset,
        configs=args.configs,
        ks=args.ks,
        workdir=args.workdir,
        limit_conversations=args.limit_conversations,
        limit_questions=args.limit_questions,
        context_budget=args.budget or DEFAULT_CONTEXT_BUDGET,
        answer_budgets=args.answer_budgets or ANSWER_BUDGETS,
        context_k=args.context_k,
        settings=dict(args.settings),
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    paths = write_results(run, args.out) if args.out else {}
    out = Output(args.json)
    data = summary(run)
    if paths:
        data["files"] = {k: str(v) for k, v in paths.items()}
    if args.json:
        print(json.dumps(data, ensure_ascii=False))
        return 0
    out.emit(data, lambda console: _render(console, run, paths))
    return 0


def _render(console: Console, run: EvalRun, paths: dict[str, Any]) -> None:
    from rich.table import Table

    from hmem.eval.metrics import REFERENCE_NAMES, REFERENCES
    from hmem.eval.report import ANSWER_HEADERS, answer_rows, settings_line

    ks = run.ks
    console.print(
        f"[bold]{run.dataset}[/bold]: {run.questions} questions, {run.ingest.turns} turns "
        f"({run.ingest.conversations} conversations) ingested in {run.ingest.seconds:.1f} s "
        f"({run.ingest.turns_per_s:.0f} turns/s)"
    )
    if run.settings:
        console.print(f"settings beside the embedded default: {settings_line(run.settings).replace('`', '')}")
    table = Table(show_lines=False)
    for col in ["configuration", *[f"R@{k}" for k in ks], "MRR", "nDCG@10", "p50 ms", "p95 ms", "n"]:
        table.add_column(col, justify="left" if col == "configuration" else "right")

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{100 * v:.1f}"

    for name, result in run.configs.items():
        m, lat = result.report.overall, result.report.latency
        table.add_row(name, *[pct(m.recall[k]) for k in ks], pct(m.mrr), pct(m.ndcg),
                      f"{lat.p50 * 1000:.1f}" if lat else "–", f"{lat.p95 * 1000:.1f}" if lat else "–", str(m.n))
    ref = REFERENCES.get(run.dataset)
    if ref:
        table.add_row(REFERENCE_NAMES[run.dataset], *[pct(ref.get(f"recall@{k}")) for k in ks], "", "", "", "", "")
    console.print(table)
    focus = "default" if "default" in run.configs else next(iter(run.configs))
    cats = Table(title=f"{focus} per category")
    for col in ["category", *[f"R@{k}" for k in ks], "MRR", "n"]:
        cats.add_column(col, justify="left" if col == "category" else "right")
    for cat, m in run.configs[focus].report.per_category.items():
        cats.add_row(cat, *[pct(m.recall[k]) for k in ks], pct(m.mrr), f"{m.n}" + (f" +{m.no_evidence}∅" if m.no_evidence else ""))
    console.print(cats)
    for name, result in run.configs.items():
        rows = answer_rows(result)
        if not rows:
            continue
        answers = Table(title=f"{name}: answer in context per budget (%)")
        for col in ANSWER_HEADERS:
            answers.add_column(col, justify="right")
        for row in rows:
            answers.add_row(*row)
        console.print(answers)
    for kind, path in paths.items():
        console.print(f"{kind}: {path}")
