"""Results of an evaluation run as JSON, a markdown report, and files in a folder.

- :func:`summary` — the one JSON object ``hmem eval --json`` prints: per
  configuration ``recall@k`` (every k), ``recall_all@k``, ``mrr``, ``ndcg@10``,
  ``questions``, ``latency_ms`` (``p50``/``p95``/``mean``) and ``per_category`` with
  the same metrics. Metric values are fractions in [0, 1]. The ``answer``
  configuration adds ``context_k`` and ``answers``: per budget (``"500"`` …)
  ``strict``, ``loose``, ``evidence`` (fractions), ``mean_tokens``, ``questions`` and
  ``per_category`` with the same keys. ``settings`` (only when the run chose some) lists
  the settings the Memory was opened with beyond the embedded default.
- :func:`to_markdown` — an overall table (one row per configuration, plus the
  published reference when there is one), the "answer in context per budget" table
  when the ``answer`` configuration ran, and one per-category table per configuration;
  numbers in percent.
- :func:`write_results` — ``results.json`` (summary + per-question retrieved turns),
  ``results.md`` and ``recall_at_k.png`` in a folder.

Example::

    >>> from hmem.eval.report import REFERENCES
    >>> REFERENCES["locomo"]["recall@10"]  # re-exported from hmem.eval.metrics
    0.662
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hmem.eval.metrics import REFERENCE_NAMES, REFERENCES, MetricSummary
from hmem.eval.runner import ConfigResult, EvalRun

__all__ = ["ANSWER_HEADERS", "REFERENCES", "REFERENCE_NAMES", "answer_rows", "settings_line", "summary", "to_markdown",
           "write_results"]

#: Columns of the answer-in-context table (markdown report and ``hmem eval``).
ANSWER_HEADERS: tuple[str, ...] = ("budget", "strict", "loose", "evidence", "mean tokens", "questions")


def _metrics(m: MetricSummary) -> dict[str, Any]:
    out: dict[str, Any] = {f"recall@{k}": v for k, v in m.recall.items()}
    out.update({f"recall_all@{k}": v for k, v in m.recall_all.items()})
    out["mrr"] = m.mrr
    out[f"ndcg@{m.ndcg_k}"] = m.ndcg
    out["questions"] = m.n
    out["no_evidence"] = m.no_evidence
    return out


def _config_summary(result: ConfigResult) -> dict[str, Any]:
    report = result.report
    out = _metrics(report.overall)
    lat = report.latency
    out["latency_ms"] = (
        {"p50": lat.p50 * 1000, "p95": lat.p95 * 1000, "mean": lat.mean * 1000, "n": lat.n} if lat else None
    )
    out["description"] = result.config.description
    out.update(result.extra)
    out["per_category"] = {name: _metrics(m) for name, m in report.per_category.items()}
    if result.answers is not None:
        out["context_k"] = result.answers.k
        out["answers"] = {str(b): s.to_dict() for b, s in result.answers.summaries.items()}
    return out


def answer_rows(result: ConfigResult) -> list[list[str]]:
    """The rows of the answer-in-context table (:data:`ANSWER_HEADERS`, percent), one per
    budget; empty for a configuration without the measure."""
    if result.answers is None:
        return []
    rows: list[list[str]] = []
    for budget, s in result.answers.summaries.items():
        o = s.overall
        tokens = "–" if o.mean_tokens is None else f"{o.mean_tokens:.0f}"
        rows.append([str(budget), _pct(o.strict), _pct(o.loose), _pct(o.evidence), tokens, str(o.questions)])
    return rows


def summary(run: EvalRun) -> dict[str, Any]:
    """The JSON-ready summary of ``run`` (see the module docstring for its shape)."""
    out: dict[str, Any] = {
        "dataset": run.dataset,
        "ks": list(run.ks),
        "questions": run.questions,
        "context_budget": run.context_budget,
        "ingest": run.ingest.to_dict(),
        "configs": {name: _config_summary(result) for name, result in run.configs.items()},
    }
    if run.settings:
        out["settings"] = dict(run.settings)
    if run.dataset in REFERENCES:
        out["reference"] = {"name": REFERENCE_NAMES[run.dataset], **REFERENCES[run.dataset]}
    return out


def settings_line(settings: Mapping[str, Any]) -> str:
    """``session_weight=0.0, sentence_keys=False`` (in backticks): the settings of a run, in one line."""
    return ", ".join(f"`{name}={value}`" for name, value in settings.items())


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def to_markdown(run: EvalRun) -> str:
    """A markdown report: overall per configuration, then per category for each."""
    ks = run.ks
    head = ["configuration", *[f"R@{k}" for k in ks], "MRR", "nDCG@10", "p50 ms", "p95 ms", "questions"]
    lines = [
        f"### {run.dataset}: {run.questions} questions, {run.ingest.turns} turns in "
        f"{run.ingest.conversations} conversations",
        "",
        *([f"Settings beside the embedded default: {settings_line(run.settings)}", ""] if run.settings else []),
        _row(head),
        _row(["---"] * len(head)),
    ]
    for name, result in run.configs.items():
        m, lat = result.report.overall, result.report.latency
        lines.append(_row([
            f"`{name}`", *[_pct(m.recall[k]) for k in ks], _pct(m.mrr), _pct(m.ndcg),
            f"{lat.p50 * 1000:.1f}" if lat else "–", f"{lat.p95 * 1000:.1f}" if lat else "–", str(m.n),
        ]))
    ref = REFERENCES.get(run.dataset)
    if ref:
        lines.append(_row([
            REFERENCE_NAMES[run.dataset], *[_pct(ref.get(f"recall@{k}")) for k in ks], "–", "–", "–", "–", "–",
        ]))
    lines += ["", "R@k = mean fraction of a question's gold turns among the first k distinct retrieved turns "
              "(questions without evidence excluded); latency per query."]
    if "context" in run.configs:
        extra = run.configs["context"].extra
        lines.append(
            f"`context` = gold turns inside `Memory.context()` at a {run.context_budget}-token budget "
            f"(mean {extra.get('mean_turns_in_context', 0):.1f} turns, "
            f"{extra.get('mean_context_tokens', 0):.0f} tokens per prompt)."
        )
    for name, result in run.configs.items():
        rows = answer_rows(result)
        if not rows or result.answers is None:
            continue
        depth = "its default depth" if result.answers.k is None else f"k={result.answers.k}"
        lines += ["", f"#### `{name}`: answer in context per budget (`Memory.context`, {depth})", "",
                  _row(list(ANSWER_HEADERS)), _row(["---"] * len(ANSWER_HEADERS)), *map(_row, rows), "",
                  "strict = the normalised gold answer is in the prompt; loose = at least 80 % of its content "
                  "words are; evidence = share of gold turns kept in the recalled tier; dates match in any "
                  "common format. Abstention and adversarial questions are not counted."]
    for name, result in run.configs.items():
        lines += ["", f"#### `{name}` per category — {result.config.description}", ""]
        chead = ["category", *[f"R@{k}" for k in ks], "MRR", "nDCG@10", "questions"]
        lines += [_row(chead), _row(["---"] * len(chead))]
        for cat, m in [*result.report.per_category.items(), ("**all**", result.report.overall)]:
            lines.append(_row([cat, *[_pct(m.recall[k]) for k in ks], _pct(m.mrr), _pct(m.ndcg),
                               f"{m.n}" + (f" (+{m.no_evidence} without evidence)" if m.no_evidence else "")]))
    return "\n".join(lines) + "\n"


def write_results(run: EvalRun, out_dir: str | Path, *, plot: bool = True) -> dict[str, Path]:
    """Write ``results.json``, ``results.md`` and (with matplotlib) ``recall_at_k.png``
    into ``out_dir`` (created if needed); return the paths written."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    full = summary(run)
    full["questions_detail"] = {
        name: [
            {"id": r.question_id, "category": r.category, "gold": list(r.gold), "retrieved": list(r.retrieved),
             "latency_ms": None if r.latency_s is None else r.latency_s * 1000}
            for r in result.results
        ]
        for name, result in run.configs.items()
    }
    full["answers_detail"] = {
        name: [{"id": r.question_id, "category": r.category, "budget": r.budget, "strict": r.strict, "loose": r.loose,
                "evidence": r.evidence, "tokens": r.tokens} for r in result.answers.records]
        for name, result in run.configs.items() if result.answers is not None
    }
    paths = {"json": folder / "results.json", "markdown": folder / "results.md"}
    paths["json"].write_text(json.dumps(full, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    paths["markdown"].write_text(to_markdown(run), encoding="utf-8")
    if plot:
        from hmem.eval.plot import plot_recall_curves

        paths["plot"] = plot_recall_curves(run, folder / "recall_at_k.png")
    return paths
