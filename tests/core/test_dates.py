"""Dates in a turn resolved against the session date (hmem.longterm.dates): pure rules.

The broad measure is the table in data/date_eval (tests/core/test_date_table.py); these
tests pin the rules one by one, the traps, the keys and the argument checks.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.errors import InvalidInput
from hmem.longterm.dates import DateSpan, date_keys, day_key, resolve_dates

MON = date(2023, 5, 8)  # a Monday
SUN = date(2024, 1, 7)  # a Sunday, first week of a year


def _found(text: str, anchor: date = MON) -> list[tuple[str, str, str, str]]:
    return [(text[s.text_span[0]:s.text_span[1]], s.start.isoformat(), s.end.isoformat(), s.granularity)
            for s in resolve_dates(text, anchor)]


@pytest.mark.parametrize(("text", "expected"), [
    ("I went there yesterday", [("yesterday", "2023-05-07", "2023-05-07", "day")]),
    ("the day before yesterday", [("the day before yesterday", "2023-05-06", "2023-05-06", "day")]),
    ("tonight and tomorrow", [("tonight", "2023-05-08", "2023-05-08", "day"),
                              ("tomorrow", "2023-05-09", "2023-05-09", "day")]),
    ("last Saturday", [("last Saturday", "2023-05-06", "2023-05-06", "day")]),
    ("next Saturday", [("next Saturday", "2023-05-20", "2023-05-20", "day")]),  # Saturday of next week
    ("last week", [("last week", "2023-05-01", "2023-05-07", "week")]),
    ("next weekend", [("next weekend", "2023-05-20", "2023-05-21", "day")]),
    ("next month", [("next month", "2023-06-01", "2023-06-30", "month")]),
    ("three weeks ago", [("three weeks ago", "2023-04-17", "2023-04-23", "week")]),
    ("ten years ago", [("ten years ago", "2013-01-01", "2013-12-31", "year")]),
    ("in 5 days", [("in 5 days", "2023-05-13", "2023-05-13", "day")]),
    ("on 7 May 2023", [("7 May 2023", "2023-05-07", "2023-05-07", "day")]),
    ("It was on May 7th", [("May 7th", "2023-05-07", "2023-05-07", "day")]),
    ("昨天", [("昨天", "2023-05-07", "2023-05-07", "day")]),
    ("上周六我们去爬山了", [("上周六", "2023-05-06", "2023-05-06", "day")]),
    ("上个月", [("上个月", "2023-04-01", "2023-04-30", "month")]),
    ("去年", [("去年", "2022-01-01", "2022-12-31", "year")]),
    ("两周前", [("两周前", "2023-04-24", "2023-04-30", "week")]),
    ("2023年5月7日", [("2023年5月7日", "2023-05-07", "2023-05-07", "day")]),
    ("我 last weekend 去了", [("last weekend", "2023-05-06", "2023-05-07", "day")]),
])
def test_each_kind_of_expression_resolves_against_the_anchor(text: str, expected: list[tuple[str, ...]]) -> None:
    assert _found(text) == expected


def test_weeks_run_monday_to_sunday_across_a_year_boundary() -> None:
    # On Sunday 7 Jan 2024 "this week" is 1..7 Jan and "last week" ends on New Year's Eve.
    assert _found("this week, last week", SUN) == [
        ("this week", "2024-01-01", "2024-01-07", "week"), ("last week", "2023-12-25", "2023-12-31", "week")]
    assert _found("上周日", SUN) == [("上周日", "2023-12-31", "2023-12-31", "day")]


def test_months_and_days_roll_over_years_and_leap_days() -> None:
    assert _found("next month", date(2023, 12, 15))[0][1:3] == ("2024-01-01", "2024-01-31")
    assert _found("a month ago", date(2024, 3, 31))[0][1:3] == ("2024-02-01", "2024-02-29")
    assert _found("tomorrow", date(2024, 2, 28))[0][1] == "2024-02-29"
    # A leap day without a year looks ahead to the next year that has one.
    assert _found("on February 29", date(2023, 5, 8))[0][1] == "2024-02-29"


@pytest.mark.parametrize(("text", "anchor", "day"), [
    ("I went hiking on Saturday", MON, "2023-05-06"),       # past tense: looks back
    ("We're meeting on Saturday", MON, "2023-05-13"),       # plan: looks forward
    ("See you on Saturday!", MON, "2023-05-13"),            # no cue: forward
    ("I visited my aunt on Saturday, and I'll see you next week", MON, "2023-05-06"),  # the nearer cue wins
    ("我周一去看了医生", date(2023, 6, 15), "2023-06-12"),
    ("我们周六见", date(2023, 6, 15), "2023-06-17"),
])
def test_a_weekday_alone_follows_the_tense_of_its_sentence(text: str, anchor: date, day: str) -> None:
    assert next(f[1] for f in _found(text, anchor) if f[3] == "day") == day


def test_a_month_or_day_without_a_year_follows_the_tense() -> None:
    assert _found("We went to Paris in April.", date(2023, 6, 15))[0][1] == "2023-04-01"
    assert _found("We might go to Paris in April.", date(2023, 6, 15))[0][1] == "2024-04-01"
    assert _found("The concert was on April 29th", MON)[0][1] == "2023-04-29"
    assert _found("The concert is on April 29th", MON)[0][1] == "2024-04-29"


@pytest.mark.parametrize("text", [
    "May I ask what you had for dinner?", "I'll march on no matter what.", "She wore her Sunday best.",
    "Put it next to the window.", "I was there a second ago.", "a few days ago", "the other day",
    "We have practice on Saturdays.", "in the last month", "the next day", "I finished it in 3 days.",
    "I paid 2000 dollars", "My exam is on the 7th.", "Last summer", "on Christmas",
    "他说先天不足后天补", "我在星期五餐厅吃饭", "《星期天的约会》", "周杰伦", "我住在7号楼", "坐2号线",
    "几天前", "最近", "每个周六都有训练", "马上周末了", "四周一片寂静", "",
])
def test_traps_and_vague_words_resolve_to_nothing(text: str) -> None:
    assert resolve_dates(text, MON) == ()


def test_spans_point_at_the_expression_and_come_in_text_order() -> None:
    text = "明天 we fly; last Friday I packed, and the day after tomorrow we land."
    spans = resolve_dates(text, MON)
    assert [text[s.text_span[0]:s.text_span[1]] for s in spans] == [
        "明天", "last Friday", "the day after tomorrow"]


def test_a_datetime_anchor_counts_as_its_day() -> None:
    assert resolve_dates("yesterday", datetime(2023, 5, 8, 23, 59, tzinfo=UTC)) == resolve_dates("yesterday", MON)


def test_keys_use_the_index_date_format() -> None:
    spans = resolve_dates("yesterday, last weekend, last week, last month, last year", MON)
    assert date_keys(spans) == [
        "7 May 2023", "6 May 2023", "week of 1 May 2023", "April 2023", "2022"]  # "7 May 2023" once
    assert day_key(date(2024, 2, 29)) == "29 February 2024"
    assert date_keys([]) == []


@pytest.mark.parametrize(("text", "anchor"), [
    (None, MON), (b"yesterday", MON), (42, MON), ("yesterday", "2023-05-08"), ("yesterday", None),
    ("yesterday", 20230508),
])
def test_bad_arguments_are_refused(text: object, anchor: object) -> None:
    with pytest.raises(InvalidInput, match="must be"):
        resolve_dates(text, anchor)  # type: ignore[arg-type]


@pytest.mark.parametrize("spans", ["7 May 2023", [("7 May 2023",)], [None], [date(2023, 5, 7)]])
def test_date_keys_refuses_what_is_not_a_date_span(spans: object) -> None:
    with pytest.raises(InvalidInput, match="DateSpan"):
        date_keys(spans)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"text_span": (3, 3)}, "text_span"), ({"text_span": (-1, 2)}, "text_span"), ({"text_span": [0, 2]}, "text_span"),
    ({"start": date(2023, 5, 9)}, "start"), ({"end": datetime(2023, 5, 9)}, "end"),
    ({"granularity": "fortnight"}, "granularity"),
])
def test_a_date_span_checks_its_fields(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"text_span": (0, 2), "start": MON, "end": MON, "granularity": "day"} | kwargs
    with pytest.raises(InvalidInput) as info:
        DateSpan(**args)  # type: ignore[arg-type]
    assert info.value.field == field


_PIECES = [*"0123456789 -,.年月日号周末星期天上下这本前后个两三", "May ", "last ", "next ", "week", "day", "Friday",
           "ago", "in ", "on ", "yesterday", "tomorrow", "2023", "the ", "went "]


@given(text=st.lists(st.sampled_from(_PIECES), max_size=25).map("".join) | st.text(max_size=60),
       anchor=st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)))
def test_any_text_gives_ordered_disjoint_valid_spans(text: str, anchor: date) -> None:
    spans = resolve_dates(text, anchor)
    ends = [0]
    for s in spans:
        assert ends[-1] <= s.text_span[0] < s.text_span[1] <= len(text)
        assert s.start <= s.end
        ends.append(s.text_span[1])
    assert resolve_dates(text, anchor) == spans  # deterministic: reindex reproduces the keys
