"""Pseudo-relevance feedback, the pure parts: which words a second round searches for,
how its scores merge with the first round's, and which round each hit is credited to."""

from __future__ import annotations

import pytest

from hmem.errors import ConfigError
from hmem.longterm.feedback import SCAN_CHARS, expansion_terms, merge_round, rounds_of
from hmem.longterm.types import MAX_FEEDBACK_ROUNDS, LongTermConfig

# -- expansion_terms ---------------------------------------------------------------------

POOL = [
    "Melanie: That's great, Caroline! Did you go swimming this week?",
    "Caroline: It was great, my friends were so supportive.",
    "Melanie: Great! My kids loved the museum.",
    "Caroline: Great news, the support group was amazing.",
]


def test_the_bridge_word_of_a_top_hit_is_chosen_and_the_query_words_are_not() -> None:
    top = ["Caroline: This necklace is a gift from my grandma in my home country, Sweden."]
    terms = expansion_terms("Where did Caroline move from? Her home country?", top, POOL, 3)
    assert terms[0] == "sweden"  # a name inside a sentence, in no other candidate
    assert not {"caroline", "home", "country"} & set(terms)  # already asked for


def test_words_every_candidate_shares_are_dropped_specific_ones_kept() -> None:
    top = ["Melanie: Great, we went camping at the beach last weekend."]
    terms = expansion_terms("What did Melanie do?", top, POOL, 10)
    assert {"camping", "beach", "weekend"} <= set(terms)
    assert "great" not in terms  # in every candidate: the conversation's tone, not a lead


def test_words_held_by_several_top_hits_come_first() -> None:
    top = ["We adopted a puppy named Pixel.", "Pixel sleeps all day.", "The weather was sunny."]
    assert expansion_terms("our pets", top, POOL, 1) == ["pixel"]


def test_capitalised_words_inside_a_sentence_are_boosted_but_not_at_its_start() -> None:
    # Four equally rare words: "Lisbon" (capitalised inside the sentence) comes first; the
    # others keep their order of appearance, so "Yesterday" (capitalised only because it
    # starts the sentence) got no boost.
    terms = expansion_terms("trip", ["Yesterday we flew to Lisbon and then porto."], POOL, 10)
    assert terms == ["lisbon", "yesterday", "flew", "porto"]


def test_numbers_are_kept_even_when_short() -> None:
    terms = expansion_terms("when did she move", ["She moved in 22 and again in 2019."], POOL, 5)
    assert "22" in terms and "2019" in terms


def test_short_words_and_stopwords_are_never_chosen() -> None:
    terms = expansion_terms("x", ["It is so ok to go up by the sea, ah."], POOL, 20)
    assert terms == ["sea"]  # ok/go/up/by/ah: shorter than 3 characters; it/is/so/to/the: stopwords


def test_chinese_uses_character_pairs_and_skips_pairs_across_function_characters() -> None:
    terms = expansion_terms("我妹妹住在哪里?", ["我妹妹住在柏林, 她是医生"], ["她很忙", "我妹妹在家", "下雨了"], 5)
    assert terms[:2] == ["柏林", "医生"]
    assert "在柏" not in terms and "是医" not in terms  # 在, 是: function characters
    assert not any(len(t) == 1 for t in terms)  # single characters are too ambiguous


def test_mixed_language_hits_give_terms_of_both_scripts() -> None:
    terms = expansion_terms("Where is my sister?", ["My sister 住在柏林, near Tempelhof."], POOL, 5)
    assert "柏林" in terms and "tempelhof" in terms


def test_the_surface_word_is_returned_for_the_next_query_not_the_stem() -> None:
    terms = expansion_terms("hobby", ["She enjoys pottery classes."], POOL, 5)
    assert "pottery" in terms and "potteri" not in terms


def test_nothing_to_expand_gives_no_terms() -> None:
    # Tried: no feedback texts, n = 0, feedback holding only the query's words or stopwords.
    assert expansion_terms("tea", [], POOL, 5) == []
    assert expansion_terms("tea", ["green tea"], POOL, 0) == []
    assert expansion_terms("green tea", ["Green tea!"], POOL, 5) == []
    assert expansion_terms("tea", ["and the of it"], POOL, 5) == []


def test_a_word_in_over_half_of_the_candidates_is_the_topic_and_is_dropped() -> None:
    # alpha: in 3 of 4 texts; beta: in 1 of 4.
    texts = ["alpha beta", "alpha gamma", "alpha delta", "epsilon"]
    assert expansion_terms("zeta", texts[:1], texts[1:], 5) == ["beta"]


def test_only_the_start_of_a_long_hit_is_read() -> None:
    long_text = "pottery " + "filler " * SCAN_CHARS + "zeppelin"
    terms = expansion_terms("hobby", [long_text], POOL, 5)
    assert "pottery" in terms and "zeppelin" not in terms


def test_expansion_is_deterministic() -> None:
    top = ["We adopted a puppy named Pixel.", "My sister Anna lives in Berlin near the river."]
    first = expansion_terms("Where does the sister live?", top, POOL, 6)
    assert all(expansion_terms("Where does the sister live?", top, POOL, 6) == first for _ in range(5))


# -- merge_round -------------------------------------------------------------------------


def test_merge_adds_normalised_round_scores_times_the_weight() -> None:
    merged = merge_round({"a": 0.9, "b": 0.2}, [("c", 10.0), ("b", 6.0), ("d", 2.0)], 0.5)
    assert merged == pytest.approx({"a": 0.9, "b": 0.2 + 0.5 * 0.5, "c": 0.5, "d": 0.0})


def test_merge_keeps_the_first_rounds_best_above_round_two_only_items() -> None:
    # A first-round score of 1 (the best lexical and dense match) beats any round-2-only
    # item as long as the weight is below 1.
    merged = merge_round({"top": 1.0, "low": 0.05}, [("new", 9.0), ("low", 1.0)], 0.3)
    assert sorted(merged, key=merged.__getitem__, reverse=True) == ["top", "new", "low"]


def test_merge_treats_negative_bm25_scores_as_no_evidence_and_all_equal_as_full() -> None:
    assert merge_round({}, [("a", -0.5), ("b", -0.1)], 1.0) == {"a": 1.0, "b": 1.0}  # both clipped to 0: equal
    assert merge_round({}, [("a", 2.0), ("b", -3.0)], 1.0) == {"a": 1.0, "b": 0.0}


def test_merge_under_rrf_adds_weighted_reciprocal_ranks() -> None:
    merged = merge_round({"a": 1 / 61}, [("b", 5.0), ("a", 4.0)], 0.5, rrf_k=60)
    assert merged == pytest.approx({"a": 1 / 61 + 0.5 / 62, "b": 0.5 / 61})


def test_the_leads_get_full_evidence_and_the_rest_is_normalised_without_them() -> None:
    # The lead "a" scores 50 in the round (it holds every expansion word): counted with
    # the rest it would squash "c" (the second hop) to (8-1)/(50-1) ≈ 0.14.
    merged = merge_round({"a": 0.4, "b": 0.35}, [("a", 50.0), ("c", 8.0), ("b", 1.0)], 0.3, leads=["a"])
    assert merged == pytest.approx({"a": 0.7, "b": 0.35, "c": 0.3})
    assert sorted(merged, key=merged.__getitem__, reverse=True) == ["a", "b", "c"]


def test_under_rrf_the_leads_head_the_rounds_ranking() -> None:
    merged = merge_round({}, [("c", 8.0), ("a", 50.0)], 1.0, leads=["a", "b"], rrf_k=60)
    assert merged == pytest.approx({"a": 1 / 61, "b": 1 / 62, "c": 1 / 63})


def test_merge_of_an_empty_round_changes_nothing_and_does_not_alias() -> None:
    fused = {"a": 0.5}
    merged = merge_round(fused, [], 0.3)
    assert merged == fused and merged is not fused


# -- rounds_of ---------------------------------------------------------------------------


def _heads(rankings: list[tuple[int, list[str]]], head: int) -> list[tuple[int, set[str]]]:
    return [(r, set(order[:head])) for r, order in rankings]


def test_a_hit_gets_the_first_round_that_held_it_in_its_head() -> None:
    rankings = [(1, ["a", "b", "c", "d"]), (2, ["c", "a", "b", "d"]), (3, ["d", "c", "a", "b"])]
    # Head 2: a and b are the first round's, c came into the second's, d into the third's.
    assert rounds_of(["d", "c", "a", "b"], _heads(rankings, 2), 3) == {"d": 3, "c": 2, "a": 1, "b": 1}
    # Head 4: the first round held them all, whatever the later rounds did to their order.
    assert rounds_of(["d", "c", "a", "b"], _heads(rankings, 4), 3) == {"d": 1, "c": 1, "a": 1, "b": 1}


def test_a_hit_no_round_held_gets_the_last_round_kept() -> None:
    """Lifted into the head by a step after the rounds (session support …)."""
    assert rounds_of(["x", "a"], _heads([(1, ["a", "b"]), (2, ["a", "b"])], 2), 2) == {"x": 2, "a": 1}
    assert rounds_of(["new"], _heads([(1, ["a"])], 1), 1) == {"new": 1}


def test_the_labels_of_the_first_hits_do_not_depend_on_how_many_are_shown() -> None:
    heads = _heads([(1, ["a", "b", "c", "d", "e"]), (2, ["e", "a", "b", "c", "d"])], 3)
    final = ["e", "a", "b", "c", "d"]
    deep = rounds_of(final, heads, 2)
    assert deep == {"e": 2, "a": 1, "b": 1, "c": 1, "d": 2}
    for n in range(1, len(final) + 1):
        assert rounds_of(final[:n], heads, 2) == {d: deep[d] for d in final[:n]}


# -- the knobs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"feedback_rounds": 0},
        {"feedback_rounds": MAX_FEEDBACK_ROUNDS + 1},
        {"feedback_rounds": True},
        {"feedback_rounds": 2.0},
        {"feedback_docs": 0},
        {"feedback_docs": 51},
        {"feedback_terms": 0},
        {"feedback_terms": "8"},
        {"feedback_weight": 0.0},
        {"feedback_weight": -0.3},
        {"feedback_weight": float("nan")},
        {"feedback_weight": float("inf")},
        {"feedback_weight": None},
    ],
)
def test_bad_feedback_settings_are_refused_naming_the_field(bad: dict[str, object]) -> None:
    (name,) = bad
    with pytest.raises(ConfigError, match=name):
        LongTermConfig(**bad)  # type: ignore[arg-type]


def test_good_feedback_settings_are_accepted() -> None:
    cfg = LongTermConfig(feedback_rounds=MAX_FEEDBACK_ROUNDS, feedback_docs=5, feedback_terms=12, feedback_weight=1)
    assert (cfg.feedback_rounds, cfg.feedback_docs, cfg.feedback_terms) == (MAX_FEEDBACK_ROUNDS, 5, 12)
