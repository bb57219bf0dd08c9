"""The English and Chinese date rules of :func:`hmem.longterm.dates.resolve_dates`.

Pure and private. Each rule is a pattern and the function that turns its match into a
date range (see :mod:`hmem.longterm._date_calc`); the choices are written out in
data/date_eval/README.md. The guards (lookbehinds, "must be capitalised", "needs a
preposition") exist because most date words have another meaning: "May I ask",
"I'll march on", "Sunday best", "next to", 先天后天, 星期五餐厅, 7号线, 四周一片.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from hmem.longterm._date_calc import (
    EN_MONTH,
    EN_NUM,
    EN_WD,
    EN_WEEKDAYS,
    MONTH_NAMES,
    UNITS,
    ZH_NUM,
    ZH_WD,
    Cues,
    Resolved,
    Rule,
    day,
    day_by_tense,
    en_month,
    en_number,
    in_week,
    monday,
    month,
    month_by_tense,
    shift,
    valid_year,
    week,
    weekday_by_tense,
    weekend,
    weekend_by_tense,
    year,
    zh_number,
)

__all__ = ["RULES", "TRIGGER"]

_L, _LN, _R = r"(?<![A-Za-z])", r"(?<![A-Za-z0-9])", r"(?![A-Za-z])"


def _en(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    # A space in a rule means "any run of whitespace".
    return re.compile(pattern.replace(" ", r"\s+"), flags)


def _words(m: re.Match[str], group: int | str) -> str:
    return " ".join((m.group(group) or "").lower().split())


# -- English -------------------------------------------------------------------------------

_REL_DAYS = {"the day before yesterday": -2, "the day after tomorrow": 2, "yesterday": -1, "last night": -1,
             "today": 0, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1}
_REL = {"last": -1, "this": 0, "next": 1}


def _rel_day(m: re.Match[str], a: date, _: Cues) -> Resolved:
    return day(a + timedelta(days=_REL_DAYS[_words(m, 1)]))


def _rel_weekday(m: re.Match[str], a: date, _: Cues) -> Resolved:
    rel, wd = _words(m, 1), EN_WEEKDAYS.index(_words(m, 2))
    if rel in _REL:  # the weekday in the previous / this / next Monday..Sunday week
        return in_week(a, _REL[rel], wd)
    return weekday_by_tense(a, wd, "past" if rel == "this past" else "future")


def _bare_weekday(m: re.Match[str], a: date, cues: Cues) -> Resolved:
    how, wd = _words(m, 1), EN_WEEKDAYS.index(_words(m, 2) or _words(m, 3))
    tense = {"this past": "past", "this coming": "future"}.get(how) or cues.tense(m.start(), m.end())
    return weekday_by_tense(a, wd, tense)  # type: ignore[arg-type]


def _en_weekend(m: re.Match[str], a: date, cues: Cues) -> Resolved:
    rel = _words(m, 1)
    if rel in _REL:
        return weekend(monday(a) + timedelta(weeks=_REL[rel]))
    tense = {"this past": "past", "this coming": "future"}.get(rel) or cues.tense(m.start(), m.end())
    return weekend_by_tense(a, tense)  # type: ignore[arg-type]


def _ago(m: re.Match[str], a: date, _: Cues) -> Resolved | None:
    return shift(a, -en_number(_words(m, 1)), UNITS[_words(m, 2)])


def _in(m: re.Match[str], a: date, cues: Cues) -> Resolved | None:
    if m.group(1) and cues.tense(m.start(), m.end()) == "past":
        return None  # "I read it in 3 days": a duration, not a date
    n, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return shift(a, en_number(n), UNITS[unit.lower()])


def _iso(m: re.Match[str], a: date, _: Cues) -> Resolved | None:
    try:
        return day(date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
    except ValueError:
        return None


def _day_month(m: re.Match[str], mon: str, dom: str, a: date, cues: Cues) -> Resolved | None:
    if m.group(3) is None:
        return day_by_tense(a, en_month(mon), int(dom), cues.tense(m.start(), m.end()))
    try:
        return day(date(int(m.group(3)), en_month(mon), int(dom)))
    except ValueError:
        return None


def _dmy(m: re.Match[str], a: date, cues: Cues) -> Resolved | None:
    return _day_month(m, m.group(2), m.group(1), a, cues)


def _mdy(m: re.Match[str], a: date, cues: Cues) -> Resolved | None:
    return _day_month(m, m.group(1), m.group(2), a, cues)


def _month_year(m: re.Match[str], a: date, _: Cues) -> Resolved:
    return month(int(m.group(2)), en_month(m.group(1)))


def _bare_month(m: re.Match[str], a: date, cues: Cues) -> Resolved:
    how, mon = _words(m, 1), MONTH_NAMES.index(m.group(2).lower()) + 1
    if how == "last":  # the latest such month before this one
        return month(a.year - (mon >= a.month), mon)
    if how == "next":
        return month(a.year + (mon <= a.month), mon)
    if how == "this":
        return month(a.year, mon)
    return month_by_tense(a, mon, "past" if how == "since" else cues.tense(m.start(), m.end()))


def _bare_year(m: re.Match[str], a: date, _: Cues) -> Resolved:
    return year(int(m.group(1)))


_REL_DAY_WORDS = ("yesterday", "today", "tonight", "tomorrow", "night", "morning", "afternoon", "evening")
_WD_NAMES = EN_WEEKDAYS
_UNIT_WORDS = ("day", "week", "month", "year")
_MON3 = tuple(name[:3] for name in MONTH_NAMES)
_CAPITALISED_MONTH = "(" + "|".join(n.capitalize() for n in MONTH_NAMES) + ")"
_NOT_A_YEAR = r"(?!\s*(?:%|dollars?|euros?|pounds?|yuan|rmb|usd|bucks|people|times|points|calories|steps|words|km|kg|miles?|meters?|feet)\b)"

_EN_RULES: list[Rule] = [
    (_REL_DAY_WORDS, _en(_L + "(the day before yesterday|the day after tomorrow|yesterday|last night|today|tonight"
         "|this (?:morning|afternoon|evening)|tomorrow)" + _R), _rel_day),
    (_WD_NAMES, _en(_L + rf"(?<!the\s)(last|this past|this coming|this|next) ({EN_WD})" + _R), _rel_weekday),
    # "on Saturday 17 June": the date that follows says which Saturday.
    (_WD_NAMES, _en(_L + f"(?:(on|this past|this coming) ({EN_WD})|(?<!last\\s)(?<!this\\s)(?<!next\\s)({EN_WD}) "
         "(?:night|morning|afternoon|evening))" + _R + r"(?!,?\s+(?:the\s+)?\d)"), _bare_weekday),
    (("weekend",), _en(_L + "(last|this past|this coming|this|next|over the|on the|at the|during the|for the) weekend" + _R),
     _en_weekend),
    # "in the last month", "the next week": a duration or "the week after that", not a date.
    (("week", "month", "year"), _en(_L + r"(?:(the (week|month|year) before last)|(?<!the\s)(last|this|next) (week|month|year))" + _R),
     lambda m, a, c: shift(a, -2, _words(m, 2)) if m.group(1) else shift(a, _REL[_words(m, 3)], _words(m, 4))),
    (("ago",), _en(_L + f"({EN_NUM}) (day|week|month|year)s? ago" + _R), _ago),
    (_UNIT_WORDS, _en(_L + f"(?:in ({EN_NUM}) (day|week|month|year)s?|({EN_NUM}) (day|week|month|year)s? from (?:now|today))"
         + _R), _in),
    (("-",), re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)"), _iso),
    (_MON3, _en(_LN + rf"(?:the )?(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? ({EN_MONTH})" + _R + r"(?:,? (\d{4})(?!\d))?"), _dmy),
    (_MON3, _en(_L + rf"({EN_MONTH}) (?:the )?(\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])" + _R + r"(?:,? (\d{4})(?!\d))?"), _mdy),
    (_MON3, _en(_L + rf"({EN_MONTH}),? ((?:19|20)\d\d)(?!\d)"), _month_year),
    # Month names alone must be capitalised and follow a preposition: "May I", "march on".
    (_MON3, _en(_L + "((?i:in|since|during|until|till|by|from|through|early|mid|late|this|last|next|before|after|around)"
         "|of)(?:\\s+|-)" + _CAPITALISED_MONTH + _R, 0), _bare_month),
    (("19", "20"), _en(_L + r"(?:in|since|during|until|till|by|from|through|before|after|around|year|of) ((?:19|20)\d\d)"
         r"(?![0-9A-Za-z])" + _NOT_A_YEAR), _bare_year),
]

# -- Chinese ------------------------------------------------------------------------------

_ZH_REL_DAYS = {"大前天": -3, "大后天": 3, "前天": -2, "后天": 2} | dict.fromkeys(
    ("昨天", "昨晚", "昨日", "昨儿"), -1) | dict.fromkeys(("今天", "今晚", "今日", "今早", "今儿"), 0) | dict.fromkeys(
    ("明天", "明晚", "明日", "明早", "明儿"), 1)
_ZH_REL = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_ZH_YEARS = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
#: Characters before 上/下/这/本 that make another word: 马上, 以下, 日本, 天下 …
_ZH_NOT_REL = "(?<![马晚早爱之以身路网楼线班世向一天地底手名乡日根基书课版剧资成])"
_ZH_WD = "(?P<wd>[二三四五六日天]|一(?![共起样直些点下定次般切再半]))"
_ZH_MON = r"(?P<m>\d{1,2}|十[一二]?|[一二三四五六七八九])"
_ZH_DAY = r"(?P<d>\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九])"


def _zh_rel_day(m: re.Match[str], a: date, _: Cues) -> Resolved | None:
    word = m.group()
    if word == "后天" and ("先天" in m.string[max(0, m.start() - 8):m.start()]
                           or m.string[m.end():m.end() + 1] in tuple("性形培努因补")):
        return None  # 先天/后天: innate/acquired
    return day(a + timedelta(days=_ZH_REL_DAYS[word]))


def _zh_week(m: re.Match[str], a: date, _: Cues) -> Resolved:
    n, wd = _ZH_REL[m.group("rel")], m.group("wd")
    if wd is None:
        return week(a + timedelta(weeks=n))
    if wd == "末":
        return weekend(monday(a) + timedelta(weeks=n))
    return in_week(a, n, ZH_WD[wd])


def _zh_month_rel(m: re.Match[str], a: date, _: Cues) -> Resolved:
    return month(a.year, a.month, _ZH_REL[m.group("rel")])


def _zh_year_rel(m: re.Match[str], a: date, cues: Cues) -> Resolved | None:
    y = a.year + _ZH_YEARS[m.group("yr")]
    return _zh_ymd(y, m.group("m"), m.group("d"))


def _zh_ymd(y: int, mon_word: str | None, dom_word: str | None) -> Resolved | None:
    if not valid_year(y):
        return None
    if mon_word is None:
        return year(y)
    mon = zh_number(mon_word)
    if mon is None or not 1 <= mon <= 12:
        return None
    if dom_word is None:
        return month(y, mon)
    dom = zh_number(dom_word)
    try:
        return day(date(y, mon, dom or 0))
    except ValueError:
        return None


def _zh_date(m: re.Match[str], a: date, cues: Cues) -> Resolved | None:
    if m.group("y"):
        return _zh_ymd(int(m.group("y")), m.group("m"), m.group("d"))
    mon = zh_number(m.group("m"))
    if mon is None or not 1 <= mon <= 12:
        return None
    tense = cues.tense(m.start(), m.end())
    if m.group("d") is None:
        return month_by_tense(a, mon, tense)
    dom = zh_number(m.group("d"))
    return day_by_tense(a, mon, dom, tense) if dom else None


def _zh_ago(m: re.Match[str], a: date, _: Cues) -> Resolved | None:
    sign = -1 if m.group("dir") == "前" else 1
    unit = UNITS[m.group("unit").lstrip("个")]
    if m.group("n") == "半":  # 半年前: six months ago; other halves are too vague
        return shift(a, sign * 6, "month") if unit == "year" else None
    n = zh_number(m.group("n"))
    return shift(a, sign * n, unit) if n else None


_ZH_RULES: list[Rule] = [
    (tuple("天晚日早儿"), re.compile("|".join(sorted(_ZH_REL_DAYS, key=len, reverse=True))), _zh_rel_day),
    (("周", "星期", "礼拜"), re.compile(_ZH_NOT_REL + "(?P<rel>上上|下下|上|下|这|本)个?(?:周|星期|礼拜)(?P<wd>[末二三四五六日天]|一(?![共起样直些点下定次般切再半]))?"),
     _zh_week),
    (("周末",), re.compile("(?<![每个几两一这本上下])周末"), lambda m, a, c: weekend_by_tense(a, c.tense(m.start(), m.end()))),
    (("周", "星期", "礼拜"), re.compile("(?<![每个几两一四圆《上下这本])(?:周|星期|礼拜)" + _ZH_WD + "(?!餐厅|餐馆|酒吧|乐队|公司|店)"),
     lambda m, a, c: weekday_by_tense(a, ZH_WD[m.group("wd")], c.tense(m.start(), m.end()))),
    (("月",), re.compile(_ZH_NOT_REL + r"(?P<rel>上|下|这|本)个?月(?!份?\d)"), _zh_month_rel),
    (("年",), re.compile("(?P<yr>大前年|前年|去年|今年|明年|后年)(?:" + _ZH_MON + "月份?(?:" + _ZH_DAY + "[日号])?)?"), _zh_year_rel),
    (("前", "后"), re.compile(r"(?<![\d一二两三四五六七八九十几多])(?P<n>" + ZH_NUM + "|半)(?P<unit>天|周|个?星期|个?礼拜|个月|年)[之以]?(?P<dir>前|后)"),
     _zh_ago),
    (("月",), re.compile(r"(?<![\d一二两三四五六七八九十几个每])(?:(?P<y>\d{4})年)?" + _ZH_MON + "月份?(?:" + _ZH_DAY + "[日号])?"),
     _zh_date),
    (("年",), re.compile(r"(?<!\d)((?:19|20)\d\d)年(?![代级\d])"), lambda m, a, c: year(int(m.group(1)))),
]

RULES: list[Rule] = _EN_RULES + _ZH_RULES

#: A text without any of these cannot hold a date: most turns are skipped here. Searched
#: in the lower-cased text (four times faster than re.IGNORECASE on a long reply).
TRIGGER = re.compile(
    r"\d|day|night|tomorrow|morning|afternoon|evening|week|month|year|ago|"
    + "|".join(n[:3].lower() for n in MONTH_NAMES) + "|[天晚早日周期拜月年]")
