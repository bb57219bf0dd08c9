"""What the date rules (:mod:`hmem.longterm._date_rules`) compute with: calendar
arithmetic, number and month words, tense cues, and :func:`find`, which runs the rules.
Pure and private; the rules in words are in data/date_eval/README.md.

A rule is a few needle words, a compiled pattern and a function from its match to
``(start, end, granularity)`` or ``None`` (the match is not a date after all); the
pattern only runs on a text holding a needle. Overlapping matches are settled by
:func:`find`: the longest wins, so "the day before yesterday" beats "yesterday" and
"今年6月" beats "今年". Everything is linear in the text (bisection, no rescans), so a
maximal message cannot stall ingest.
"""

from __future__ import annotations

import calendar
import re
from bisect import bisect_left
from collections.abc import Callable
from datetime import date, timedelta
from typing import Literal, TypeAlias

Granularity: TypeAlias = Literal["day", "week", "month", "year"]
Resolved: TypeAlias = tuple[date, date, Granularity]
Found: TypeAlias = tuple[int, int, date, date, Granularity]
Tense: TypeAlias = Literal["past", "future"]

# -- calendar arithmetic ----------------------------------------------------------------


def day(d: date) -> Resolved:
    return d, d, "day"


def monday(d: date) -> date:
    return d - timedelta(days=d.weekday())


def week(d: date) -> Resolved:
    start = monday(d)
    return start, start + timedelta(days=6), "week"


def weekend(a_monday: date) -> Resolved:
    # A weekend is two days, not a week: granularity "day" over Saturday..Sunday.
    sat = a_monday + timedelta(days=5)
    return sat, sat + timedelta(days=1), "day"


def month(year: int, mon: int, shift: int = 0) -> Resolved:
    k = year * 12 + mon - 1 + shift
    y, m = divmod(k, 12)
    return date(y, m + 1, 1), date(y, m + 1, calendar.monthrange(y, m + 1)[1]), "month"


def year(y: int) -> Resolved:
    return date(y, 1, 1), date(y, 12, 31), "year"


def valid_year(y: int) -> bool:
    return date.min.year < y < date.max.year


def day_by_tense(anchor: date, mon: int, dom: int, tense: Tense | None) -> Resolved | None:
    """A day without a year: the latest on or before the anchor when the sentence is in
    the past, else the first on or after it (Feb 29 looks a few years out)."""
    step = -1 if tense == "past" else 1
    for y in range(anchor.year, anchor.year + 9 * step, step):
        try:
            d = date(y, mon, dom)
        except ValueError:
            continue
        if (d <= anchor) if step < 0 else (d >= anchor):
            return day(d)
    return None


def month_by_tense(anchor: date, mon: int, tense: Tense | None) -> Resolved:
    if tense == "past":
        return month(anchor.year - (mon > anchor.month), mon)
    return month(anchor.year + (mon < anchor.month), mon)


def weekday_by_tense(anchor: date, wd: int, tense: Tense | None) -> Resolved:
    if tense == "past":
        return day(anchor - timedelta(days=(anchor.weekday() - wd - 1) % 7 + 1))
    return day(anchor + timedelta(days=(wd - anchor.weekday() - 1) % 7 + 1))


def weekend_by_tense(anchor: date, tense: Tense | None) -> Resolved:
    """Past: the latest weekend that began before the anchor; else the first that has
    not ended before it."""
    this = monday(anchor)
    if tense == "past":
        return weekend(this if anchor.weekday() == 6 else this - timedelta(weeks=1))
    return weekend(this)


def in_week(anchor: date, weeks: int, wd: int) -> Resolved:
    return day(monday(anchor) + timedelta(weeks=weeks, days=wd))


def shift(anchor: date, n: int, unit: str) -> Resolved | None:
    """``n`` units from the anchor (negative: ago), at the unit's granularity."""
    if unit == "day":
        return day(anchor + timedelta(days=n))
    if unit == "week":
        return week(anchor + timedelta(weeks=n))
    if unit == "month":
        return month(anchor.year, anchor.month, n)
    return year(anchor.year + n) if valid_year(anchor.year + n) else None


# -- numbers and names --------------------------------------------------------------------

_EN_NUMBERS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))} | {
    "a": 1, "an": 1, "thirty": 30, "forty": 40, "fifty": 50}
EN_NUM = r"(?:\d{1,3}|" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + ")"
MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
               "november", "december")
_MONTH_ABBR = {m[:3]: i for i, m in enumerate(MONTH_NAMES, 1)} | {"sept": 9}
EN_MONTH = r"(?:" + "|".join(MONTH_NAMES) + r"|(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?)"
EN_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
EN_WD = "(?:" + "|".join(EN_WEEKDAYS) + ")"
ZH_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}
ZH_NUM = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"
ZH_WD = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
UNITS = {"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
         "year": "year", "years": "year", "天": "day", "周": "week", "星期": "week", "礼拜": "week",
         "月": "month", "年": "year"}


def en_number(word: str) -> int:
    return int(word) if word.isdigit() else _EN_NUMBERS[word.lower()]


def zh_number(word: str) -> int | None:
    """1..99 in digits or Chinese numerals ("十二", "二十五", "两"); None otherwise."""
    if word.isdigit():
        return int(word)
    if "十" not in word:
        return ZH_DIGITS[word] if len(word) == 1 and word in ZH_DIGITS else None
    tens, _, ones = word.partition("十")
    if len(tens) > 1 or len(ones) > 1 or "十" in ones:
        return None
    value = ZH_DIGITS.get(tens, 1 if not tens else -99) * 10 + (ZH_DIGITS.get(ones, -99) if ones else 0)
    return value if value > 0 else None


def en_month(word: str) -> int:
    w = word.lower().rstrip(".")
    return MONTH_NAMES.index(w) + 1 if w in MONTH_NAMES else _MONTH_ABBR[w[:4] if w == "sept" else w[:3]]


# -- tense cues ----------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?;。！？；\n]")
_COMMA = re.compile("[,，、]")
_CLAUSE_PENALTY = 1_000_000
_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")
_CJK = re.compile("[\u3400-\u9fff]")
#: English past cues: simple-past verbs and words about the past; any other word ending
#: in -ed is one too, unless listed in :data:`_NOT_PAST`.
_PAST_WORDS = frozenset((
    "was", "were", "did", "had", "went", "came", "got", "made", "took", "saw", "met", "said", "told", "ate", "ran",
    "bought", "found", "gave", "left", "felt", "thought", "knew", "began", "wrote", "won", "lost", "spent", "sent",
    "paid", "sold", "built", "brought", "heard", "kept", "slept", "drove", "flew", "fell", "wore", "sang", "swam",
    "sat", "stood", "caught", "taught", "held", "ago", "yesterday", "since"))
#: Words ending in -ed that are adjectives or not verbs: "I'm excited about Saturday" is
#: not a past sentence.
_NOT_PAST = frozenset((
    "need", "feed", "seed", "speed", "weed", "breed", "greed", "indeed", "proceed", "exceed", "succeed", "hundred",
    "sacred", "naked", "wicked", "beloved", "excited", "interested", "tired", "bored", "worried", "scared",
    "married", "supposed", "pleased", "stressed", "thrilled", "based", "prepared", "engaged", "booked",
    "scheduled", "obsessed", "relaxed"))
_FUTURE_WORDS = frozenset((
    "will", "won't", "shall", "gonna", "wanna", "might", "could", "should", "let's", "upcoming", "soon", "tomorrow",
    "next"))
#: Future cues of two words: the first, and what the second must be.
_FUTURE_PAIRS = {"going": "to", "plan": "to", "plans": "to", "planning": "to", "hope": "to", "hopes": "to",
                 "hoping": "to", "want": "to", "wants": "to", "can't": "wait", "looking": "forward", "see": "you"}
_PERFECT_AUX = frozenset(("have", "has"))
_PERFECT_ADVERBS = frozenset(("just", "already", "now", "finally", "also", "never", "ever", "all"))


def _en_cues(text: str) -> list[tuple[int, int, Tense]]:
    """Tense cues of the English words of ``text``, by word lookups (one pass)."""
    words = [(m.start(), m.end(), m.group().lower().replace("’", "'")) for m in _WORD.finditer(text)]
    found: list[tuple[int, int, Tense]] = []
    for i, (start, end, w) in enumerate(words):
        nxt = words[i + 1][2] if i + 1 < len(words) else ""
        if w in _FUTURE_WORDS or w.endswith("'ll") or _FUTURE_PAIRS.get(w) == nxt or (
                (w in ("am", "are", "is") or w.endswith(("'m", "'re"))) and nxt.endswith("ing")):
            found.append((start, end, "future"))
        elif (w in _PAST_WORDS or (len(w) > 3 and w.endswith("ed") and w.isalpha() and w not in _NOT_PAST)) \
                and not (w == "got" and nxt == "it") and not _after_perfect(words, i):
            found.append((start, end, "past"))
    return found


def _after_perfect(words: list[tuple[int, int, str]], i: int) -> bool:
    # "I've booked the 28th of May", "I have already noted it": the present perfect
    # reports a plan as often as a past event, so it is no cue.
    for j in (i - 1, i - 2):
        if j < 0:
            return False
        w = words[j][2]
        if w in _PERFECT_AUX or w.endswith("'ve"):
            return True
        if w not in _PERFECT_ADVERBS:
            return False
    return False


_ZH_PAST = re.compile(r"(?<![为除])了|(?<![不难])过(?![年来去])|已经|刚才|刚刚|之前|以前|那时")
_ZH_FUTURE = re.compile(r"(?<![重主只])要|(?<![开聚晚机社协宴约唱学体])会(?!议)|将|打算|准备|计划|想|见|吧|可以")


class Cues:
    """Tense cues of one text, found once, asked per match. Within the match's sentence
    the nearer of two cues decides: the last one before the match, if it is in the
    match's own clause (no comma between), and the first one after it, which counts
    as farther when a comma lies between; a tie goes to the past. No cue means "not
    past" (plans, questions, the present)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._cues: list[tuple[int, int, Tense]] | None = None
        self._starts: list[int] = []
        self._stops: list[int] = []
        self._commas: list[int] = []

    def _load(self) -> list[tuple[int, int, Tense]]:
        if self._cues is None:
            found = _en_cues(self.text)
            if _CJK.search(self.text):
                found += [(m.start(), m.end(), "past") for m in _ZH_PAST.finditer(self.text)]
                found += [(m.start(), m.end(), "future") for m in _ZH_FUTURE.finditer(self.text)]
            self._cues = sorted(found)
            self._starts = [c[0] for c in self._cues]
            self._stops = [m.start() for m in _SENTENCE_END.finditer(self.text)]
            self._commas = [m.start() for m in _COMMA.finditer(self.text)]
        return self._cues

    def _crosses_comma(self, a: int, b: int) -> bool:
        return bisect_left(self._commas, a) != bisect_left(self._commas, b)

    def _clause_penalty(self, a: int, b: int) -> int:
        # A cue in the match's own clause beats a nearer one across a comma ("I visited
        # her on Saturday, and I'll see you next week" is about a past Saturday), yet
        # a later clause may hold the only verb ("On Saturday, we went hiking").
        return _CLAUSE_PENALTY if self._crosses_comma(a, b) else 0

    def tense(self, start: int, end: int) -> Tense | None:
        cues = self._load()
        i = bisect_left(self._stops, start)
        lo = self._stops[i - 1] if i else -1
        j = bisect_left(self._stops, end, lo=i)
        hi = self._stops[j] if j < len(self._stops) else len(self.text)
        before = after = None
        k = bisect_left(self._starts, start) - 1
        while k >= 0 and cues[k][0] > lo:  # the last cue ending before the match
            if cues[k][1] <= start:
                # An earlier clause is about something else: "我已经接受，十一月一号 start".
                before = None if self._crosses_comma(cues[k][1], start) else cues[k]
                break
            k -= 1
        k = bisect_left(self._starts, end)
        if k < len(cues) and cues[k][1] <= hi:  # the first cue starting after it
            after = cues[k]
        if before is None or after is None:
            return (before or after or (0, 0, None))[2]
        gap_before = start - before[1]
        gap_after = after[0] - end + self._clause_penalty(end, after[0])
        if gap_before != gap_after:
            return before[2] if gap_before < gap_after else after[2]
        return "past" if "past" in (before[2], after[2]) else "future"


#: A rule: words one of which the lower-cased text must hold for the rule to be tried
#: (a cheap test that spares most texts most patterns), its pattern, its resolver.
Rule: TypeAlias = tuple[tuple[str, ...], re.Pattern[str], Callable[[re.Match[str], date, Cues], Resolved | None]]


def find(rules: list[Rule], text: str, anchor: date) -> list[Found]:
    """Every rule's matches, overlaps settled longest-first, in text order."""
    cues = Cues(text)
    low = text.lower()
    candidates: list[Found] = []
    for needles, pattern, resolve in rules:
        if not any(n in low for n in needles):
            continue
        for m in pattern.finditer(text):
            try:
                got = resolve(m, anchor, cues)
            except (OverflowError, ValueError):  # before 1 AD or after 9999: no such day
                continue
            if got is not None:
                candidates.append((m.start(), m.end(), *got))
    candidates.sort()
    taken: list[Found] = []
    cluster: list[Found] = []
    reach = -1
    for c in candidates:  # overlapping matches form small clusters; settle each alone
        if cluster and c[0] >= reach:
            taken.extend(_settle(cluster))
            cluster = []
        cluster.append(c)
        reach = max(reach, c[1]) if len(cluster) > 1 else c[1]
    taken.extend(_settle(cluster))
    return taken


def _settle(cluster: list[Found]) -> list[Found]:
    kept: list[Found] = []  # disjoint, by start: a newcomer only has to clear its neighbours
    starts: list[int] = []
    for c in sorted(cluster, key=lambda c: (c[0] - c[1], c[0])):  # longest first, then leftmost
        i = bisect_left(starts, c[0])
        if (i == 0 or kept[i - 1][1] <= c[0]) and (i == len(kept) or c[1] <= kept[i][0]):
            kept.insert(i, c)
            starts.insert(i, c[0])
    return kept
