"""Validation of long-term store arguments against overflow: user numbers and dates that
would make ``timedelta``/``datetime`` raise OverflowError must be InvalidInput naming the
field (found by the HTTP fuzzer: ``recency_half_life=1e300``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.longterm._args import check_entries, check_entry, check_forget_filter
from hmem.longterm.options import RecallOptions
from hmem.types import Message, as_datetime

HUGE_NUMBERS: list[Any] = [1e300, -1e300, float("inf"), float("-inf"), float("nan"), 10**400, -(10**400), 1e20]
BAD_DATES: list[Any] = [
    *HUGE_NUMBERS,
    "0001-01-01T00:00:00+05:00",  # before year 1 once converted to UTC
    "9999-12-31T23:00:00-05:00",  # after year 9999 in UTC
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=3))),
]


def short(value: Any) -> str:
    return repr(value)[:28]


def recall(**overrides: Any) -> dict[str, Any]:
    options = RecallOptions(**{"fusion": "rrf", **overrides})
    return {"half_life": options.half_life, "filter": options.item_filter}


@pytest.mark.parametrize("value", [*HUGE_NUMBERS, 0, -5, 1e-9, timedelta(0), "7d", True], ids=short)
def test_recency_half_life_out_of_range_is_invalid_input(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        recall(recency_half_life=value)
    assert info.value.field == "recency_half_life"


def test_recency_half_life_in_range_is_accepted() -> None:
    assert recall(recency_half_life=86_400)["half_life"] == timedelta(days=1)
    assert recall(recency_half_life=timedelta.max)["half_life"] == timedelta.max
    assert recall(recency_half_life=8.6e13)["half_life"] == timedelta(seconds=8.6e13)  # ~2.7 million years


@pytest.mark.parametrize("field", ["since", "until"])
@pytest.mark.parametrize("value", BAD_DATES, ids=short)
def test_since_until_out_of_range_are_invalid_input(field: str, value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        recall(**{field: value})
    assert info.value.field == field


@pytest.mark.parametrize("value", [10**400, float("nan"), float("inf")], ids=short)
def test_importance_weight_too_large_or_not_finite_is_invalid_input(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        recall(importance_weight=value)
    assert info.value.field == "importance_weight"


@pytest.mark.parametrize("value", [*BAD_DATES, datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"], ids=short)
def test_forget_before_out_of_range_is_invalid_input(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        check_forget_filter(None, None, None, value, False)
    assert info.value.field == "before"


def test_forget_before_at_the_extremes_that_exist() -> None:
    flt = check_forget_filter(None, None, None, datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC), False)
    assert flt is not None and flt.until == datetime(1, 1, 1, tzinfo=UTC)
    flt = check_forget_filter(None, None, None, "9999-12-31T23:59:59.999999+00:00", False)
    assert flt is not None and flt.until == datetime(9999, 12, 31, 23, 59, 59, 999998, tzinfo=UTC)


@pytest.mark.parametrize("value", BAD_DATES, ids=short)
def test_entry_created_at_out_of_range_is_invalid_input(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        check_entries(["good", {"text": "x", "created_at": value}])
    assert info.value.field == "entries[1].created_at"


@pytest.mark.parametrize("value", BAD_DATES, ids=short)
def test_as_datetime_and_message_created_at_never_overflow(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        as_datetime(value, "when")
    assert info.value.field == "when"
    with pytest.raises(InvalidInput) as info:
        Message.from_openai({"role": "user", "content": "hi", "created_at": value})
    assert info.value.field == "created_at"


# -- errors name the caller's own argument; times far ahead are refused -----------------------------


def test_a_single_entry_names_the_remember_arguments() -> None:
    # Tried: blank text, a bad kind, importance 2, a non-object metadata, a bad date.
    cases = [({"text": "  "}, "text"), ({"text": "x", "kind": " k"}, "kind"), ({"text": "x", "importance": 2}, "importance"),
             ({"text": "x", "metadata": [1]}, "metadata"), ({"text": "x", "created_at": "soon"}, "created_at")]
    for raw, field in cases:
        with pytest.raises(InvalidInput) as info:
            check_entry(raw)
        assert info.value.field == field
        assert str(info.value).startswith(field) and "entries" not in str(info.value)
    with pytest.raises(InvalidInput) as info:
        check_entries(["ok", {"text": "  "}])
    assert info.value.field == "entries[1].text"


NOW = datetime(2025, 6, 1, tzinfo=UTC)


def test_entry_created_at_far_ahead_of_the_clock_is_refused() -> None:
    for ahead in (timedelta(minutes=5, seconds=1), timedelta(days=400)):
        with pytest.raises(InvalidInput) as info:
            check_entry({"text": "x", "created_at": NOW + ahead}, now=NOW)
        assert info.value.field == "created_at" and "future" in str(info.value)
        with pytest.raises(InvalidInput) as info:
            check_entries(["ok", {"text": "x", "created_at": (NOW + ahead).isoformat()}], now=NOW)
        assert info.value.field == "entries[1].created_at"
    assert check_entry({"text": "x", "created_at": NOW + timedelta(minutes=5)}, now=NOW).created_at is not None
    # Without a clock (e.g. validating an export) a time is only checked for range.
    assert check_entry({"text": "x", "created_at": NOW + timedelta(days=400)}).created_at == NOW + timedelta(days=400)


def test_list_arguments_name_the_bad_element() -> None:
    with pytest.raises(InvalidInput) as info:
        recall(kinds=["fact", " bad"])
    assert info.value.field == "kinds[1]"
    with pytest.raises(InvalidInput) as info:
        check_forget_filter(["a", "b", ""], None, None, None, False)
    assert info.value.field == "ids[2]"


@pytest.mark.parametrize("value", [1e-7, 4e-7, timedelta(0), 0, -1], ids=short)
def test_a_half_life_that_rounds_to_nothing_is_invalid_input(value: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        recall(recency_half_life=value)
    assert info.value.field == "recency_half_life" and "microsecond" in str(info.value)
    assert recall(recency_half_life=1e-6)["half_life"] == timedelta(microseconds=1)


def test_recall_options_are_normalised_once_and_hand_down_a_filter() -> None:
    opts = RecallOptions(kinds="fact", since=0, recency_half_life=60, stages="session, time")
    assert opts.kinds == frozenset({"fact"}) and opts.item_filter.kinds == frozenset({"fact"})
    assert opts.half_life == timedelta(seconds=60) and opts.stages == ("session", "time")
    assert opts.to_dict()["recency_half_life_s"] == 60.0


@pytest.mark.parametrize("bad", [{"stages": ["sesion"]}, {"stages": 3}, {"fusion": "max"}, {"session_id": " s"},
                                 {"metadata": {"a": [1]}}])
def test_recall_options_refuse_bad_values_as_invalid_input(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as info:
        RecallOptions(**bad)
    assert info.value.field is not None
