"""Dates a turn refers to, resolved against the session date: pure, offline, fast.

"I went there yesterday", said on 8 May 2023, is about 7 May 2023; a question asks
"what did Mel do on 7 May?". :func:`resolve_dates` finds the dates a text refers to —
relative ones ("yesterday", "last Saturday", "next month", "three weeks ago", 昨天,
上周六, 下个月, 去年, 两周前) and explicit ones ("7 May 2023", "May 7th", "in June",
2023年5月7日, 5月7号) — and :func:`date_keys` writes them as index words in the format
the lexical index uses for the session date ("7 May 2023", "May 2023", "2023").

The rules, in short (all of them, with the evaluation table they are measured on:
data/date_eval/README.md):

- Weeks run Monday..Sunday. "last/this/next Friday" and 上周五/这周五/下周五 are the
  Friday of the previous/this/next week; "last/this/next weekend" likewise.
- Where the text does not say which way ("on Friday", "in June", "May 7", 周五, 6月,
  "over the weekend"), the nearest tense cue in the sentence decides: past ("went",
  "-ed", 了, 过 …) looks back from the anchor, anything else (plans, questions, the
  present) looks forward.
- "N days ago" is a day; "N weeks ago" is the week holding that day; months and years
  likewise. Vague amounts ("a few days ago", 几天前, "recently"), seasons, holidays,
  durations ("in 3 days" in a past sentence) and units below a day are not resolved.
- A hypothetical or a question still refers to its date ("if it rains tomorrow").

Measured on data/date_eval (``python3 data/date_eval/check_table.py --split test``):
see docs/longterm.md, "Dates in a turn".

Example::

    >>> from datetime import date
    >>> spans = resolve_dates("Last Saturday we hiked; next month I'm off to Rome.", date(2023, 5, 8))
    >>> [(s.text_span, s.start.isoformat(), s.end.isoformat(), s.granularity) for s in spans]
    [((0, 13), '2023-05-06', '2023-05-06', 'day'), ((24, 34), '2023-06-01', '2023-06-30', 'month')]
    >>> date_keys(spans)
    ['6 May 2023', 'June 2023']
    >>> date_keys(resolve_dates("我上周去了杭州，去年也去过。", date(2023, 5, 8)))
    ['week of 1 May 2023', '2022']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import get_args

from hmem._time import MONTH_NAMES, day_key
from hmem.errors import InvalidInput
from hmem.longterm._date_calc import Granularity, find
from hmem.longterm._date_rules import RULES, TRIGGER

__all__ = ["MONTH_NAMES", "DateSpan", "Granularity", "annotate_dates", "date_keys", "day_key", "mentions_period", "query_period",
           "resolve_dates"]

#: A span of days longer than this gets its two ends as keys, not every day.
_MAX_DAYS_LISTED = 7


@dataclass(frozen=True, slots=True)
class DateSpan:
    """One date reference: where it is in the text (``text[s:e]``), the first and last
    day it covers (inclusive) and its unit. A weekend is two days of granularity
    ``"day"``; a week runs Monday..Sunday."""

    text_span: tuple[int, int]
    start: date
    end: date
    granularity: Granularity

    def __post_init__(self) -> None:
        s = self.text_span
        if not (isinstance(s, tuple) and len(s) == 2 and all(type(i) is int for i in s) and 0 <= s[0] < s[1]):
            raise InvalidInput(f"text_span must be a (start, end) pair of ints with 0 <= start < end, got {s!r}",
                               field="text_span")
        for name in ("start", "end"):
            value = getattr(self, name)
            if not isinstance(value, date) or isinstance(value, datetime):
                raise InvalidInput(f"{name} must be a datetime.date (not a datetime), got {value!r}", field=name)
        if self.start > self.end:
            raise InvalidInput(f"start {self.start} is after end {self.end}: swap them", field="start")
        if self.granularity not in get_args(Granularity):
            raise InvalidInput(f"granularity must be one of {get_args(Granularity)}, got {self.granularity!r}",
                               field="granularity")


def _anchor_day(anchor: object) -> date:
    if isinstance(anchor, datetime):
        return anchor.date()
    if isinstance(anchor, date):
        return anchor
    raise InvalidInput(f"anchor must be a datetime.date (the session date), got {type(anchor).__name__}",
                       field="anchor")


def resolve_dates(text: str, anchor: date) -> tuple[DateSpan, ...]:
    """The dates ``text`` refers to, resolved against ``anchor`` (the day it was said;
    a ``datetime`` counts as its date), in text order.

    >>> [s.start.isoformat() for s in resolve_dates("See you tomorrow! 明天见", date(2023, 12, 31))]
    ['2024-01-01', '2024-01-01']
    >>> resolve_dates("May I ask what you'll march on?", date(2023, 5, 8))
    ()

    Raises :class:`InvalidInput` when ``text`` is not a string or ``anchor`` not a date.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"text must be a string, got {type(text).__name__}", field="text")
    day = _anchor_day(anchor)
    if not TRIGGER.search(text.lower()):
        return ()
    return tuple(DateSpan((s, e), start, end, gran) for s, e, start, end, gran in find(RULES, text, day))


def _keys(span: DateSpan) -> list[str]:
    if span.granularity == "year":
        years = range(span.start.year, span.end.year + 1)
        return [str(y) for y in years] if len(years) <= _MAX_DAYS_LISTED else [str(years[0]), str(years[-1])]
    if span.granularity == "month":
        return [f"{MONTH_NAMES[d.month - 1]} {d.year}" for d in (span.start, span.end)]
    if span.granularity == "week":
        return [f"week of {day_key(span.start)}"]
    days = (span.end - span.start).days + 1
    if days > _MAX_DAYS_LISTED:
        return [day_key(span.start), day_key(span.end)]
    return [day_key(span.start + timedelta(days=i)) for i in range(days)]


def date_keys(spans: Iterable[DateSpan]) -> list[str]:
    """The index words for ``spans``, each once, in order: a day ``"7 May 2023"``, each
    day of a weekend, a month ``"May 2023"``, a year ``"2023"``, a week
    ``"week of 1 May 2023"`` (its Monday: one key, not seven days that would outweigh
    the turn's own words in BM25).

    >>> d = date(2023, 5, 1)
    >>> date_keys([DateSpan((0, 9), d, d + timedelta(days=6), "week"), DateSpan((10, 14), d, d, "day")])
    ['week of 1 May 2023', '1 May 2023']

    Raises :class:`InvalidInput` when an element is not a :class:`DateSpan`.
    """
    if isinstance(spans, (str, bytes)):
        raise InvalidInput("spans must be DateSpan values (from resolve_dates), got a string", field="spans")
    out: dict[str, None] = {}
    for span in spans:
        if not isinstance(span, DateSpan):
            raise InvalidInput(f"spans must hold DateSpan values (from resolve_dates), got {type(span).__name__}",
                               field="spans")
        out.update(dict.fromkeys(_keys(span)))
    return list(out)


def query_period(query: str, today: date) -> tuple[date, date] | None:
    """The days a question asks about, first to last (inclusive), or None when it names no
    date. Relative words count from ``today`` (the day of the question).

    >>> query_period("What did Mel paint in July 2023?", date(2024, 1, 5))
    (datetime.date(2023, 7, 1), datetime.date(2023, 7, 31))
    >>> query_period("What does Mel like?", date(2024, 1, 5)) is None
    True
    """
    spans = resolve_dates(query, today)
    if not spans:
        return None
    return min(s.start for s in spans), max(s.end for s in spans)


def mentions_period(text: str, said_on: date, period: tuple[date, date]) -> bool:
    """True when a turn said on ``said_on`` falls in ``period``, or refers to a date in
    it ("last week I went camping", said early in August, is about July).

    >>> july = (date(2023, 7, 1), date(2023, 7, 31))
    >>> mentions_period("Last week I went camping.", date(2023, 8, 3), july)
    True
    >>> mentions_period("I went camping.", date(2023, 8, 3), july)
    False
    """
    first, last = period
    if first <= said_on <= last:
        return True
    return any(s.start <= last and s.end >= first for s in resolve_dates(text, said_on))



def _label(span: DateSpan) -> str:
    keys = _keys(span)
    return keys[0] if len(keys) == 1 or keys[0] == keys[-1] else f"{keys[0]} – {keys[-1]}"


_HAS_YEAR = re.compile(r"\d{4}")


def annotate_dates(text: str, said_on: date) -> str:
    """``text`` with each date it refers to written out after the words that name it,
    resolved against ``said_on`` ("last Saturday" → "last Saturday (6 May 2023)"), so a
    fact read months later still says when. Dates already written with a year are left
    as they are.

    >>> annotate_dates("Maya went hiking last Saturday; 2023年5月1日也去了", date(2023, 5, 8))
    'Maya went hiking last Saturday (6 May 2023); 2023年5月1日也去了'
    """
    out = text
    for span in reversed(resolve_dates(text, said_on)):
        start, end = span.text_span
        if _HAS_YEAR.search(text[start:end]):
            continue
        out = f"{out[:end]} ({_label(span)}){out[end:]}"
    return out
