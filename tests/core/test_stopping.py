"""The calibrated stop, the memory budget, excerpts and near-duplicates in the assembler.

Pure: ``assemble`` on values, the real gpt-4o-mini tokenizer (tiktoken, offline).

Bad inputs tried (each raises InvalidInput naming the field): StopRule coefficients of
the wrong length, with NaN, with a bool or a string; tokens_per_answer 0, -5, inf, True,
"1500"; assemble(stop="yes"), memory_budget -1 and 2.5, excerpt_tokens 3 and "80", query 7;
MemoryOptions(memory_budget=-1, excerpt_tokens=0, stop=0.5).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmem._options import MemoryOptions
from hmem.assembly.assemble import assemble
from hmem.assembly.excerpt import GAP, SeenTexts, excerpt, near_duplicate
from hmem.assembly.stopping import DEFAULT_STOP, StopRule, features
from hmem.errors import InvalidInput
from hmem.longterm.text import tokenize
from hmem.tokens import get_tokenizer
from hmem.types import Hit, MemoryItem, Message, ProfileEntry

TOK = get_tokenizer("gpt-4o-mini")
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
QUESTION = [Message(role="user", content="Which herb should I leave out of the pesto?")]


def _hit(i: int, text: str, score: float, *, both: bool = True) -> Hit:
    item = MemoryItem(id=f"m{i}", user_id="u", text=text, kind="turn", created_at=T0 + timedelta(days=i),
                      source_message_id=f"t{i}", speaker="user")
    return Hit(item=item, score=score, lexical_rank=i + 1 if both else None, dense_rank=i + 1)


def _falling(n: int) -> list[Hit]:
    """``n`` distinct hits of ~50 tokens (no two alike) whose scores fall from 1.0 towards 0.1."""
    words = [a + b for a in ("lan", "mor", "tas", "vel", "quo", "rin", "sab", "dut") for b in
             ("ka", "po", "mi", "ter", "gus", "lo", "ven", "sar", "bi", "no", "cre", "fu")]
    return [_hit(i, " ".join(random.Random(i).sample(words, 24)) + ".", 1.0 - 0.9 * i / max(1, n - 1))
            for i in range(n)]


def _recalled_refs(ctx: object, *, kept: bool = True) -> list[str]:
    return [r.ref for r in ctx.report.items if r.tier == "recalled" and r.kept is kept]  # type: ignore[attr-defined]


# -- the rule --------------------------------------------------------------------------


def test_the_fitted_chance_falls_with_rank_and_with_score() -> None:
    rule = DEFAULT_STOP
    for both in (0.0, 1.0):
        top = rule.chance((0.0, 1.0, both))
        assert rule.chance((math.log(10), 1.0, both)) < top
        assert rule.chance((0.0, 0.3, both)) < top
        assert 0.0 < rule.chance((math.log(200), 0.0, both)) < 0.01 < 0.1 < top < 1.0


def test_a_hit_pays_when_its_chance_is_worth_its_tokens() -> None:
    rule = StopRule(tokens_per_answer=1000)
    assert rule.pays(0.1, 100) and not rule.pays(0.1, 101)
    assert StopRule(tokens_per_answer=4000).pays(0.1, 400)


def test_features_see_rank_score_ratio_and_agreement() -> None:
    hits = [_hit(0, "a", 2.0), _hit(1, "b", 1.0, both=False), _hit(2, "c", -1.0)]
    assert features(hits) == [(0.0, 1.0, 1.0), (math.log(2), 0.5, 0.0), (math.log(3), 0.0, 1.0)]
    assert features([_hit(0, "a", 0.0), _hit(1, "b", -2.0)])[1][1] == 1.0, "no positive best: no ratio to take"
    assert features([]) == []


@pytest.mark.parametrize("coefficients", [(1.0, 2.0), (1.0, 2.0, float("nan"), 0.0), (1.0, True, 0.0, 0.0),
                                          (1.0, "2", 0.0, 0.0)])
def test_bad_coefficients_are_refused(coefficients: object) -> None:
    with pytest.raises(InvalidInput) as info:
        StopRule(coefficients=coefficients)  # type: ignore[arg-type]
    assert info.value.field == "stop.coefficients"


@pytest.mark.parametrize("price", [0, -5, float("inf"), True, "1500"])
def test_bad_price_is_refused(price: object) -> None:
    with pytest.raises(InvalidInput) as info:
        StopRule(tokens_per_answer=price)  # type: ignore[arg-type]
    assert info.value.field == "stop.tokens_per_answer"


# -- the assembler ---------------------------------------------------------------------


def test_the_stop_ends_the_tier_at_the_first_hit_not_worth_its_tokens_and_says_so() -> None:
    hits = _falling(60)
    ctx = assemble(QUESTION, tokenizer=TOK, budget=100_000, recalled=hits, stop=DEFAULT_STOP)
    tier = ctx.report.tier("recalled")
    assert 0 < tier.kept < 60 and tier.stopped_by == "threshold"
    judged = [r for r in ctx.report.items if r.tier == "recalled"]
    first_out = next(r for r in judged if r.reason == "threshold")
    assert tier.estimate == first_out.chance and first_out.chance is not None
    assert first_out.chance * DEFAULT_STOP.tokens_per_answer < first_out.tokens, "it was not worth its tokens"
    assert all(r.chance is not None and r.chance * DEFAULT_STOP.tokens_per_answer >= r.tokens
               for r in judged if r.kept)
    assert tier.stop_note is not None and tier.stop_note.startswith("stopped: next item below the calibrated threshold")
    assert ctx.report.to_dict()["tiers"][-1]["stop_note"] == tier.stop_note
    # A dearer answer buys more of the same hits; without the rule the budget is spent.
    dearer = assemble(QUESTION, tokenizer=TOK, budget=100_000, recalled=hits, stop=StopRule(tokens_per_answer=4 * DEFAULT_STOP.tokens_per_answer))
    assert dearer.report.tier("recalled").kept > tier.kept
    assert assemble(QUESTION, tokenizer=TOK, budget=100_000, recalled=hits).report.tier("recalled").kept == 60


def test_the_memory_budget_bounds_summary_profile_and_recalled_together() -> None:
    profile = [ProfileEntry(user_id="u", key=f"k{i}", value=f"value number {i}", valid_from=T0) for i in range(30)]
    summary = "The user planned a long trip through Portugal and Spain. " * 20
    ctx = assemble(QUESTION, tokenizer=TOK, budget=100_000, summary=summary, profile=profile,
                   recalled=_falling(80), memory_budget=600)
    memory = sum(t.tokens for t in ctx.report.tiers if t.tier in ("summary", "profile", "recalled"))
    assert memory <= 600 < sum(t.tokens for t in assemble(
        QUESTION, tokenizer=TOK, budget=100_000, summary=summary, profile=profile, recalled=_falling(80),
    ).report.tiers if t.tier in ("summary", "profile", "recalled"))
    assert ctx.report.tier("recalled").stopped_by == "memory budget"
    assert ctx.report.tier("recalled").stop_note == "stopped: the default memory budget was used"
    assert ctx.tokens < 800


def test_a_long_turn_is_rendered_as_its_passage_and_the_report_points_to_the_whole() -> None:
    filler = " ".join(f"Sentence {i} is about something unrelated like tide tables and bus routes." for i in range(40))
    reply = f"{filler} For your pesto, leave out the basil since it tastes soapy to you. {filler}"
    hits = [_hit(0, reply, 1.0), _hit(1, "I like walnuts.", 0.9)]
    ctx = assemble(QUESTION, tokenizer=TOK, budget=100_000, recalled=hits, query=QUESTION[0].text, excerpt_tokens=60)
    text = ctx.messages[0]["content"]
    assert "leave out the basil" in text and "I like walnuts." in text
    assert text.count("tide tables") <= 3 and GAP in text
    long_line = next(r for r in ctx.report.items if r.ref == "m0")
    assert long_line.kept and long_line.whole_tokens is not None and long_line.whole_tokens > 10 * long_line.tokens
    assert next(r for r in ctx.report.items if r.ref == "m1").whole_tokens is None, "a short turn is whole"
    whole = assemble(QUESTION, tokenizer=TOK, budget=100_000, recalled=hits)
    assert whole.tokens > 5 * ctx.tokens


def test_a_near_duplicate_memory_is_rendered_once() -> None:
    hits = [_hit(0, "I am allergic to peanuts and cashews.", 1.0),
            _hit(1, "I'm allergic to peanuts and cashews!", 0.9),
            _hit(2, "My sister is allergic to shellfish.", 0.8)]
    ctx = assemble(QUESTION, tokenizer=TOK, budget=4000, recalled=hits)
    assert _recalled_refs(ctx) == ["m0", "m2"]
    assert next(r for r in ctx.report.items if r.ref == "m1").reason == "duplicate"


def test_excerpt_keeps_the_matching_sentence_with_its_neighbours_in_order() -> None:
    parts = [f"Filler sentence {i} talks about weather." for i in range(30)]
    parts[12] = "The pesto should skip basil entirely."
    text = " ".join(parts)
    out = excerpt(text, "what goes in my pesto", 40, TOK)
    assert "The pesto should skip basil entirely." in out and TOK.count(out) <= 40 + 2
    assert out.startswith(GAP) and out.endswith(GAP)
    kept = [p for p in parts if p in out]
    assert kept == sorted(kept, key=parts.index), "sentences stay in the turn's order"
    assert excerpt("Short turn.", "pesto", 40, TOK) == "Short turn."
    lead = excerpt(text, "quantum chromodynamics", 30, TOK)
    assert lead.startswith("Filler sentence 0"), "no term in common: the opening is kept"
    chinese = "我们聊了很多天气的事情。" * 20 + "做青酱的时候不要放罗勒，你说它有肥皂味。" + "我们聊了很多天气的事情。" * 20
    assert "罗勒" in excerpt(chinese, "青酱里不要放什么香草？", 60, TOK)


def test_near_duplicate_is_jaccard_of_terms() -> None:
    a = frozenset(tokenize("I am allergic to peanuts"))
    assert near_duplicate(a, [frozenset(tokenize("I'm allergic to peanuts!"))])
    assert not near_duplicate(a, [frozenset(tokenize("My sister is allergic to shellfish"))])
    assert not near_duplicate(frozenset(), [frozenset()])



def _said(i: int, text: str, kind: str, source: str, score: float) -> Hit:
    item = MemoryItem(id=f"{kind}{i}", user_id="u", text=text, kind=kind, created_at=T0 + timedelta(days=i),
                      source_message_id=source, speaker="user" if kind == "turn" else None)
    return Hit(item=item, score=score, lexical_rank=i + 1, dense_rank=i + 1)


def test_a_fact_is_not_shown_beside_the_whole_turn_it_was_drawn_from() -> None:
    turn = _said(0, "I went to a LGBTQ support group yesterday and it was so powerful.", "turn", "D1:3", 0.9)
    fact = _said(1, "Caroline went to a LGBTQ support group yesterday (7 May 2023)", "event", "D1:3", 0.8)
    other = _said(2, "Caroline went to an LGBTQ conference two days ago (6 July 2023)", "event", "D7:1", 0.7)
    ctx = assemble(QUESTION, tokenizer=TOK, budget=4000, recalled=[turn, fact, other])
    fates = {r.ref: (r.kept, r.reason) for r in ctx.report.items if r.tier == "recalled"}
    assert fates == {"turn0": (True, None), "event1": (False, "duplicate"), "event2": (True, None)}
    # The other way round, the turn says more than the fact: both are shown.
    ctx = assemble(QUESTION, tokenizer=TOK, budget=4000, recalled=[replace(fact, score=0.95), turn])
    assert [r.kept for r in ctx.report.items if r.tier == "recalled"] == [True, True]
    # A turn shown as an excerpt may have left the fact's sentence out: the fact stays.
    long_turn = replace(turn, item=replace(turn.item, text=" ".join(["Filler about the weather."] * 60)
                                           + " I went to a LGBTQ support group yesterday."))
    ctx = assemble(QUESTION, tokenizer=TOK, budget=4000, recalled=[long_turn, fact], excerpt_tokens=40,
                   query="support group")
    assert [r.kept for r in ctx.report.items if r.tier == "recalled"] == [True, True]

def _brute_repeats(words: frozenset[str], seen: list[frozenset[str]], t: float) -> bool:
    return bool(words) and any(other and len(words & other) / len(words | other) >= t for other in seen)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.frozensets(st.sampled_from("abcdefghijklmnop"), max_size=12), min_size=1, max_size=25),
       st.sampled_from([0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]))
def test_seen_texts_answers_as_comparing_with_every_text(sets: list[frozenset[str]], threshold: float) -> None:
    # Prefix filtering looks at a few candidates only; it must find every repeat the
    # all-pairs comparison finds (thresholds whose products with sizes are whole numbers
    # included: 0.8 x 5, 0.75 x 4), and no other.
    seen = SeenTexts(threshold)
    taken: list[frozenset[str]] = []
    for words in sets:
        assert seen.repeats(words) == _brute_repeats(words, taken, threshold)
        seen.add(words)
        taken.append(words)


@pytest.mark.parametrize("threshold", [0, -0.1, 1.5, math.nan])
def test_seen_texts_refuses_a_threshold_outside_0_1(threshold: float) -> None:
    with pytest.raises(InvalidInput, match="threshold"):
        SeenTexts(threshold)


@pytest.mark.parametrize(("field", "value"), [("stop", "yes"), ("memory_budget", -1), ("memory_budget", 2.5),
                                              ("excerpt_tokens", 3), ("excerpt_tokens", "80"), ("query", 7)])
def test_bad_assembler_arguments_are_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        assemble(QUESTION, tokenizer=TOK, budget=1000, recalled=_falling(3), **{field: value})  # type: ignore[arg-type]
    assert info.value.field == field


@pytest.mark.parametrize(("field", "value"), [("memory_budget", -1), ("excerpt_tokens", 0), ("stop", 0.5)])
def test_bad_options_are_refused(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as info:
        MemoryOptions(**{field: value})  # type: ignore[arg-type]
    assert info.value.field == field


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40), budget=st.integers(40, 3000), memory=st.integers(0, 2000),
       price=st.floats(50, 20_000), long_every=st.integers(1, 5))
def test_never_over_budget_nor_over_the_memory_budget(n: int, budget: int, memory: int, price: float,
                                                      long_every: int) -> None:
    hits = [_hit(i, ("A long reply about pesto and basil. " * 40) if i % long_every == 0 else f"Fact {i} about pesto.",
                 1.0 / (i + 1)) for i in range(n)]
    ctx = assemble(QUESTION, tokenizer=TOK, budget=budget, recalled=hits, stop=StopRule(tokens_per_answer=price),
                   memory_budget=memory, query="pesto", excerpt_tokens=40)
    assert ctx.tokens <= budget
    assert ctx.report.tier("recalled").tokens <= memory
