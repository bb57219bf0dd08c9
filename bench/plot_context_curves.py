"""Answer in context against prompt tokens, before and after, one panel per set (PNG).

Reads the dumps of ``bench_context_depth.py --dump`` from ``--root``: ``before-<set>.jsonl``
(an older checkout, fixed budgets and its default), ``after-<set>.jsonl`` (this checkout,
the same budgets) and ``curve-<set>-price<price>.jsonl`` (this checkout, no budget, the
calibrated stop at several prices: ``--variants 'price=1500;price=3000;…'``). Each point is one setting: mean prompt tokens (x, log
scale) and the share of questions whose gold answer is in the prompt (loose, y). Prints
the table it draws.

Run::

    .venv/bin/python bench/plot_context_curves.py --root /work/depth --out docs/context-curves.png
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from bench_context_depth import Row, _mean, _score

from hmem.assembly.stopping import DEFAULT_STOP

SETS = ("locomo", "sample", "assistant", "assistant-test", "mixed-test")
TITLES = {"locomo": "LoCoMo dev", "sample": "sample (data/)", "assistant": "assistant dev",
          "assistant-test": "assistant test (held out)", "mixed-test": "mixed test (held out)"}


def _points(path: Path) -> dict[int | None, tuple[float, float, int]]:
    rows = [Row(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    return {b: (_mean(c.tokens), 100 * _mean(c.loose), len(c.tokens)) for b, c in _score(rows, None).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("docs/context-curves.png"))
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = [s for s in SETS if (args.root / f"before-{s}.jsonl").exists()]
    fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present), 4), squeeze=False)
    print(f"{'set':<16} {'setting':<22} {'tokens':>7} {'loose %':>8} {'n':>5}")
    for ax, name in zip(axes[0], present, strict=True):
        before = _points(args.root / f"before-{name}.jsonl")
        fixed = sorted(b for b in before if b is not None)
        ax.plot([before[b][0] for b in fixed], [before[b][1] for b in fixed], "o-", color="#999999",
                label="before: fixed budgets")
        if None in before:
            ax.plot(*before[None][:2], "s", color="#666666", markersize=9, label="before: default (window)")
        for b in [None, *fixed]:
            if b in before:
                print(f"{name:<16} {'before ' + ('default' if b is None else str(b)):<22} {before[b][0]:>7.0f} "
                      f"{before[b][1]:>8.1f} {before[b][2]:>5}")
        after_path = args.root / f"after-{name}.jsonl"
        if after_path.exists():
            after = _points(after_path)
            # The default is the curve's point at the default price when the curve has one
            # (an after- dump may predate the last change of the price).
            price = DEFAULT_STOP.tokens_per_answer
            at_default = args.root / f"curve-{name}-price{price:g}.jsonl"
            if at_default.exists():
                after[None] = _points(at_default)[None]
            fixed_after = sorted(b for b in after if b is not None)
            ax.plot([after[b][0] for b in fixed_after], [after[b][1] for b in fixed_after], "o-", color="#1f77b4",
                    label="after: fixed budgets")
            if None in after:
                ax.plot(*after[None][:2], "*", color="#d62728", markersize=16, label="after: default", zorder=5)
            for b in [None, *fixed_after]:
                if b in after:
                    print(f"{name:<16} {'after ' + ('default' if b is None else str(b)):<22} {after[b][0]:>7.0f} "
                          f"{after[b][1]:>8.1f} {after[b][2]:>5}")
        sweep = []
        for path in args.root.glob(f"curve-{name}-price*.jsonl"):
            price = float(re.sub(r"^.*-price([0-9.]+).*$", r"\1", path.stem))
            tokens, loose, n = _points(path)[None]
            sweep.append((price, tokens, loose, n))
        if sweep:
            sweep.sort()
            ax.plot([s[1] for s in sweep], [s[2] for s in sweep], "^--", color="#ff7f0e",
                    label="after: calibrated stop, by price")
            for price, tokens, loose, n in sweep:
                ax.annotate(f"{price:g}", (tokens, loose), fontsize=7, xytext=(3, -9), textcoords="offset points")
                print(f"{name:<16} {'stop, price ' + format(price, 'g'):<22} {tokens:>7.0f} {loose:>8.1f} {n:>5}")
        ax.set_xscale("log")
        ax.axvline(1500, color="#2ca02c", linewidth=0.8, linestyle=":")
        ax.set_title(TITLES.get(name, name))
        ax.set_xlabel("mean prompt tokens")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("answer in context, loose (%)")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
