"""Specific answers (issue #12 §3): a hit that holds words rare in the user's archive
(and not in the question) gains over one made of common words only ("I'm reading *The
Name of the Wind*" over "Books can really inspire us!"); in a small archive no word is
rare and nothing changes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.errors import ConfigError
from hmem.longterm._rank import SPECIFIC_SPAN, SPECIFIC_TERMS, promote_specific, specificity
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from tests.core.test_time_boost import SameVector


def test_specificity_counts_rare_words_the_question_lacks_up_to_a_cap() -> None:
    # 1,000 documents, share 0.005: a word held by at most 5 of them is rare.
    terms = {"rothfuss": 1, "wind": 5, "novel": 6, "book": 2, "ghost": 0}
    assert specificity(terms, 1000, asked={"book"}, share=0.005) == pytest.approx(2 / SPECIFIC_TERMS)
    # "book" is rare but asked; "novel" is one document too common; "ghost" is not in the
    # index (no evidence either way).
    assert specificity(terms, 1000, asked=set(), share=0.005) == pytest.approx(3 / SPECIFIC_TERMS)
    many = {f"rare{i}": 1 for i in range(10)}
    assert specificity(many, 1000, asked=set(), share=0.005) == 1.0  # capped: long is not more specific
    assert specificity({}, 1000, asked=set(), share=0.005) == 0.0


def test_in_a_small_archive_no_word_is_rare() -> None:
    # 100 documents × 0.008 = 0.8: even a word held by one document is not rare.
    assert specificity({"rothfuss": 1, "wind": 1}, 100, asked=set(), share=0.008) == 0.0
    assert specificity({"rothfuss": 1}, 0, asked=set(), share=0.008) == 0.0


def test_promotion_multiplies_records_and_reorders() -> None:
    scored: dict[str, tuple[float, dict[str, float]]] = {
        "vague": (0.6, {"session": 1.2}), "exact": (0.5, {}), "half": (0.55, {}), "absent": (0.4, {})}
    order = promote_specific(["vague", "exact", "half", "absent"], scored,
                             {"vague": 0.0, "exact": 1.0, "half": 0.5}, 0.3)
    assert order == ["exact", "half", "vague", "absent"]
    assert scored["exact"] == (pytest.approx(0.65), {"specific": 1.3})
    assert scored["half"] == (pytest.approx(0.55 * 1.15), {"specific": 1.15})
    assert scored["vague"] == (0.6, {"session": 1.2})  # nothing specific: untouched, earlier boosts kept
    assert scored["absent"] == (0.4, {})
    before = dict(scored)
    assert promote_specific(["exact", "half"], scored, {"exact": 1.0}, 0.0) == ["exact", "half"]
    assert scored == before  # weight 0: off


FILLER = [
    "Books are great, I love reading books every day.",
    "Reading a good book is the best way to relax.",
    "I read books on the train, books make the trip short.",
    "What are you reading these days? Any good books?",
    "Books can really inspire us, reading books helps.",
]


class MusicianVector:
    """Texts that mention a musician share a direction the others lack: the answer is the
    dense side's first hit whatever the order of the filler's equal scores."""

    model_name, dimension, symmetric = "musician-vector", 2, True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.8, 0.6] if "musician" in t else [0.0, 1.0] for t in texts]

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def _filler(i: int) -> str:
    """Distinct turns (an exact repeat would be skipped) of common words only."""
    return f"{FILLER[i % 5]} ({('one', 'two', 'three', 'four')[i % 4]} {('red', 'blue', 'green')[i % 3]})"


def _store(weight: float, share: float) -> LongTermStore:
    store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), SameVector(),
                          config=LongTermConfig(specific_weight=weight, specific_share=share, feedback_rounds=1,
                                                session_weight=0.0, question_weight=0.0,
                                                near_duplicate_threshold=None))
    turns = [{"role": "user", "name": "John", "content": _filler(i), "id": f"f{i}"} for i in range(40)]
    turns.insert(17, {"role": "assistant", "name": "Tim", "id": "answer",
                      "content": "I read The Name of the Wind by Patrick Rothfuss, a book about a musician."})
    store.archive_turns("tim", "s1", turns)
    return store


def test_recall_lifts_the_specific_answer_over_turns_of_common_words() -> None:
    question = "Which books did you read?"
    # 41 documents; share 0.05: a word held by at most 2 is rare.
    off = _store(0.0, 0.05).recall("tim", question, k=10)
    on = _store(0.3, 0.05).recall("tim", question, k=10)
    sources_off = [h.item.source_message_id for h in off]
    assert on[0].item.source_message_id == "answer"
    assert "answer" not in sources_off[:1]  # without the boost the turns that repeat "books" and "read" win
    top = on[0]
    assert top.boosts["specific"] == pytest.approx(1.3)  # 3+ rare words: the full weight
    assert all("specific" not in h.boosts for h in off)
    assert all("specific" not in h.boosts for h in on[1:])  # the filler holds no rare word


def test_with_the_default_share_a_small_archive_ranks_as_without_it() -> None:
    question = "Which books did you read?"
    default_share = LongTermConfig().specific_share
    off = _store(0.0, default_share).recall("tim", question, k=10)
    on = _store(0.3, default_share).recall("tim", question, k=10)
    assert [(h.item.id, h.score) for h in on] == [(h.item.id, h.score) for h in off]


@pytest.mark.parametrize(("field", "bad"), [
    ("specific_weight", -0.1), ("specific_weight", 10.5), ("specific_weight", "0.3"), ("specific_weight", True),
    ("specific_weight", float("nan")), ("specific_share", 0.0), ("specific_share", -0.01),
    ("specific_share", 1.5), ("specific_share", None), ("specific_share", True),
])
def test_bad_knobs_are_refused_naming_the_field(field: str, bad: object) -> None:
    # Tried: negative, above the cap, a string, a bool, NaN; a share of 0, below 0, above 1, None.
    with pytest.raises(ConfigError, match=field):
        LongTermConfig(**{field: bad})  # type: ignore[arg-type]


def test_the_setting_reaches_recall_and_bad_values_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    from hmem.config import Settings
    from hmem.memory import Memory

    assert Settings.from_env({}, specific_weight="0").specific_weight == 0.0
    assert Settings.from_env({}).specific_weight is None  # LongTermConfig's default
    # 301 turns: with the default share (0.008), a word held by at most 2 of them is rare.
    turns = [{"role": "user", "name": "John", "content": _filler(i)} for i in range(300)]
    turns.append({"role": "assistant", "name": "Tim",
                  "content": "I read The Name of the Wind by Patrick Rothfuss, a book about a musician."})
    for weight, boosted in ((0.5, True), (0.0, False)):
        with Memory.open(tmp_path / f"w{weight}", vectors="memory", embedder=MusicianVector(),
                         specific_weight=weight, session_weight=0.0, feedback_rounds=1) as mem:
            mem.add("tim", "s1", turns)
            hits = mem.recall("tim", "Which book about a musician did you read?", k=20)
            assert "Rothfuss" in hits[0].item.text  # first on both sides
            assert hits[0].boosts.get("specific") == (1.5 if boosted else None)
            # The filler turns hold no rare word (an item the profile rules took from them may:
            # its "as of <date>").
            assert all("specific" not in h.boosts for h in hits[1:] if h.item.kind == "turn")
    # Tried: negative, above the cap, NaN, a word (specific_weight through Memory.open's settings).
    for bad in (-1.0, 11.0, float("nan"), "high"):
        with pytest.raises(ConfigError, match=r"^specific_weight="):
            Memory.open(tmp_path / "bad", vectors="memory", embedder=SameVector(), specific_weight=bad)
        assert not (tmp_path / "bad").exists()


def test_a_long_reply_is_judged_by_its_rare_words_per_span_not_by_their_number() -> None:
    # A user's short statement naming a thing, and an assistant's long reply that holds
    # three rare words by chance among many common ones (the shape of user<->assistant chats).
    statement = {"rothfuss": 1, "read": 400, "book": 400}
    reply = {"lapsang": 1, "souchong": 1, "quill": 1, **{f"common{i}": 80 for i in range(6 * SPECIFIC_SPAN - 3)}}
    assert specificity(statement, 5000, set(), 0.008) == pytest.approx(1 / SPECIFIC_TERMS)
    assert specificity(reply, 5000, set(), 0.008) == pytest.approx(0.5 / SPECIFIC_TERMS)  # 3 rare per 6 spans
    scored = {"statement": (0.50, {}), "reply": (0.52, {})}
    order = promote_specific(["reply", "statement"], scored,
                             {"statement": specificity(statement, 5000, set(), 0.008),
                              "reply": specificity(reply, 5000, set(), 0.008)}, 0.3)
    assert order == ["statement", "reply"]  # before: the reply's 3 rare words took the full boost
    # Up to one span a text is judged as before: a short turn with three rare words is fully specific.
    short = {"rothfuss": 1, "kvothe": 1, "tarbean": 2, **{f"w{i}": 90 for i in range(SPECIFIC_SPAN - 3)}}
    assert specificity(short, 5000, set(), 0.008) == 1.0
