"""Value builders shared by the offline profile rules: places, names, dates, numbers,
list items, entities. Pure (jieba's part-of-speech tags are the one lookup, loaded on
first use). Each returns the value in the convention of ``data/profile_eval/SCHEMA.md``
or ``None`` when the words are not a value of that kind.

Example::

    >>> en_place("Kraków and I speak Polish"), en_place("a tiny flat"), en_place("toronto for work")
    ('Kraków', None, 'toronto')
    >>> en_date("Jan 9th"), en_date("12/25"), zh_date("1993年5月12号"), zh_int("三十五")
    ('01-09', '12-25', '1993-05-12', 35)
    >>> items("jazz, cycling and dumplings")
    ('jazz', 'cycling', 'dumplings')
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal, NamedTuple

from hmem.profile._clauses import CJK
from hmem.profile._lex_en import HOLIDAYS, MONTHS, NOT_NAMES, PLACES
from hmem.profile._lex_zh import ZH_BRANDS, ZH_HOLIDAYS, ZH_PLACES
from hmem.profile.schema import is_list_key
from hmem.types import ProfileValue

__all__ = [
    "Found",
    "en_date",
    "en_int",
    "en_name",
    "en_place",
    "entity",
    "fact",
    "items",
    "warm_tagger",
    "zh_date",
    "zh_int",
    "zh_is_place",
    "zh_name",
    "zh_place_prefix",
]

Operation = Literal["set", "delete", "remove"]


class Found(NamedTuple):
    """One fact a rule found. ``merge``: list items to add to the key's current list;
    ``remove``: list items the user took back ("I no longer like X"); ``refine``: this
    named entity is one the message already mentioned unnamed ("a puppy! A beagle named
    Scout"), so the unnamed mention goes."""

    key: str
    value: ProfileValue | None
    confidence: float
    operation: Operation
    evidence: str
    merge: bool = False
    refine: bool = False


def fact(key: str, value: ProfileValue | None, confidence: float, evidence: str, op: Operation = "set") -> Found:
    """A :class:`Found`; a string for a list key becomes a one-item list to merge."""
    if is_list_key(key) and isinstance(value, str):
        value = (value,)
    return Found(key, value, confidence, op, evidence, merge=op == "set" and is_list_key(key))


# -- places ------------------------------------------------------------------------------------

_NOT_PLACE = frozenset(["i", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december", "christmas", "easter", "spring", "summer", "autumn", "fall", "winter", "the", "a", "an", "my", "our", "this", "that", "english", "french", "german", "spanish", "chinese", "japanese", "korean", "italian", "here", "there", "home", "town", "city"])
_CAP_WORD = r"(?:[A-Z][\w'.-]*|[A-Z]{2,})"
_EN_CAPS = re.compile(rf"(?:the\s+)?({_CAP_WORD}(?:(?:\s+(?:of|de|del|da|la|le|am|upon|on-)?)?\s*{_CAP_WORD}){{0,3}})")
_ZH_RUN = re.compile(rf"[{CJK}]{{2,8}}")


_PLACE_ADJ = re.compile(r"^(?:rural|downtown|central|north|south|east|west|northern|southern|eastern|western|suburban|"
                        r"greater|outer|inner|upstate|coastal|sunny|beautiful|lovely|rainy)\s+(?=[A-Z])", re.IGNORECASE)


def en_place(text: str) -> str | None:
    """The place at the start of ``text`` (after "in"/"to"/"from"): a capitalised name
    ("Bay Area", "New York City"), a Chinese name (成都), or a known place in lower case
    ("toronto"); ``None`` for anything else ("a tiny flat", "fear of spiders")."""
    text = _PLACE_ADJ.sub("", text.strip())
    if re.match(r"[A-Z][a-z]+ time\b", text):
        return None  # "Eastern time": a time zone
    zh = re.match(rf"[{CJK}]{{2,8}}?(?=[市省区县]?(?:的|了|和|,|\s|$|上班|工作|生活|定居|读书))", text)
    if zh:
        return zh.group(0)
    m = _EN_CAPS.match(text)
    if m:
        words = m.group(1).split()
        while words and words[-1].lower() in {"and", "of", "on-", "the", "i"}:
            words.pop()
        if not words or words[0].lower() in _NOT_PLACE:
            return None
        if len(words) == 1 and words[0].isupper() and words[0].lower() not in PLACES:
            return None  # "HR", "IT": a field, not a place
        return " ".join(words)
    lowered = text.lower()
    for n in (3, 2, 1):
        words = lowered.split()[:n]
        cand = " ".join(words).strip(",.!?")
        if len(words) == n and cand in PLACES:
            return text[: len(cand)]
    return None


@functools.cache
def _posseg() -> Any:
    import logging

    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return jieba.posseg


def warm_tagger() -> None:
    """Load jieba's dictionary now (~0.4 s, once per process) instead of in the first add
    whose Chinese text names a place hmem does not know."""
    list(_posseg().cut("洛阳"))


def zh_is_place(text: str) -> bool:
    """True for a place name: a known one (四川, 温哥华, Toronto), one ending in 市/省/区/县/镇,
    or one jieba tags as a place."""
    text = text.strip()
    if not text:
        return False
    if text in ZH_PLACES or text.lower() in PLACES or re.fullmatch(rf"[{CJK}]{{1,6}}[市省区县镇]", text):
        return True
    if not re.fullmatch(rf"[{CJK}]{{2,8}}", text) or text in ZH_BRANDS or text.endswith("长大"):
        return False  # jieba tags 长大 as a place: "在美国长大" names 美国 only
    words = [w for w in _posseg().cut(text) if w.word.strip()]
    return bool(words) and all(w.flag == "ns" for w in words)


def zh_place_prefix(text: str) -> str | None:
    """The place a phrase starts with ("杭州一家电商公司" → 杭州), if any."""
    for n in range(min(len(text), 8), 1, -1):
        if zh_is_place(text[:n]) and (n == len(text) or not zh_is_place(text[: n + 1])):
            return text[:n]
    latin = re.match(r"[A-Za-z][A-Za-z .'-]*?(?=\s*(?:[^A-Za-z .'-]|$))", text)
    if latin and latin.group(0).strip().lower() in PLACES:
        return latin.group(0).strip()
    return None


# -- names -----------------------------------------------------------------------------------

_EN_NAME = re.compile(r"([A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+){0,2})")


def en_name(text: str, *, lower_ok: bool = False) -> str | None:
    """A person's (or pet's) name at the start of ``text``: capitalised words, or 2–4 Chinese
    characters; with ``lower_ok`` also one lower-case word ("my name is jo")."""
    text = re.sub(r"^(?:Dr|Mr|Mrs|Ms|Mx|Miss|Prof)\.?\s+(?=[A-Z])", "", text.strip())  # a title is not the name
    zh = re.match(rf"[{CJK}]{{2,4}}(?![{CJK}])", text)
    if zh:
        return zh.group(0)
    m = _EN_NAME.match(text)
    if m:
        words = m.group(1).split()
        while words and words[-1].lower() in NOT_NAMES:
            words.pop()
        return " ".join(words) if words and words[0].lower() not in NOT_NAMES else None
    if lower_ok:
        low = re.match(r"([a-z][a-z'-]{1,20})\b", text)
        if low and low.group(1) not in NOT_NAMES and low.group(1) not in _FUNCTION_WORDS:
            return low.group(1)
    return None


_FUNCTION_WORDS = frozenset(["when", "what", "where", "who", "how", "why", "if", "and", "or", "but", "the", "a", "an", "to", "for", "with", "at", "in", "on", "me", "you", "him", "her", "it", "them", "this", "that", "not", "back", "later", "soon", "again", "now", "please", "maybe", "whatever", "anything", "something"])
_ZH_NAME_STOP = re.compile(r"(?:就行|就好|就可以|吧|啊|呀|哦|哈|了|的|呢|，|,|$)")


def zh_name(text: str) -> str | None:
    """A name at the start of Chinese text: 2–4 characters (or a Latin name), up to a particle."""
    text = text.strip()
    latin = re.match(r"([A-Z][a-zA-Z'-]+(?:\s[A-Z][a-zA-Z'-]+)?)", text)
    if latin:
        return latin.group(1)
    m = re.match(rf"([{CJK}·]{{1,5}}?)(?=就行|就好|就可以|吧|啊|呀|哦|哈|了|的|呢|是|,|，|\s|$)", text)
    if not m or len(m.group(1)) < 2 or m.group(1)[0] in "一这那你我他她它个":
        return None
    return m.group(1)


# -- numbers and dates -----------------------------------------------------------------------

_EN_UNITS = {w: i for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"])}
_EN_TENS = {w: 10 * i for i, w in enumerate(["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]) if i > 1}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def en_int(text: str) -> int | None:
    """"40" → 40, "forty-two" → 42, "six" → 6; None otherwise."""
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    tens, _, unit = text.replace(" ", "-").partition("-")
    if tens in _EN_TENS:
        return _EN_TENS[tens] + (_EN_UNITS.get(unit, -1000) if unit else 0)
    return _EN_UNITS.get(text)


def zh_int(text: str) -> int | None:
    """"二十五" → 25, "三十" → 30, "十八" → 18, "32" → 32; None otherwise."""
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _ZH_DIGITS and ch != "十" for ch in text):
        return None
    if "十" in text:
        tens, _, ones = text.partition("十")
        value = (_ZH_DIGITS.get(tens, -1000) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, -1000) if ones else 0)
        return value if value >= 0 else None
    return _ZH_DIGITS[text] if len(text) == 1 else None


def _mmdd(month: int, day: int, year: int | None = None) -> str | None:
    if not (1 <= month <= 12 and 1 <= day <= 31) or (year is not None and not 1900 <= year <= 2100):
        return None
    return f"{year:04d}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"


_MONTH = r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s*(?P<year>(?:19|20)\d{2}))?"
_EN_DATES = [
    re.compile(rf"^{_MONTH}\s+(?:the\s+)?{_DAY}{_YEAR}\b", re.IGNORECASE),
    re.compile(rf"^(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}{_YEAR}\b", re.IGNORECASE),
    re.compile(r"^(?P<year>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(r"^(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<year>(?:19|20)?\d{2}))?\b"),
]


def en_date(text: str) -> str | None:
    """An English date at the start of ``text`` as ``YYYY-MM-DD`` / ``MM-DD``: "Jan 9th",
    "9 January 1990", "12/25" (day/month only when unambiguous), "Valentine's Day"."""
    text = text.strip()
    low = text.lower()
    for holiday in sorted(HOLIDAYS, key=len, reverse=True):
        if low.startswith(holiday):
            return HOLIDAYS[holiday]
    for pattern in _EN_DATES:
        m = pattern.match(text)
        if not m:
            continue
        groups = m.groupdict()
        year = int(groups["year"]) if groups.get("year") and len(groups["year"]) == 4 else None
        if groups.get("mon"):
            return _mmdd(MONTHS[groups["mon"].lower()[:3]], int(groups["day"]), year)
        if groups.get("m"):
            return _mmdd(int(groups["m"]), int(groups["day"]), year)
        a, b = int(groups["a"]), int(groups["b"])
        if a > 12 >= b:
            return _mmdd(b, a, year)
        if b > 12 >= a:
            return _mmdd(a, b, year)
        return None  # 3/4: March 4th or 3 April? Not guessed.
    return None


_ZH_DATE = re.compile(
    r"^(?:(?P<year>(?:19|20)\d{2})年)?(?P<mon>\d{1,2}|[一二三四五六七八九十]{1,3})月"
    r"(?P<day>\d{1,2}|[一二三四五六七八九十]{1,3})(?:日|号)")


def zh_date(text: str) -> str | None:
    """A Chinese date at the start of ``text``: 1993年5月12号, 十月三号, 5月20日, 情人节."""
    text = text.strip()
    for holiday, value in ZH_HOLIDAYS.items():
        if text.startswith(holiday):
            return value
    m = _ZH_DATE.match(text)
    if not m:
        return None
    month, day = zh_int(m.group("mon")), zh_int(m.group("day"))
    if month is None or day is None:
        return None
    return _mmdd(month, day, int(m.group("year")) if m.group("year") else None)


# -- list items and entities -----------------------------------------------------------------

_ITEM_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|,|;|\band\b|\bor\b|&|/|、|和|跟|与|以及|还有)\s*", re.IGNORECASE)
_TRAILING = re.compile(
    r"\s+(?:a lot|very much|so much|too|as well|anymore|either|though|now|these days|at all|sometimes|lately|"
    r"(?:so )?far|in general|(?:on|at) (?:the )?weekends?|in my (?:free|spare) time|every (?:day|morning|evening|week)|"
    r"more than \w+|the most|most of all|of all time|ever)$", re.IGNORECASE)
_PRONOUN = re.compile(
    r"^(?:it|that|this|these|those|you|him|her|them|me|us|my|your|his|their|what|how|when|where|which|who|yours|"
    r"mine|ours|theirs|hers|its|anything|everything|something|nothing|all|both|being|having|doing|getting|"
    r"the (?:idea|way|fact|most|best)|to (?:think|say|know|believe|hear|see|point out|add|mention|be|have|get|do))\b|"
    r"^(?:你|您|他|她|它|这|那|我|的|哪|谁|什么|一个)", re.IGNORECASE)


#: "cruises, too crowded": a comment on the item, not another item.
_COMMENT = re.compile(r"^(?:too|so|very|really|pretty|super|kinda|quite|way too)\s+\w+$", re.IGNORECASE)
_CLAUSE_CUT = re.compile(r"\s+(?:so|because|since|which|who|when|whenever|while|but|although|though|if|as|until|"
                         r"unless|whereas|even though)\s.*$", re.IGNORECASE)


def items(raw: str, *, max_words: int = 5) -> tuple[str, ...] | None:
    """The items of a list phrase, trimmed at the next clause ("bee stings so hiking…");
    None when an item is a pronoun or a clause ("I love it", "I like that you…") or too
    long to be a short noun phrase."""
    text = _TRAILING.sub("", _CLAUSE_CUT.sub("", raw.strip()).strip(".,;:!?'\"“”"))
    out: list[str] = []
    for part in _ITEM_SPLIT.split(text):
        item = _TRAILING.sub("", part.strip().strip(".,;:!?'\"“”《》")).strip()
        item = re.sub(r"(?<=[\u4e00-\u9fff])(?:了|啊|呀|吧|的|哈|呢|哦|啦)+$", "", item)
        if not item or _COMMENT.match(item):
            continue
        if _PRONOUN.match(item) or len(item.split()) > max_words or len(item) > 40:
            return None
        if item not in out:
            out.append(item)
    return tuple(out) or None


def entity(kind: str, name: str | None = None) -> str:
    """``"kind: Name"`` or ``"kind"`` (the convention of the entity keys)."""
    kind = kind.strip()
    return f"{kind}: {name.strip()}" if name and name.strip() else kind
