"""The ranking-stage ablation table: each stage off in turn, on every set, per category.

Reads the ``hmem eval --configs ablation,dense --json`` outputs of several sets and
prints a Markdown report: R@10 of ``default`` and of each ``without-<stage>`` per set
(with the difference), the same per category, and the macro average over the sets. The
rule of the recall-generalization issue: a stage stays in the default only if removing
it lowers the macro average and it costs no set more than 1 point (that is, removing it
raises no set by more than 1 point).

    .venv/bin/hmem eval --dataset locomo --configs ablation,dense --json > /tmp/abl-locomo.json
    .venv/bin/python bench/ablation_table.py LoCoMo=/tmp/abl-locomo.json sample=/tmp/abl-sample.json ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

K = "recall@10"


def _r(cfg: dict[str, Any], category: str | None = None) -> float | None:
    block = cfg if category is None else cfg["per_category"].get(category)
    value = None if block is None else block.get(K)
    return None if value is None else 100 * value


def _fmt(value: float | None, base: float | None = None) -> str:
    if value is None:
        return "–"
    if base is None:
        return f"{value:.1f}"
    return f"{value:.1f} ({value - base:+.1f})"


def render(sets: dict[str, dict[str, Any]]) -> str:
    first = next(iter(sets.values()))["configs"]
    variants = [name for name in first if name.startswith("without-") or name == "no-stages"]
    lines = ["| configuration | " + " | ".join(sets) + " | macro |", "|---|" + "---|" * (len(sets) + 1)]
    base = {label: _r(run["configs"]["default"]) for label, run in sets.items()}
    rows = ["default", *variants, *(n for n in ("dense", "bm25") if n in first)]
    verdicts = []
    for name in rows:
        values = {label: _r(run["configs"][name]) for label, run in sets.items() if name in run["configs"]}
        macro = sum(v for v in values.values() if v is not None) / len(values)
        macro_base = sum(v for v in base.values() if v is not None) / len(base)
        cells = [_fmt(values.get(label), None if name == "default" else base[label]) for label in sets]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {_fmt(macro, None if name == 'default' else macro_base)} |")
        if name.startswith("without-"):
            worst_gain = max((values[lb] or 0) - (base[lb] or 0) for lb in values)
            helps = macro < macro_base
            keep = helps and worst_gain <= 1.0
            why = (f"removing it: macro {macro - macro_base:+.1f}, largest rise on one set {worst_gain:+.1f}")
            verdicts.append(f"- `{name[len('without-'):]}`: **{'stays' if keep else 'goes'}** ({why})")
    out = ["R@10 (turn level); in brackets the change against `default` of the same set.", "", *lines, "",
           "Verdicts (a stage stays if it helps the macro average and costs no set more than 1 point):", "",
           *verdicts, ""]
    for label, run in sets.items():
        configs = run["configs"]
        cats = [c for c, m in configs["default"]["per_category"].items() if m.get(K) is not None]
        out += [f"### {label}: R@10 per category", "",
                "| configuration | " + " | ".join(f"{c} (n={configs['default']['per_category'][c]['questions']})"
                                                  for c in cats) + " |",
                "|---|" + "---|" * len(cats)]
        for name in ["default", *variants]:
            cells = [_fmt(_r(configs[name], c), None if name == "default" else _r(configs["default"], c)) for c in cats]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="+", metavar="LABEL=RESULTS.json")
    args = parser.parse_args()
    sets = {}
    for item in args.sets:
        label, _, path = item.partition("=")
        sets[label] = json.loads(Path(path).read_text(encoding="utf-8"))
    print(render(sets))


if __name__ == "__main__":
    main()
