"""recall@k curves per configuration as a PNG (matplotlib, headless Agg backend).

The curve is computed at every k from 1 to the largest requested k from the
per-question retrieved lists (so it is smooth, not just the 4 reported points); the
reported ks are marked, and a published reference (LoCoMo's DRAGON) is drawn as
dashed points when the dataset has one.

Example::

    >>> plot_recall_curves(run, "results/recall_at_k.png")  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hmem.errors import ConfigError
from hmem.eval.metrics import recall_at_k
from hmem.eval.runner import EvalRun

__all__ = ["plot_recall_curves", "recall_curve"]


def recall_curve(run: EvalRun, config: str) -> list[float]:
    """Mean recall@k (percent) for k = 1 … max(run.ks) of one configuration."""
    results = [r for r in run.configs[config].results if r.gold]
    top = max(run.ks)
    if not results:
        return [0.0] * top
    out = []
    for k in range(1, top + 1):
        values = [recall_at_k(r.retrieved, r.gold, k) or 0.0 for r in results]
        out.append(100 * sum(values) / len(values))
    return out


def plot_recall_curves(run: EvalRun, path: str | Path, *, title: str | None = None) -> Path:
    """Draw recall@k per configuration into ``path`` (PNG) and return the path."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # headless: never needs a display
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("plots need matplotlib: `pip install hmem[eval]`") from None
    from hmem.eval.metrics import REFERENCE_NAMES, REFERENCES

    top = max(run.ks)
    xs = list(range(1, top + 1))
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    styles: dict[str, dict[str, Any]] = {"default": {"linewidth": 2.8, "color": "black"}, "context": {"linestyle": ":", "linewidth": 2.0}}
    for name in run.configs:
        ys = recall_curve(run, name)
        line = ax.plot(xs, ys, label=f"{name} (R@{run.ks[-1]} {ys[-1]:.1f})", **styles.get(name, {"linewidth": 1.6}))
        ax.scatter(list(run.ks), [ys[k - 1] for k in run.ks], color=line[0].get_color(), s=18, zorder=3)
    ref = REFERENCES.get(run.dataset)
    if ref:
        pts = [(k, 100 * ref[f"recall@{k}"]) for k in run.ks if f"recall@{k}" in ref]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "--o", color="dimgray", linewidth=1.4, markersize=5,
                    label=REFERENCE_NAMES[run.dataset])
    ax.set_xlabel("k (distinct turns retrieved)")
    ax.set_ylabel("recall@k (%)")
    ax.set_xlim(1, top)
    ax.set_ylim(0, 100)
    ax.set_xticks(sorted({1, *run.ks}))
    ax.grid(True, alpha=0.3)
    ax.set_title(title or f"{run.dataset}: turn-level recall@k, {run.questions} questions")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out
