"""Resolved dates as lexical index keys of a turn (hmem.longterm.index_text + dates)."""

from __future__ import annotations

from datetime import UTC, datetime

from hmem.longterm.index_text import (
    DATE_SCAN_CHARS,
    MAX_DATE_KEYS,
    MAX_INDEX_CHARS,
    PREVIOUS_TURN_KEY,
    dense_text,
    lexical_text,
)
from hmem.longterm.text import tokenize
from hmem.types import MemoryItem

AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _item(text: str, kind: str = "turn", previous: str | None = None) -> MemoryItem:
    meta = {PREVIOUS_TURN_KEY: previous} if previous else {}
    return MemoryItem(id="i", user_id="u", text=text, kind=kind, speaker="Mel", created_at=AT, metadata=meta)


def test_a_turn_is_indexed_under_the_dates_it_refers_to() -> None:
    item = _item("I went to a support group yesterday, and 下周 I start a course.", previous="Caroline: hi")
    assert lexical_text(item) == (
        "[8 May 2023] Caroline: hi\n"
        "Mel: I went to a support group yesterday, and 下周 I start a course. (7 May 2023; week of 15 May 2023)")
    # A question naming the day now shares its words with the turn.
    assert {"7", "2023"} <= set(tokenize(lexical_text(item)))
    assert item.text == "I went to a support group yesterday, and 下周 I start a course."  # stored text unchanged
    assert dense_text(item) == "Mel: " + item.text  # the dense side is not expanded


def test_no_dates_no_parentheses_and_the_session_date_is_not_repeated() -> None:
    assert lexical_text(_item("Yes, twice a week!")) == "[8 May 2023] Mel: Yes, twice a week!"
    assert lexical_text(_item("I'm tired today")) == "[8 May 2023] Mel: I'm tired today"
    assert lexical_text(_item("today and tomorrow")) == "[8 May 2023] Mel: today and tomorrow (9 May 2023)"


def test_facts_get_no_date_keys() -> None:
    assert lexical_text(_item("Mel went hiking yesterday", kind="fact")) == "Mel went hiking yesterday"


def test_date_keys_are_capped_and_only_the_head_of_a_long_turn_is_read() -> None:
    many = " ".join(f"{d} days ago," for d in range(1, 40))
    keys = lexical_text(_item(many)).rsplit("(", 1)[1]
    assert keys.count(";") == MAX_DATE_KEYS - 1
    late = "x" * DATE_SCAN_CHARS + " yesterday"
    assert lexical_text(_item(late)) == f"[8 May 2023] Mel: {late}"


def test_near_the_limit_the_dates_go_before_the_session_date() -> None:
    head = "yesterday "
    room_for_date_only = MAX_INDEX_CHARS - len("[8 May 2023] Mel: ") - len(head)
    item = _item(head + "y" * room_for_date_only, previous="Caroline: hi")
    assert lexical_text(item) == f"[8 May 2023] Mel: {item.text}"
    assert len(lexical_text(item)) == MAX_INDEX_CHARS
    fits = _item(head + "y" * (room_for_date_only - len(" (7 May 2023)")))
    assert lexical_text(fits).endswith(" (7 May 2023)") and len(lexical_text(fits)) == MAX_INDEX_CHARS
