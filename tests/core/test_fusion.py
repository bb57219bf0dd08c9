"""Pure fusion functions (hmem.longterm.fusion) and dedup keys (hmem.longterm.dedup)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.longterm import fusion
from hmem.longterm.dedup import dedup_key, normalize_text

ids = st.lists(st.sampled_from("abcdefghij"), unique=True, max_size=10)


def test_rrf_is_the_published_formula() -> None:
    fused = fusion.rrf({"lex": ["a", "b"], "dense": ["b"]})
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


@given(ids, ids)
def test_rrf_agreement_beats_a_single_vote_at_the_same_rank(lex: list[str], dense: list[str]) -> None:
    fused = fusion.rrf({"lex": lex, "dense": dense})
    assert set(fused) == set(lex) | set(dense)
    for doc in set(lex) & set(dense):
        for other in set(lex) - set(dense):
            if lex.index(other) >= lex.index(doc):
                assert fused[doc] > fused[other]


@given(st.dictionaries(st.text(max_size=3), st.floats(-1e6, 1e6), max_size=8))
def test_min_max_maps_into_unit_interval(scores: dict[str, float]) -> None:
    out = fusion.min_max(scores)
    assert set(out) == set(scores)
    assert all(0.0 <= v <= 1.0 for v in out.values())
    if scores and max(scores.values()) - min(scores.values()) > 1e-9:
        assert max(out.values()) == 1.0 and min(out.values()) == 0.0
        best = max(scores, key=scores.__getitem__)
        assert out[best] == 1.0


def test_weighted_fusion_respects_weights_and_missing_retrievers() -> None:
    scores = {"lexical": {"a": 10.0, "b": 0.0}, "dense": {"b": 0.9, "c": 0.1}}
    lex_heavy = fusion.weighted(scores, {"lexical": 0.9, "dense": 0.1})
    dense_heavy = fusion.weighted(scores, {"lexical": 0.1, "dense": 0.9})
    assert max(lex_heavy, key=lex_heavy.__getitem__) == "a"
    assert max(dense_heavy, key=dense_heavy.__getitem__) == "b"
    assert dense_heavy["c"] == 0.0  # worst of its only retriever


def test_recency_halves_every_half_life_and_never_boosts_the_future() -> None:
    day = 86400.0
    assert fusion.recency_factor(0, day) == 1.0
    assert fusion.recency_factor(day, day) == pytest.approx(0.5)
    assert fusion.recency_factor(3 * day, day) == pytest.approx(0.125)
    assert fusion.recency_factor(-day, day) == 1.0
    with pytest.raises(ValueError):
        fusion.recency_factor(1, 0)


def test_importance_factor_is_monotonic() -> None:
    assert fusion.importance_factor(0.0, 2.0) == 1.0
    assert fusion.importance_factor(0.9, 2.0) > fusion.importance_factor(0.1, 2.0)


def test_mmr_lambda_one_is_relevance_order_and_low_lambda_diversifies() -> None:
    vecs = {"a": [1.0, 0.0], "a2": [0.999, math.sqrt(1 - 0.999**2)], "b": [0.0, 1.0]}
    rel = {"a": 1.0, "a2": 0.95, "b": 0.5}
    assert [d for d, _ in fusion.mmr(["a", "a2", "b"], rel, vecs, 3, 1.0)] == ["a", "a2", "b"]
    diverse = [d for d, _ in fusion.mmr(["a", "a2", "b"], rel, vecs, 2, 0.3)]
    assert diverse == ["a", "b"]


@given(st.integers(1, 12), st.floats(0, 1), st.integers(0, 2**31))
def test_mmr_returns_distinct_candidates(k: int, lam: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(8, 4))
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    cands = [f"d{i}" for i in range(8)]
    picked = fusion.mmr(
        cands, {c: float(rng.random()) for c in cands}, dict(zip(cands, m.tolist(), strict=True)), k, lam
    )
    names = [d for d, _ in picked]
    assert len(names) == min(k, 8) == len(set(names))


def test_dedup_key_normalises_case_space_width_and_final_punctuation() -> None:
    assert dedup_key("I like tea.") == dedup_key("  i LIKE\ttea ")
    assert dedup_key("我喜欢喝茶。") == dedup_key("我喜欢喝茶")
    assert dedup_key("ＡＢＣ") == dedup_key("abc")  # full-width (NFKC)
    assert dedup_key("I like tea") != dedup_key("I like coffee")
    assert normalize_text("Hello,  World!") == "hello, world"


def test_query_coverage_is_the_best_score_over_the_questions_idfs() -> None:
    # Both telling words found in one text of average length: full coverage.
    assert fusion.query_coverage(8.1, {"gerald": 1, "tortoise": 2}, 100) == 1.0
    # A paraphrase: the archive lacks two words, the best match holds only a common one.
    assert fusion.query_coverage(0.9, {"parents": 0, "city": 0, "live": 30}, 100) < 0.1
    # Half the telling words matched: about half.
    half = fusion.query_coverage(math.log(99.5 / 1.5), {"gerald": 1, "lamp": 1}, 100)
    assert half == pytest.approx(0.5)
    # No question term rare enough to tell (two documents both holding it; an empty
    # archive): undefined, so BM25 keeps its weight; a negative score covers nothing.
    assert fusion.query_coverage(0.0, {"jazz": 2}, 2) == 1.0
    assert fusion.query_coverage(3.0, {"jazz": 0}, 0) == 1.0
    assert fusion.query_coverage(-0.5, {"gerald": 1}, 100) == 0.0
