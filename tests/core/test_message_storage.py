"""The trusted storage decode (`Message._from_storage`) equals the validating path.

The session stores decode their own rows with it; a difference in any field would be a
silent data change on load, so equality is checked field by field on random messages
(tool calls, CJK, emoji, names, metadata, odd timestamps), and rows that are not in the
exact storage shape must still be validated.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmem.errors import InvalidInput
from hmem.types import Message, ToolCall

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)) | st.sampled_from(list("你好世界北京🐼👍🏽👨‍👩‍👧\"\\\n\t")),
    max_size=60,
)
IDS = st.text(alphabet=st.sampled_from(list("abcXYZ019_-.:李雷🐼")), min_size=1, max_size=20)
SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False, allow_infinity=False) | TEXT
WHEN = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=8)), timezone(timedelta(hours=-5, minutes=-30))]),
)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    calls: tuple[ToolCall, ...] = ()
    if role == "assistant" and draw(st.booleans()):
        ids = draw(st.lists(IDS, min_size=1, max_size=3, unique=True))
        calls = tuple(ToolCall(id=i, name=draw(IDS), arguments=draw(TEXT)) for i in ids)
    content = draw(st.none() | TEXT) if calls else draw(TEXT)
    return Message(
        role=role,
        content=content,
        name=draw(st.none() | IDS),
        tool_calls=calls,
        tool_call_id=draw(IDS) if role == "tool" else None,
        id=draw(IDS),
        created_at=draw(WHEN),
        metadata=draw(st.dictionaries(TEXT, SCALARS, max_size=4)),
    )


def fields(m: Message) -> tuple[object, ...]:
    return (m.role, m.content, m.name, m.tool_calls, m.tool_call_id, m.id, m.created_at, dict(m.metadata),
            type(m.tool_calls), m.created_at.tzinfo)


@settings(max_examples=300, deadline=None)
@given(message=messages())
def test_trusted_decode_equals_the_validating_decode(message: Message) -> None:
    stored = message.to_json()
    fast = Message._from_storage(stored)
    slow = Message.from_json(stored)
    assert fast == slow == message
    assert fields(fast) == fields(slow)
    assert fast.to_json() == stored  # re-storing is byte-identical
    assert Message._from_storage(stored.encode()) == message  # Redis hands back bytes
    assert Message._from_storage(json.loads(stored)) == message


@pytest.mark.parametrize(
    "row",
    [
        '{"role":"wizard","content":"x","id":"a","created_at":"2024-01-01T00:00:00+00:00"}',
        '{"role":"user","content":7,"id":"a","created_at":"2024-01-01T00:00:00+00:00"}',
        '{"role":"user","content":"x","id":"","created_at":"2024-01-01T00:00:00+00:00"}',
        '{"role":"user","content":"x","id":"a","created_at":"yesterday"}',
        '{"role":"user","content":"x","id":"a","created_at":"2024-01-01","color":"red"}',
        '{"role":"tool","content":"x","id":"a","created_at":"2024-01-01T00:00:00+00:00"}',
        '{"role":"user","content":"x","id":"a","created_at":"2024-01-01T00:00:00+00:00",'
        '"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}',
        '["not", "a", "message"]',
    ],
)
def test_rows_not_in_the_storage_shape_are_still_validated(row: str) -> None:
    with pytest.raises(InvalidInput):
        Message._from_storage(row)


def test_rows_in_another_zone_or_without_one_are_normalized_like_the_slow_path() -> None:
    for stamp in ("2024-01-01T08:00:00+08:00", "2024-01-01T00:00:00", "2024-01-01T00:00:00Z"):
        row = json.dumps({"role": "user", "content": "x", "id": "a", "created_at": stamp})
        fast = Message._from_storage(row)
        assert fast == Message.from_json(row)
        assert fast.created_at == datetime(2024, 1, 1, tzinfo=UTC) and fast.created_at.tzinfo is UTC
