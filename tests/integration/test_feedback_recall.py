"""A second recall round (pseudo-relevance feedback) through LongTermStore, with the real
MiniLM model, on the all-memory stack and on SQLite + Chroma embedded + SQLite BM25.

The two-hop question: "Where does the sister of the person who adopted Pixel live?" The
answer ("Elena has a flat in Porto") shares no word with the question; only the facts
the first round finds ("Maria adopted ... Pixel", "Maria's sister is Elena") lead to it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from longterm_fixtures import Stack, make_stack

from hmem.longterm.options import RecallOptions
from hmem.longterm.store import LongTermConfig

pytestmark = pytest.mark.slow

STACKS = ["memory", "sqlite+chroma"]
QUESTION = "Where does the sister of the person who adopted Pixel live?"
ANSWER = "Elena has a flat in Porto with a view of the river."
CHAIN = [
    "Maria adopted a grey cat called Pixel from the shelter.",
    "Maria's sister is Elena, a nurse.",
    ANSWER,
]
# Distractors: other people, other pets, other homes, other sisters — the words of the
# question and of the answer are spread over them, so neither retriever can jump the chain
# (the first test checks that one round indeed misses the answer).
DISTRACTORS = [
    "Tom adopted a puppy named Biscuit last year.",
    "Priya's brother works at a bank in Lyon.",
    "Our neighbour has a flat near the station.",
    "Jonas lives in Oslo and cycles to work.",
    "My sister-in-law Rosa teaches piano.",
    "Ben has a house by the lake with a big garden.",
    "Kai moved to Kyoto for a research job.",
    "Lena's cousin lives above a bakery in Vienna.",
    "Sam has a studio apartment in Austin.",
    "Our family adopted a rescue dog in spring.",
    "Where we live the rent keeps going up.",
    "Nora's sister paints murals in Seoul.",
    "A view of the river costs extra at that hotel.",
    "Omar rents a room in Hanoi near the market.",
    "Grandma lives in a small village in Portugal.",
    "Mia adopted two hamsters for her kids.",
]
K = 8


def _stack(kind: str, tmp: Path) -> Stack:
    stack = make_stack(kind, tmp)
    for i, text in enumerate(CHAIN + DISTRACTORS):
        stack.store.remember("u1", text, session_id="s-chain" if text in CHAIN else f"s{i}")
    return stack


#: The fusion weights the round was designed and measured with. At the 0.5 : 0.5 default
#: (chosen with sentence keys, docs/longterm.md) the first round's distractors score
#: higher and this chain's answer lands just below the top K: these tests are about the
#: round's mechanics, so they pin the weights (the LoCoMo effect is measured, not tested).
#: They pin BM25's weight too (no coverage scaling): in a store of 19 one-line facts the
#: best match of "adopted Pixel" covers half the question, and the scaled first round no
#: longer leads to Elena (the coverage rule is measured in docs/longterm.md).
ROUND_WEIGHTS = {"lexical_weight": 0.6, "dense_weight": 0.4, "lexical_coverage": False}
#: A round is kept only when it brings something new into the best ``rerank_depth`` hits;
#: this store's 19 items all fit in the default head of 100, so the tests re-rank the best
#: K, as a store of thousands of items does its best 100.
HEAD = {"rerank_depth": K}


def _rounds(stack: Stack, rounds: int, **extra: object) -> Stack:
    """The same store (so BM25 ties break the same way) with other feedback settings, and
    no session support: the chain shares one session, which alone lifts the answer
    (tests/core/test_session_support.py); these tests are about the feedback round."""
    extra = {"session_weight": 0.0, **ROUND_WEIGHTS, **HEAD, **extra}
    stack.store.config = replace(LongTermConfig(), feedback_rounds=rounds, **extra)  # type: ignore[arg-type]
    return stack


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    return _stack(str(request.param), tmp_path)


def test_one_round_misses_the_second_hop_and_two_find_it_saying_so(stack: Stack) -> None:
    # The premise: without feedback the answer is not in the top K.
    one = _rounds(stack, 1).store.recall("u1", QUESTION, k=K)
    assert ANSWER not in [h.item.text for h in one]
    assert {h.round for h in one} == {1}
    two = _rounds(stack, 2).store.recall("u1", QUESTION, k=K)
    by_text = {h.item.text: h for h in two}
    assert ANSWER in by_text, [h.item.text for h in two]
    assert by_text[ANSWER].round == 2
    # The first round's leads keep their places at the top, credited to round 1.
    assert [h.item.text for h in two[:1]] == [h.item.text for h in one[:1]] == [CHAIN[0]]
    assert by_text[CHAIN[1]].round == 1
    # Every other hit of round 2 was in the first round's results, or is marked as new.
    assert all(h.round == 1 or h.item.text not in {x.item.text for x in one} for h in two)


def test_the_second_round_respects_filters_and_users(stack: Stack) -> None:
    _rounds(stack, 2)
    # Another user holds a better match for the expansion ("Elena ..."): never returned.
    stack.store.remember("u2", "Elena Elena has a flat in Porto, Elena says.")
    hits = stack.store.recall("u1", QUESTION, k=K)
    assert all(h.item.user_id == "u1" for h in hits)
    # A session filter applies to round 2 as well: the answer's session is excluded.
    stack.store.remember("u1", "Maria adopted Pixel, and Elena helped.", session_id="s-other")
    filtered = stack.store.recall("u1", QUESTION, k=K, options=RecallOptions(session_id="s-other"))
    assert [h.item.session_id for h in filtered] == ["s-other"]
    filtered = stack.store.recall("u1", QUESTION, k=K, options=RecallOptions(kinds="turn"))
    assert filtered == []


def test_a_round_that_adds_nothing_new_is_dropped(stack: Stack) -> None:
    # With a head above the item count every item is already in the first round's head,
    # so round 2 can add nothing: the result is exactly the one-round result.
    one = _rounds(stack, 1, rerank_depth=50).store.recall("u1", QUESTION, k=50)
    for rounds in (2, 3):
        more = _rounds(stack, rounds, rerank_depth=50).store.recall("u1", QUESTION, k=50)
        assert [h.item.text for h in more] == [h.item.text for h in one]
        assert [h.score for h in more] == pytest.approx([h.score for h in one])
        assert {h.round for h in more} == {1}


def test_the_setting_turns_the_round_off_and_refuses_bad_values(tmp_path: Path) -> None:
    """feedback_rounds reaches the store built by Memory.open; 0 and 4 are refused
    (ConfigError naming the setting) before anything is written."""
    from hmem.errors import ConfigError
    from hmem.memory import Memory

    found = {}
    for rounds in (2, 1):
        with Memory.open(tmp_path / f"r{rounds}", vectors="memory", feedback_rounds=rounds) as mem:
            store = mem._longterm
            assert store.config.feedback_rounds == rounds
            store.config = replace(store.config, **ROUND_WEIGHTS, **HEAD)
            for text in CHAIN + DISTRACTORS:
                mem.remember("u1", text)
            found[rounds] = {h.item.text: h.round for h in mem.recall("u1", QUESTION, K)}
    assert found[2].get(ANSWER) == 2, found[2]
    assert ANSWER not in found[1] and set(found[1].values()) == {1}
    for bad in (0, 4):
        with pytest.raises(ConfigError, match=r"^feedback_rounds="):
            Memory.open(tmp_path / f"bad{bad}", vectors="memory", feedback_rounds=bad)


@pytest.mark.parametrize("kind", STACKS)
def test_recall_stages_runs_only_the_named_stages(kind: str, tmp_path: Path) -> None:
    # With no stage, no hit carries a stage's boost or a later round; with the feedback
    # stage alone, the answer is found by its round, as with every stage on.
    stack = _stack(kind, tmp_path)
    stack.store.config = replace(stack.store.config, recall_stages=())
    bare = stack.store.recall("u1", QUESTION, K)
    assert all(not h.boosts and h.round == 1 for h in bare)
    stack.store.config = replace(LongTermConfig(), recall_stages=("feedback",), feedback_rounds=2,  # off by default
                                 **ROUND_WEIGHTS, **HEAD)  # type: ignore[arg-type]
    hits = stack.store.recall("u1", QUESTION, K)
    assert all(not h.boosts for h in hits)
    answer = next(h for h in hits if h.item.text == ANSWER)
    assert answer.round == 2
