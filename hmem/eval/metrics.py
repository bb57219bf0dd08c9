"""Retrieval-quality metrics: pure functions on id lists, no I/O.

Definitions (``gold`` = a question's evidence turn ids, ``retrieved`` = the ranked
turn ids a configuration returned for it):

- **Deduplication first.** ``retrieved`` is reduced to the first occurrence of each
  id before anything is scored: when several chunks (or a turn and a fact extracted
  from it) map to one turn, that turn counts once, at its best rank, and the list
  is *not* padded — ``k`` then means "the first k distinct turns". Gold ids are a set.
- **recall@k** (LoCoMo paper): ``|gold ∩ top_k| / |gold|`` per question, averaged
  over questions. ``k`` larger than the list just uses the whole list.
- **recall_all@k**: 1 if every gold id is in the top k, else 0; averaged.
- **MRR**: ``1 / rank`` of the first gold id in the whole list (0 if none); averaged.
- **nDCG@k** (default k = 10), binary relevance:
  ``DCG = Σ_{i<k} rel_i / log2(i + 2)`` divided by the ideal DCG of
  ``min(|gold|, k)`` relevant ids at the top.
- Questions with **no gold evidence** (abstention, LoCoMo rows whose evidence was
  all dropped) have no recall: they are excluded from every mean and reported as
  ``no_evidence`` counts, overall and per category.
- **Latency** percentiles use linear interpolation between closest ranks (the
  default of ``numpy.percentile``).

Example::

    >>> recall_at_k(["D1:3", "D1:3", "D2:1", "D4:4"], {"D2:1", "D9:9"}, k=2)
    0.5
    >>> r = QuestionResult("q1", "single-hop", gold=("a",), retrieved=("x", "a"), latency_s=0.01)
    >>> aggregate([r], ks=(1, 2)).overall.recall[2]
    1.0
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from hmem.errors import InvalidInput

__all__ = [
    "DEFAULT_KS",
    "REFERENCES",
    "REFERENCE_NAMES",
    "LatencySummary",
    "MetricSummary",
    "QuestionResult",
    "QuestionScores",
    "Report",
    "aggregate",
    "dedupe",
    "latency_summary",
    "ndcg_at_k",
    "percentile",
    "recall_all_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "score_question",
]

#: Published turn-level numbers to print next to ours (LoCoMo paper, Table 3: DRAGON
#: retriever over dialog turns, all QA of the 10 conversations).
REFERENCES: Mapping[str, Mapping[str, float]] = {
    "locomo": {"recall@5": 0.567, "recall@10": 0.662, "recall@25": 0.767, "recall@50": 0.827},
}
REFERENCE_NAMES: Mapping[str, str] = {"locomo": "DRAGON (LoCoMo paper, dialog turns)"}

DEFAULT_KS: tuple[int, ...] = (5, 10, 25, 50)


def _check_k(k: object) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInput(f"k must be a positive integer, got {k!r}", field="k")
    return k


def dedupe(retrieved: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id, in order.

    >>> dedupe(["a", "b", "a", "c", "b"])
    ['a', 'b', 'c']
    """
    return list(dict.fromkeys(retrieved))


def recall_at_k(retrieved: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """Fraction of ``gold`` among the first ``k`` distinct ``retrieved`` ids; ``None`` if no gold."""
    k = _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    return len(gold_set.intersection(dedupe(retrieved)[:k])) / len(gold_set)


def recall_all_at_k(retrieved: Sequence[str], gold: Collection[str], k: int) -> float | None:
    """1.0 if every gold id is among the first ``k`` distinct ids, else 0.0; ``None`` if no gold."""
    k = _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    return 1.0 if gold_set.issubset(dedupe(retrieved)[:k]) else 0.0


def reciprocal_rank(retrieved: Sequence[str], gold: Collection[str]) -> float | None:
    """``1 / rank`` of the first gold id among distinct ids (0.0 if absent); ``None`` if no gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    for rank, rid in enumerate(dedupe(retrieved), start=1):
        if rid in gold_set:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved: Sequence[str], gold: Collection[str], k: int = 10) -> float | None:
    """Binary-relevance nDCG over the first ``k`` distinct ids; ``None`` if no gold."""
    k = _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return None
    dcg = sum(1.0 / math.log2(i + 2) for i, rid in enumerate(dedupe(retrieved)[:k]) if rid in gold_set)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold_set), k)))
    return dcg / ideal


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation, like ``numpy.percentile``.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    """
    if not values:
        raise InvalidInput("percentile of an empty list is undefined", field="values")
    if not (isinstance(q, int | float) and 0 <= q <= 100):
        raise InvalidInput(f"q must be within 0..100, got {q!r}", field="q")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Query latency in seconds over ``n`` measured queries."""

    n: int
    p50: float
    p95: float
    mean: float
    max: float

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "p50_ms": self.p50 * 1000, "p95_ms": self.p95 * 1000, "mean_ms": self.mean * 1000}


def latency_summary(latencies_s: Iterable[float]) -> LatencySummary | None:
    """p50/p95/mean/max of the latencies (seconds); ``None`` when there are none."""
    values = list(latencies_s)
    for v in values:
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise InvalidInput(f"latencies must be finite non-negative seconds, got {v!r}", field="latency_s")
    if not values:
        return None
    return LatencySummary(
        n=len(values),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        mean=sum(values) / len(values),
        max=max(values),
    )


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """What a configuration retrieved for one question (ranked turn ids, best first)."""

    question_id: str
    category: str
    gold: tuple[str, ...]
    retrieved: tuple[str, ...]
    latency_s: float | None = None


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """Per-question scores; every value is ``None`` for a question without gold evidence."""

    question_id: str
    category: str
    recall: Mapping[int, float | None]
    recall_all: Mapping[int, float | None]
    mrr: float | None
    ndcg: float | None

    @property
    def has_evidence(self) -> bool:
        return self.mrr is not None


def score_question(result: QuestionResult, ks: Sequence[int] = DEFAULT_KS, *, ndcg_k: int = 10) -> QuestionScores:
    """Score one question at every ``k`` in ``ks``."""
    return QuestionScores(
        question_id=result.question_id,
        category=result.category,
        recall={k: recall_at_k(result.retrieved, result.gold, k) for k in ks},
        recall_all={k: recall_all_at_k(result.retrieved, result.gold, k) for k in ks},
        mrr=reciprocal_rank(result.retrieved, result.gold),
        ndcg=ndcg_at_k(result.retrieved, result.gold, ndcg_k),
    )


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """Means over the ``n`` questions that have evidence; ``no_evidence`` were skipped.

    Every mean is ``None`` when ``n == 0`` (e.g. the abstention category).
    """

    n: int
    no_evidence: int
    recall: Mapping[int, float | None]
    recall_all: Mapping[int, float | None]
    mrr: float | None
    ndcg: float | None
    ndcg_k: int = 10

    def to_dict(self) -> dict[str, float | int | None]:
        """Flat JSON-ready dict: ``recall@5``, ``recall_all@5`` …, ``mrr``, ``ndcg@10``, ``questions``."""
        out: dict[str, float | int | None] = {"questions": self.n, "no_evidence": self.no_evidence}
        out.update({f"recall@{k}": v for k, v in self.recall.items()})
        out.update({f"recall_all@{k}": v for k, v in self.recall_all.items()})
        out["mrr"] = self.mrr
        out[f"ndcg@{self.ndcg_k}"] = self.ndcg
        return out


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _summarise(scores: Sequence[QuestionScores], ks: Sequence[int], ndcg_k: int) -> MetricSummary:
    scored = [s for s in scores if s.has_evidence]
    return MetricSummary(
        n=len(scored),
        no_evidence=len(scores) - len(scored),
        recall={k: _mean(s.recall[k] for s in scored) for k in ks},
        recall_all={k: _mean(s.recall_all[k] for s in scored) for k in ks},
        mrr=_mean(s.mrr for s in scored),
        ndcg=_mean(s.ndcg for s in scored),
        ndcg_k=ndcg_k,
    )


@dataclass(frozen=True, slots=True)
class Report:
    """Scores of one configuration: overall, per category, per question, and latency."""

    ks: tuple[int, ...]
    overall: MetricSummary
    per_category: Mapping[str, MetricSummary]
    questions: tuple[QuestionScores, ...]
    latency: LatencySummary | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            **self.overall.to_dict(),
            "per_category": {c: m.to_dict() for c, m in self.per_category.items()},
            "latency": self.latency.to_dict() if self.latency else None,
        }


def aggregate(results: Iterable[QuestionResult], ks: Sequence[int] = DEFAULT_KS, *, ndcg_k: int = 10) -> Report:
    """Score every question and average overall and per category.

    Categories appear in first-seen order. Latency covers every question that has
    one (with or without evidence: abstention queries cost time too).
    Raises :class:`InvalidInput` for a non-positive ``k``, duplicate question ids or
    a bad latency.
    """
    ks_t = tuple(dict.fromkeys(_check_k(k) for k in ks))
    if not ks_t:
        raise InvalidInput("ks must hold at least one k", field="ks")
    _check_k(ndcg_k)
    items = list(results)
    ids = [r.question_id for r in items]
    if len(set(ids)) != len(ids):
        raise InvalidInput("results hold the same question_id twice", field="question_id")
    scores = [score_question(r, ks_t, ndcg_k=ndcg_k) for r in items]
    by_cat: dict[str, list[QuestionScores]] = {}
    for s in scores:
        by_cat.setdefault(s.category, []).append(s)
    return Report(
        ks=ks_t,
        overall=_summarise(scores, ks_t, ndcg_k),
        per_category={c: _summarise(v, ks_t, ndcg_k) for c, v in by_cat.items()},
        questions=tuple(scores),
        latency=latency_summary(r.latency_s for r in items if r.latency_s is not None),
    )
