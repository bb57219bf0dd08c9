"""What the indexes see of an item (hmem.longterm.index_text): pure rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.longterm.index_text import (
    MAX_INDEX_CHARS,
    PREVIOUS_TURN_KEY,
    PREVIOUS_TURN_MAX_CHARS,
    dense_text,
    lexical_text,
)
from hmem.types import MAX_CONTENT_CHARS, MAX_ID_CHARS, MemoryItem

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _turn(text: str = "Yes, twice a week!", speaker: str | None = "Mel", previous: str | None = None) -> MemoryItem:
    meta = {"role": "assistant"} | ({PREVIOUS_TURN_KEY: previous} if previous is not None else {})
    return MemoryItem(id="i", user_id="u", text=text, kind="turn", speaker=speaker, created_at=AT, metadata=meta)


def test_turn_lexical_text_has_date_previous_turn_and_speaker() -> None:
    item = _turn(previous="Caroline: Do you still go swimming?")
    assert lexical_text(item) == "[8 May 2023] Caroline: Do you still go swimming?\nMel: Yes, twice a week!"
    assert dense_text(item) == "Mel: Yes, twice a week!"


def test_first_turn_and_missing_speaker() -> None:
    assert lexical_text(_turn()) == "[8 May 2023] Mel: Yes, twice a week!"
    assert lexical_text(_turn(speaker=None, previous="  ")) == "[8 May 2023] Yes, twice a week!"
    assert dense_text(_turn(speaker=None)) == "Yes, twice a week!"


def test_facts_are_indexed_as_their_text() -> None:
    fact = MemoryItem(id="f", user_id="u", text="Mel swims twice a week", kind="fact", speaker="Mel",
                      created_at=AT, metadata={PREVIOUS_TURN_KEY: "ignored for facts"})
    assert lexical_text(fact) == dense_text(fact) == "Mel swims twice a week"


def test_long_previous_turn_is_cut() -> None:
    text = lexical_text(_turn(previous="x" * (PREVIOUS_TURN_MAX_CHARS * 3)))
    assert text.count("x") == PREVIOUS_TURN_MAX_CHARS


@given(text=st.text(min_size=1, max_size=200), prev=st.none() | st.text(max_size=200),
       speaker=st.none() | st.text(alphabet="abcXYZ 李", min_size=1, max_size=10))
def test_the_verbatim_text_is_always_indexed_by_both(text: str, prev: str | None, speaker: str | None) -> None:
    item = _turn(text=text, speaker=speaker, previous=prev)
    assert text in lexical_text(item)
    assert dense_text(item).endswith(text)
    assert lexical_text(item) == lexical_text(item)  # deterministic: reindex reproduces it


@pytest.mark.parametrize("size", [MAX_CONTENT_CHARS, MAX_CONTENT_CHARS - 1, MAX_CONTENT_CHARS - 20])
def test_a_max_size_turn_is_indexed_whole_and_its_context_gives_way(size: int) -> None:
    text = "y" * size
    item = _turn(text=text, speaker="a" * MAX_ID_CHARS, previous="Caroline: " + "q" * 2000)
    for indexed in (lexical_text(item), dense_text(item)):
        assert len(indexed) <= MAX_INDEX_CHARS == MAX_CONTENT_CHARS
        assert indexed.endswith(text)  # the turn itself is never cut
    # Context is dropped from the least useful end: previous turn, then date, then speaker.
    room = MAX_INDEX_CHARS - size
    assert ("Caroline" in lexical_text(item)) is (room >= 13 + PREVIOUS_TURN_MAX_CHARS + 1 + MAX_ID_CHARS + 2)
    assert dense_text(item) == (text if room < MAX_ID_CHARS + 2 else f"{'a' * MAX_ID_CHARS}: {text}")


def test_context_is_kept_up_to_the_limit() -> None:
    speaker = "Mel"
    text = "y" * (MAX_INDEX_CHARS - len(speaker) - 2)  # exactly room for "Mel: "
    item = _turn(text=text, speaker=speaker, previous="Caroline: hi")
    assert lexical_text(item) == dense_text(item) == f"Mel: {text}"
    date = "[8 May 2023] "
    text = "y" * (MAX_INDEX_CHARS - len(date) - len(speaker) - 2)  # room for the date too, not the previous turn
    item = _turn(text=text, speaker=speaker, previous="Caroline: hi")
    assert lexical_text(item) == f"{date}Mel: {text}" and len(lexical_text(item)) == MAX_INDEX_CHARS
