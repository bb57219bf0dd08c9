"""Message model: lossless OpenAI round trip and validation that names the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.errors import DuplicateId, InvalidInput
from hmem.types import (
    MAX_CLOCK_SKEW,
    Message,
    ToolCall,
    as_datetime,
    check_not_future,
    coerce_messages,
    renamed,
)

OPENAI_DICTS = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": "Answer in French."},
    {"role": "user", "content": "我住在北京 🐼", "name": "li_wei"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"北京"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "content": '{"temp": 21}', "tool_call_id": "call_1"},
    {"role": "assistant", "content": "It is 21 °C.", "name": "helper"},
]


@pytest.mark.parametrize("data", OPENAI_DICTS, ids=lambda d: d["role"])
def test_openai_dict_round_trip_is_exact(data: dict[str, object]) -> None:
    assert Message.from_openai(data).to_openai() == data


@pytest.mark.parametrize("data", OPENAI_DICTS, ids=lambda d: d["role"])
def test_storage_json_round_trip_keeps_id_and_time(data: dict[str, object]) -> None:
    message = Message.from_openai({**data, "id": "turn-7", "created_at": "2024-05-08T13:56:00+02:00"})
    again = Message.from_json(message.to_json())
    assert again == message
    assert again.id == "turn-7"
    assert again.created_at == datetime(2024, 5, 8, 11, 56, tzinfo=UTC)


def test_caller_supplied_id_and_defaults() -> None:
    a = Message(role="user", content="hi")
    b = Message(role="user", content="hi")
    assert a.id != b.id and len(a.id) == 32
    assert a.created_at.tzinfo is not None
    assert Message(role="user", content="x", id="D1:3").id == "D1:3"


def test_created_at_accepts_epoch_and_naive_as_utc() -> None:
    assert as_datetime(0) == datetime(1970, 1, 1, tzinfo=UTC)
    naive = datetime(2024, 1, 1, 12)
    assert Message(role="user", content="x", created_at=naive).created_at == naive.replace(tzinfo=UTC)
    plus2 = datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    assert Message(role="user", content="x", created_at=plus2).created_at.hour == 10


def test_tool_call_arguments_given_as_object_are_kept_as_json_text() -> None:
    m = Message.from_openai(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": "é"}}}],
        }
    )
    assert json.loads(m.tool_calls[0].arguments) == {"a": "é"}


# Bad inputs tried, each must raise InvalidInput naming the field:
BAD = [
    ({"role": "wizard", "content": "x"}, "role"),
    ({"content": "x"}, "role"),
    ({"role": "user", "content": 42}, "content"),
    ({"role": "user", "content": ["part"]}, "content"),
    ({"role": "user", "content": None}, "content"),
    ({"role": "assistant", "content": None}, "content"),
    ({"role": "tool", "content": "r"}, "tool_call_id"),
    ({"role": "tool", "content": "r", "tool_call_id": ""}, "tool_call_id"),
    ({"role": "user", "content": "x", "tool_call_id": "c1"}, "tool_call_id"),
    ({"role": "user", "content": "x", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}, "tool_calls"),
    ({"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}, "tool_calls[0].function"),
    ({"role": "assistant", "content": None, "tool_calls": "nope"}, "tool_calls"),
    (
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "function": {"name": "f"}}, {"id": "c", "function": {"name": "g"}}],
        },
        "tool_calls",
    ),
    ({"role": "user", "content": "x", "id": ""}, "id"),
    ({"role": "user", "content": "x", "id": "  padded "}, "id"),
    ({"role": "user", "content": "x", "id": 5}, "id"),
    ({"role": "user", "content": "x", "id": "a\nb"}, "id"),
    ({"role": "user", "content": "x", "created_at": "yesterday"}, "created_at"),
    ({"role": "user", "content": "x", "created_at": float("nan")}, "created_at"),
    ({"role": "user", "content": "\ud800 lone surrogate"}, "content"),
    ({"role": "user", "content": "x" * 1_000_001}, "content"),
    ({"role": "user", "content": "x", "colour": "red"}, "colour"),
    ({"role": "user", "content": "x", "metadata": {"k": {"nested": 1}}}, "metadata"),
    ({"role": "user", "content": "x", "metadata": {"k": float("inf")}}, "metadata"),
    ({"role": "user", "content": "x", "name": ""}, "name"),
]


@pytest.mark.parametrize(("data", "field"), BAD, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BAD)])
def test_bad_messages_raise_invalid_input_naming_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInput) as info:
        Message.from_openai(data)
    assert info.value.field is not None and info.value.field.startswith(field)


def test_non_mapping_message_is_rejected() -> None:
    for bad in ["hello", 3, None, ["role", "user"]]:
        with pytest.raises(InvalidInput):
            Message.from_openai(bad)


def test_coerce_messages_names_the_index_and_rejects_duplicate_ids() -> None:
    with pytest.raises(InvalidInput) as info:
        coerce_messages([{"role": "user", "content": "ok"}, {"role": "user", "content": 1}])
    assert info.value.field == "messages[1].content"
    with pytest.raises(InvalidInput, match="same message id"):
        coerce_messages([{"role": "user", "content": "a", "id": "x"}, {"role": "user", "content": "b", "id": "x"}])
    with pytest.raises(InvalidInput):
        coerce_messages({"role": "user", "content": "not a list"})  # type: ignore[arg-type]


def test_messages_are_immutable() -> None:
    m = Message(role="user", content="x")
    with pytest.raises(AttributeError):
        m.content = "y"  # type: ignore[misc]
    tc = ToolCall(id="c", name="f")
    with pytest.raises(AttributeError):
        tc.name = "g"  # type: ignore[misc]


texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@given(content=texts, name=st.none() | st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
def test_round_trip_property(content: str, name: str | None) -> None:
    m = Message(role="user", content=content, name=name)
    assert Message.from_json(m.to_json()) == m
    assert Message.from_openai(m.to_openai()).to_openai() == m.to_openai()


# -- caller-given times ahead of the clock; errors named as the caller named them ------------------

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("ahead", [timedelta(0), timedelta(minutes=4, seconds=59), MAX_CLOCK_SKEW])
def test_times_within_the_clock_skew_are_accepted(ahead: timedelta) -> None:
    assert check_not_future(NOW + ahead, "created_at", NOW) == NOW + ahead
    at = (NOW + ahead).isoformat()
    assert coerce_messages([{"role": "user", "content": "hi", "created_at": at}], now=NOW)[0].created_at == NOW + ahead


# Tried: just past the skew, a day, a year, the year 9999; as datetime, ISO text and epoch seconds.
FUTURE = [MAX_CLOCK_SKEW + timedelta(seconds=1), timedelta(days=1), timedelta(days=365), None]  # None: 9999


@pytest.mark.parametrize("ahead", FUTURE, ids=str)
def test_a_message_time_far_ahead_is_refused_on_write(ahead: timedelta | None) -> None:
    now = datetime.now(UTC)  # the first message's default created_at is the real clock's
    moment = datetime(9999, 12, 31, tzinfo=UTC) if ahead is None else now + ahead
    for value in (moment, moment.isoformat(), moment.timestamp()):
        batch = [{"role": "user", "content": "ok"}, {"role": "user", "content": "hi", "created_at": value}]
        with pytest.raises(InvalidInput) as info:
            coerce_messages(batch, now=now)
        assert info.value.field == "messages[1].created_at"
        assert "future" in str(info.value) and "messages[1].created_at" in str(info.value)
        # Without ``now`` (reading, assembling) the same message is a plain value.
        assert coerce_messages(batch)[1].created_at == moment


def test_renamed_names_the_callers_field_in_field_and_message() -> None:
    exc = InvalidInput("explicit must be >= 0, got -1", field="explicit")
    out = renamed(exc, {"explicit": "budget"})
    assert (out.field, str(out)) == ("budget", "budget must be >= 0, got -1")
    # Paths below the name follow; an empty new name strips the prefix.
    out = renamed(InvalidInput("entries[0].text must not be empty", field="entries[0].text"), {"entries[0]": ""})
    assert (out.field, str(out)) == ("text", "text must not be empty")
    out = renamed(InvalidInput("tool_calls[].id: bad", field="tool_calls[].id"), {"tool_calls[]": "tool_calls[2]"})
    assert (out.field, str(out)) == ("tool_calls[2].id", "tool_calls[2].id: bad")
    # A word that only looks like the name stays; other fields and classes are untouched.
    out = renamed(InvalidInput("explicit budget 9 is too big", field="explicit"), {"explicit": "budget"})
    assert (out.field, str(out)) == ("budget", "explicit budget 9 is too big")
    other = InvalidInput("k must be >= 1", field="k")
    assert renamed(other, {"explicit": "budget"}) is other
    assert type(renamed(DuplicateId("id is taken", field="id"), {"id": "message_id"})) is DuplicateId


def test_a_bad_tool_call_names_its_index() -> None:
    calls = [{"id": "a", "function": {"name": "f"}}, {"id": " b", "function": {"name": "f"}}]
    with pytest.raises(InvalidInput) as info:
        coerce_messages([{"role": "assistant", "content": None, "tool_calls": calls}])
    assert info.value.field == "messages[0].tool_calls[1].id"
