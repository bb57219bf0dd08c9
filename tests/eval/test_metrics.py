"""Retrieval metrics on hand-made cases whose answers are worked out by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.errors import InvalidInput
from hmem.eval.metrics import (
    QuestionResult,
    aggregate,
    dedupe,
    latency_summary,
    ndcg_at_k,
    percentile,
    recall_all_at_k,
    recall_at_k,
    reciprocal_rank,
)

GOLD = {"g1", "g2"}


def test_recall_counts_the_fraction_of_gold_in_top_k() -> None:
    ranked = ["x", "g1", "y", "z", "g2"]
    assert recall_at_k(ranked, GOLD, 1) == 0.0
    assert recall_at_k(ranked, GOLD, 2) == 0.5
    assert recall_at_k(ranked, GOLD, 4) == 0.5
    assert recall_at_k(ranked, GOLD, 5) == 1.0


def test_duplicates_count_once_and_do_not_take_slots() -> None:
    # Three chunks of turn x, then g1: after dedupe g1 is the 2nd distinct turn.
    ranked = ["x", "x", "x", "g1", "g1", "g2"]
    assert dedupe(ranked) == ["x", "g1", "g2"]
    assert recall_at_k(ranked, GOLD, 2) == 0.5
    assert recall_at_k(ranked, GOLD, 3) == 1.0
    assert reciprocal_rank(ranked, GOLD) == 0.5
    # a duplicated gold hit is not double counted
    assert recall_at_k(["g1", "g1", "g1"], GOLD, 3) == 0.5


def test_k_larger_than_the_list_uses_the_whole_list() -> None:
    assert recall_at_k(["g1"], GOLD, 50) == 0.5
    assert recall_all_at_k(["g2", "g1"], GOLD, 50) == 1.0
    assert recall_at_k([], GOLD, 10) == 0.0


def test_recall_all_needs_every_gold_id() -> None:
    assert recall_all_at_k(["g1", "x", "g2"], GOLD, 2) == 0.0
    assert recall_all_at_k(["g1", "x", "g2"], GOLD, 3) == 1.0


def test_empty_evidence_has_no_score() -> None:
    for value in (
        recall_at_k(["a"], [], 5),
        recall_all_at_k(["a"], set(), 5),
        reciprocal_rank(["a"], ()),
        ndcg_at_k(["a"], [], 10),
    ):
        assert value is None


def test_reciprocal_rank() -> None:
    assert reciprocal_rank(["g2", "g1"], GOLD) == 1.0
    assert reciprocal_rank(["a", "b", "c", "g2"], GOLD) == 0.25
    assert reciprocal_rank(["a", "b"], GOLD) == 0.0


def test_ndcg_binary_relevance() -> None:
    assert ndcg_at_k(["g1", "g2", "x"], GOLD, 10) == pytest.approx(1.0)
    # one of two gold at rank 2: DCG = 1/log2(3); ideal = 1 + 1/log2(3)
    assert ndcg_at_k(["x", "g1"], GOLD, 10) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    # gold beyond the cut-off does not count
    assert ndcg_at_k(["x", "y", "g1"], GOLD, 2) == 0.0
    # single gold at rank 3
    assert ndcg_at_k(["x", "y", "g"], {"g"}, 10) == pytest.approx(1 / math.log2(4))


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "5"])
def test_bad_k_is_rejected(k: object) -> None:
    with pytest.raises(InvalidInput) as exc:
        recall_at_k(["a"], {"a"}, k)  # type: ignore[arg-type]
    assert exc.value.field == "k"


def test_aggregate_overall_per_category_and_no_evidence() -> None:
    results = [
        QuestionResult("q1", "single-hop", ("a",), ("a", "b"), 0.010),
        QuestionResult("q2", "single-hop", ("c",), ("a", "b", "c"), 0.020),
        QuestionResult("q3", "multi-hop", ("a", "b"), ("b", "x", "y"), 0.030),
        QuestionResult("q4", "abstention", (), ("a",), 0.040),
    ]
    report = aggregate(results, ks=(1, 3))
    o = report.overall
    assert (o.n, o.no_evidence) == (3, 1)
    # recall@1: q1 1, q2 0, q3 0.5 -> mean 0.5 ; recall@3: 1, 1, 0.5
    assert o.recall[1] == pytest.approx(0.5)
    assert o.recall[3] == pytest.approx(2.5 / 3)
    assert o.recall_all[3] == pytest.approx(2 / 3)
    assert o.mrr == pytest.approx((1 + 1 / 3 + 1) / 3)
    single = report.per_category["single-hop"]
    assert single.n == 2 and single.recall[1] == 0.5
    abst = report.per_category["abstention"]
    assert (abst.n, abst.no_evidence, abst.recall[1], abst.mrr) == (0, 1, None, None)
    assert list(report.per_category) == ["single-hop", "multi-hop", "abstention"]
    # latency covers all four questions, abstention included
    assert report.latency is not None and report.latency.n == 4
    assert report.latency.p50 == pytest.approx(0.025)
    d = report.to_dict()
    assert d["recall@1"] == pytest.approx(0.5) and d["questions"] == 3 and d["no_evidence"] == 1
    assert d["per_category"]["abstention"]["recall@3"] is None  # type: ignore[index]


def test_aggregate_rejects_duplicate_questions_and_bad_ks() -> None:
    r = QuestionResult("q1", "c", ("a",), ("a",))
    with pytest.raises(InvalidInput):
        aggregate([r, r])
    with pytest.raises(InvalidInput):
        aggregate([r], ks=())
    with pytest.raises(InvalidInput):
        aggregate([r], ks=(5, 0))


def test_percentile_matches_linear_interpolation() -> None:
    values = [0.05, 0.01, 0.03, 0.02, 0.04]
    assert percentile(values, 50) == pytest.approx(0.03)
    assert percentile(values, 95) == pytest.approx(0.048)
    assert percentile(values, 0) == 0.01 and percentile(values, 100) == 0.05
    assert percentile([7.0], 95) == 7.0


@pytest.mark.parametrize("bad", [[-0.1], [float("nan")], [float("inf")]])
def test_latency_rejects_impossible_values(bad: list[float]) -> None:
    with pytest.raises(InvalidInput):
        latency_summary(bad)


def test_latency_of_nothing_is_none() -> None:
    assert latency_summary([]) is None
    with pytest.raises(InvalidInput):
        percentile([], 50)


ids = st.lists(st.sampled_from([f"t{i}" for i in range(12)]), max_size=20)


@given(retrieved=ids, gold=st.sets(st.sampled_from([f"t{i}" for i in range(12)]), min_size=1, max_size=5))
def test_properties(retrieved: list[str], gold: set[str]) -> None:
    previous = 0.0
    for k in (1, 2, 5, 10, 25):
        r = recall_at_k(retrieved, gold, k)
        assert r is not None and 0.0 <= r <= 1.0
        assert r >= previous  # monotone in k
        previous = r
        assert recall_all_at_k(retrieved, gold, k) == (1.0 if r == 1.0 else 0.0)
        assert recall_at_k(retrieved + retrieved, gold, k) == r  # duplicates never change scores
    n = ndcg_at_k(retrieved, gold, 10)
    assert n is not None and 0.0 <= n <= 1.0 + 1e-12
    rr = reciprocal_rank(retrieved, gold)
    assert rr is not None and (rr == 0.0) == (not gold & set(retrieved))
