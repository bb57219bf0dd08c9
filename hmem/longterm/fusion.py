"""Score fusion for hybrid recall: pure functions on ids, ranks and scores.

* :func:`rrf` — reciprocal rank fusion, ``sum 1 / (k + rank)`` with k = 60.
* :func:`weighted` — min-max normalise each retriever's scores to [0, 1] over its
  own candidates, then a weighted sum (a missing retriever contributes 0).
* :func:`query_coverage` — how much of the question the best BM25 match covers, 0 to 1:
  recall weighs BM25 by it, so a question whose words the archive does not hold (a
  paraphrase, another register) leans on dense retrieval instead of on chance matches.
* :func:`recency_factor` — ``0.5 ** (age / half_life)``: 1 for a new item, 0.5 at one
  half-life. Multiplies the fused score.
* :func:`importance_factor` — ``1 + weight * importance``. Multiplies too, so the
  boost is scale-free (RRF scores are ~0.03, weighted scores ~1).
* :func:`mmr` — maximal marginal relevance re-ranking for diversity.

Example::

    >>> fused = rrf({"lexical": ["a", "b"], "dense": ["b", "c"]})
    >>> max(fused, key=fused.__getitem__)
    'b'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["RRF_K", "importance_factor", "min_max", "mmr", "query_coverage", "recency_factor", "rrf", "weighted"]

RRF_K = 60


def rrf(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion of several best-first id lists (1-based ranks)."""
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    out: dict[str, float] = {}
    for ids in rankings.values():
        for rank, doc_id in enumerate(ids, start=1):
            out[doc_id] = out.get(doc_id, 0.0) + 1.0 / (k + rank)
    return out


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1]; all-equal scores (or a single one) map to 1."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - lo) / (hi - lo) for key, value in scores.items()}


def weighted(scores: Mapping[str, Mapping[str, float]], weights: Mapping[str, float]) -> dict[str, float]:
    """Weighted sum of per-retriever min-max normalised scores."""
    out: dict[str, float] = {}
    for name, per_id in scores.items():
        w = weights.get(name, 0.0)
        for doc_id, value in min_max(per_id).items():
            out[doc_id] = out.get(doc_id, 0.0) + w * value
    return out


def query_coverage(top_score: float, doc_freqs: Mapping[str, int], documents: int) -> float:
    """How much of a question the best BM25 match covers, 0 to 1: its score over the score
    of a text of average length holding each of the question's terms once (the sum of
    their idfs; a term no document holds counts in full — nothing can match it).

    Min-max fusion gives the best BM25 match of *any* question full marks. When the
    archive holds the question's words, that match is evidence; when it holds none of the
    telling ones, the best match shares a common word by chance, and the coverage says so.

    >>> query_coverage(8.1, {"gerald": 1, "tortoise": 2}, 100)   # both words found together
    1.0
    >>> round(query_coverage(0.9, {"parents": 0, "city": 0, "live": 30}, 100), 2)  # a paraphrase
    0.08
    """
    full = sum(max(math.log((documents - held + 0.5) / (held + 0.5)), 0.0) for held in doc_freqs.values())
    if documents <= 0 or full <= 0:
        return 1.0  # no question word is rare enough to tell (a tiny archive): no evidence either way
    return min(1.0, max(top_score, 0.0) / full)


def recency_factor(age_seconds: float, half_life_seconds: float) -> float:
    """``0.5 ** (age / half_life)``; a future timestamp (negative age) counts as new."""
    if half_life_seconds <= 0 or not math.isfinite(half_life_seconds):
        raise ValueError("half_life must be a positive, finite duration")
    return float(0.5 ** (max(age_seconds, 0.0) / half_life_seconds))


def importance_factor(importance: float, weight: float) -> float:
    """``1 + weight * importance`` (importance in [0, 1])."""
    return 1.0 + weight * importance


def mmr(
    candidates: Sequence[str],
    relevance: Mapping[str, float],
    vectors: Mapping[str, Sequence[float]],
    k: int,
    lambda_: float,
) -> list[tuple[str, float]]:
    """Greedy MMR: pick ``argmax λ·rel(d) − (1−λ)·max_sim(d, picked)``.

    ``relevance`` is min-max normalised first; vectors must be unit length (cosine =
    dot). Returns ``(id, mmr_score)`` in pick order. λ = 1 is plain relevance order.
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError("mmr lambda must be in [0, 1]")
    ids = [c for c in candidates if c in vectors]
    if not ids or k <= 0:
        return []
    rel = min_max({c: relevance[c] for c in ids})
    mat = np.asarray([vectors[c] for c in ids], dtype=np.float64)
    sims = mat @ mat.T
    rel_arr = np.asarray([rel[c] for c in ids])
    picked: list[int] = []
    out: list[tuple[str, float]] = []
    max_sim = np.full(len(ids), -np.inf)
    remaining = np.ones(len(ids), dtype=bool)
    for _ in range(min(k, len(ids))):
        redundancy = np.where(np.isfinite(max_sim), max_sim, 0.0)
        score = lambda_ * rel_arr - (1.0 - lambda_) * redundancy
        score = np.where(remaining, score, -np.inf)
        best = int(np.argmax(score))
        picked.append(best)
        out.append((ids[best], float(score[best])))
        remaining[best] = False
        max_sim = np.maximum(max_sim, sims[best])
    return out
