"""The pure parts of sentence keys (:mod:`hmem.longterm.keys`, ``sentence_keys`` in
:mod:`hmem.longterm.index_text`) and of scoring down turns that ask
(``question_share``/``demote_questions`` in :mod:`hmem.longterm._rank`)."""

from __future__ import annotations

import math

import pytest

from hmem.errors import ConfigError
from hmem.longterm._rank import demote_questions, question_share
from hmem.longterm.index_text import MAX_SENTENCE_KEYS, sentence_keys, sentences
from hmem.longterm.keys import fold_keys, key_ids, key_jobs, key_parent
from hmem.longterm.types import LongTermConfig
from hmem.protocols import ScoredId
from hmem.types import MAX_ID_CHARS, MemoryItem


def _turn(text: str, *, item_id: str = "t1", speaker: str | None = "Mel", kind: str = "turn") -> MemoryItem:
    return MemoryItem(id=item_id, user_id="u1", text=text, kind=kind, speaker=speaker, session_id="s1")


# -- sentences and keys -------------------------------------------------------------


def test_sentences_cut_after_latin_and_cjk_marks_and_drop_empty_pieces() -> None:
    assert sentences("Really?! Yes. ... 我去了。你呢？ ok") == ["Really?!", "Yes.", "我去了。", "你呢？", "ok"]
    assert sentences("") == [] and sentences("?!. ") == []


def test_a_turn_of_several_sentences_gets_one_key_each_with_its_speaker() -> None:
    keys = sentence_keys(_turn("Hi! We went camping at the beach. The kids loved it."))
    assert keys == ["Mel: We went camping at the beach.", "Mel: The kids loved it."]  # "Hi!" is too short
    assert sentence_keys(_turn("One. Two words here.", speaker=None)) == ["One.", "Two words here."]


def test_one_sentence_turns_and_other_kinds_have_no_keys() -> None:
    assert sentence_keys(_turn("We went camping at the beach with the kids.")) == []
    assert sentence_keys(_turn("Ok! We went camping.")) == []  # one sentence worth a key
    assert sentence_keys(_turn("Mel likes tea. Mel paints.", kind="fact")) == []


def test_a_long_turn_keeps_its_first_sentences_only() -> None:
    text = " ".join(f"Sentence {i} here." for i in range(MAX_SENTENCE_KEYS + 5))
    keys = sentence_keys(_turn(text))
    assert len(keys) == MAX_SENTENCE_KEYS and keys[0] == "Mel: Sentence 0 here."


def test_key_ids_name_their_turn_even_when_it_holds_the_separator() -> None:
    for item_id in ("t1", "turn-ab#k3", "a#k"):
        assert all(key_parent(k) == item_id for k in key_ids(item_id))
    assert key_parent("plain") == "plain"


def test_key_jobs_skip_ids_whose_keys_would_pass_the_id_limit() -> None:
    ok = _turn("First one here. Second one here.", item_id="x" * (MAX_ID_CHARS - 3))
    too_long = _turn("First one here. Second one here.", item_id="y" * (MAX_ID_CHARS - 2))
    jobs = key_jobs([ok, too_long, _turn("Only one sentence.")])
    assert [job[0] for job in jobs] == [ok.id]
    assert all(len(k) <= MAX_ID_CHARS for k in key_ids(ok.id))
    assert jobs[0][2]["session_id"] == "s1" and jobs[0][2]["kind"] == "turn"  # the turn's metadata


# -- folding keys into the dense hits ---------------------------------------------------


def test_fold_keeps_items_without_keys_and_lifts_those_with_a_nearer_key() -> None:
    own = [ScoredId("a", 0.7), ScoredId("b", 0.5), ScoredId("c", 0.4)]
    folded = fold_keys(own, [ScoredId("c#k2", 0.9), ScoredId("c#k0", 0.6), ScoredId("b#k0", 0.3)])
    scores = {h.id: h.score for h in folded}
    assert scores["a"] == 0.7  # no key
    assert scores["b"] == 0.5  # a key farther than the turn itself changes nothing
    assert math.isclose(scores["c"], (0.4 + 0.9) / 2)  # the best key counts
    assert [h.id for h in folded] == ["a", "c", "b"]


def test_a_turn_found_only_by_its_key_is_bounded_by_the_last_returned_vector() -> None:
    folded = fold_keys([ScoredId("a", 0.6), ScoredId("b", 0.3)], [ScoredId("z#k1", 0.8)])
    assert math.isclose({h.id: h.score for h in folded}["z"], (0.3 + 0.8) / 2)
    alone = fold_keys([], [ScoredId("z#k1", 0.8)])
    assert alone == [ScoredId("z", 0.8)]


def test_fold_without_keys_returns_the_hits_as_they_were() -> None:
    own = [ScoredId("a", 0.7), ScoredId("b", 0.5)]
    assert fold_keys(own, []) == own
    assert fold_keys([ScoredId("b", 0.5), ScoredId("a", 0.5)], []) == [ScoredId("a", 0.5), ScoredId("b", 0.5)]


# -- turns that ask ---------------------------------------------------------------------


@pytest.mark.parametrize(("text", "share"), [
    ("How did the kids like it?", 1.0),
    ("Wow, Mel! How'd they like it?", 0.5),
    ("We went camping. It rained. Have you been?", 1 / 3),
    ('She said "really?" and left.', 0.5),  # quotes are not parsed: the quoted question counts as one
    ("真的吗？我不知道。", 0.5),
    ("", 0.0),
    # A question about the speaker tells something about them: it counts as a statement.
    ("how do i make the colour scale go red below 92% since thats our SLA?", 0.0),
    ("My cousin Deepak has a guitar. Can you suggest easy songs for him?", 0.5),
    ("Should we book the cabin? Did it rain there?", 0.5),
    ("我应该换工作吗？", 0.0),
])
def test_question_share_is_the_part_of_sentences_that_ask(text: str, share: float) -> None:
    assert math.isclose(question_share(text), share)


def test_demoting_questions_scores_them_down_by_their_share_and_records_it() -> None:
    scored = {"ask": (1.0, {"session": 1.2}), "half": (0.9, {}), "tell": (0.6, {}), "fact": (0.5, {})}
    order = demote_questions(["ask", "half", "tell", "fact"], scored, {"ask": 1.0, "half": 0.5, "tell": 0.0}, 0.5)
    assert order == ["half", "tell", "ask", "fact"]
    assert scored["ask"] == (0.5, {"session": 1.2, "question": 0.5})
    assert scored["half"] == (0.675, {"question": 0.75})
    assert scored["tell"] == (0.6, {}) and scored["fact"] == (0.5, {})


def test_a_zero_weight_demotes_nothing() -> None:
    scored = {"ask": (1.0, {}), "tell": (0.6, {})}
    assert demote_questions(["ask", "tell"], scored, {"ask": 1.0}, 0.0) == ["ask", "tell"]
    assert scored["ask"] == (1.0, {})


@pytest.mark.parametrize("bad", [-0.1, 1.01, float("nan"), "0.5", True, None])
def test_a_bad_question_weight_is_refused_naming_the_field(bad: object) -> None:
    # Tried: below 0, above 1, NaN, a string, a bool, None.
    with pytest.raises(ConfigError, match="question_weight"):
        LongTermConfig(question_weight=bad)  # type: ignore[arg-type]


def test_the_defaults_are_the_measured_ones() -> None:
    config = LongTermConfig()
    assert (config.question_weight, config.lexical_weight, config.dense_weight) == (0.5, 0.5, 0.5)
