"""Is a gold answer inside an assembled prompt? Pure text rules, no I/O.

The answer-in-context measure of ``hmem eval`` (configuration ``answer``) asks whether
the prompt :meth:`~hmem.memory.Memory.context` built holds what a model needs to answer.
Three rules, applied to the question's gold answer and the prompt's text:

- **strict**: the normalised answer occurs in the normalised context, at word
  boundaries for Latin letters and digits (Han characters have none);
- **loose**: at least :data:`LOOSE_SHARE` (80 %) of the answer's distinct content words
  occur in the context as words (a Han character counts as one word);
- **dates**: an answer that names dates counts as present, strictly and loosely, when
  each of them occurs in the context in any common rendering (:func:`date_renderings`):
  "7 May 2023" is found in ``"[2023-05-07, session 3] …"``, "May 2023" in any date of
  that month.

Normalisation: NFKC, casefold, punctuation and symbols to spaces, whitespace collapsed.

Example::

    >>> c = containment("7 May 2023", "- [2023-05-07, session 3] Maya: I moved today.")
    >>> c.strict, c.loose, c.date_match
    (True, True, True)
    >>> containment("the Berlin marathon", "She trains for the marathon in Berlin.").loose
    True
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date

from hmem.errors import InvalidInput

__all__ = [
    "HAN_STOPWORDS",
    "LOOSE_SHARE",
    "STOPWORDS",
    "Containment",
    "DateMention",
    "containment",
    "content_words",
    "date_renderings",
    "find_dates",
    "normalise",
]

#: Share of an answer's content words that must be in the context for ``loose``.
LOOSE_SHARE = 0.8

_HAN_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
# A token is one Han character, a run of digits or a run of other letters: "10km" and
# "10 km" give the same words, and Chinese has no spaces to split on.
_TOKEN = re.compile(rf"[{_HAN_RANGES}]|\d+|[^\W\d_{_HAN_RANGES}]+")
_HAN = re.compile(rf"[{_HAN_RANGES}]")
_LATIN_EDGE = re.compile(rf"[^\W_{_HAN_RANGES}]")
_NOT_AFTER_LATIN = rf"(?<![^\W_{_HAN_RANGES}])"
_NOT_BEFORE_LATIN = rf"(?![^\W_{_HAN_RANGES}])"

_STOPWORD_TEXT = """a an the i me my mine myself we us our ours you your yours he him his himself she her hers
    herself it its itself they them their theirs this that these those who whom whose which what
    is am are was were be been being do does did done have has had having will would shall should
    can could might must to of in on at by for with from into onto about as than then so
    and or but nor if because while also just very too there here s t d ll re ve m"""
#: Words that carry no answer on their own (English function words, clitic leftovers of
#: "Rui's" → "rui s"). "may" is missing on purpose: it is a month.
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
#: Han characters that only glue a sentence together, and personal pronouns (as in
#: :data:`STOPWORDS`).
HAN_STOPWORDS: frozenset[str] = frozenset("的了是在和吗呢吧啊着过与及之也都就而或我你他她它们")

_MONTHS: tuple[str, ...] = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
_MONTH_NUMBER: dict[str, int] = {
    **{name: i for i, name in enumerate(_MONTHS, start=1)},
    **{name[:3]: i for i, name in enumerate(_MONTHS, start=1)},
    "sept": 9,
}
_MON = "(" + "|".join(sorted(_MONTH_NUMBER, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})(?!\d)"
_TO = r"\s*(?:-|–|—|~|to|and|until|through)\s*"
# Order matters: ranges and day forms first, their spans are then masked so that the
# month form does not match the "May 2023" inside "7 May 2023" a second time.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("d-d m y", re.compile(rf"(?<!\d){_DAY}{_TO}{_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}")),
    ("m d-d y", re.compile(rf"(?<![a-z]){_MON}\s+{_DAY}{_TO}{_DAY},?\s+{_YEAR}")),
    ("zh d-d", re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]?\s*(?:-|–|~|到|至|和)\s*(\d{1,2})\s*[日号]")),
    ("iso", re.compile(r"(?<!\d)(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?!\d)")),
    ("d m y", re.compile(rf"(?<!\d){_DAY}\s+(?:of\s+)?{_MON},?\s+{_YEAR}")),
    ("m d y", re.compile(rf"(?<![a-z]){_MON}\s+{_DAY},?\s+{_YEAR}")),
    ("zh d", re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]")),
    ("iso month", re.compile(r"(?<![\d-])(\d{4})-(\d{2})(?![\d-])")),
    ("m y", re.compile(rf"(?<![a-z]){_MON},?\s+{_YEAR}")),
    ("zh month", re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月(?!\s*\d)")),
)


def _check_text(value: object, name: str, *, allow_blank: bool) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string, got {type(value).__name__}", field=name)
    if not allow_blank and not value.strip():
        raise InvalidInput(f"{name} must not be empty or blank: give the gold answer text", field=name)
    return value


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def normalise(text: str) -> str:
    """NFKC, casefold, punctuation and symbols to spaces, whitespace collapsed.

    >>> normalise("  Rui's  WHIPPET, 41%! ")
    'rui s whippet 41'
    >>> normalise("靠过道的座位，因为她晕机")
    '靠过道的座位 因为她晕机'
    """
    folded = unicodedata.normalize("NFKC", _check_text(text, "text", allow_blank=True)).casefold()
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZC" else ch for ch in folded)
    return " ".join(kept.split())


def _tokens(normalised: str) -> list[str]:
    return _TOKEN.findall(normalised)


def content_words(text: str) -> tuple[str, ...]:
    """The distinct words of ``text`` that carry meaning, in first-seen order.

    Latin words and numbers minus :data:`STOPWORDS`; every Han character is a word
    except the function characters in :data:`HAN_STOPWORDS`.

    >>> content_words("She has been made its lead, starting in January 2025")
    ('made', 'lead', 'starting', 'january', '2025')
    >>> content_words("不要太辣，她在喂母乳")
    ('不', '要', '太', '辣', '喂', '母', '乳')
    """
    out: dict[str, None] = {}
    for token in _tokens(normalise(text)):
        if token not in STOPWORDS and token not in HAN_STOPWORDS:
            out.setdefault(token)
    return tuple(out)


@dataclass(frozen=True, slots=True, order=True)
class DateMention:
    """A calendar date named in a text; ``day`` is None for a month ("May 2023")."""

    year: int
    month: int
    day: int | None = None

    def covers(self, other: DateMention) -> bool:
        """True when ``other`` names this date (a month is covered by any day in it)."""
        if (self.year, self.month) != (other.year, other.month):
            return False
        return self.day is None or self.day == other.day


def _mention(year: str, month: str | int, day: str | None) -> DateMention | None:
    m = month if isinstance(month, int) else (_MONTH_NUMBER.get(month) or int(month))
    try:
        date(int(year), m, int(day) if day is not None else 1)
    except ValueError:  # "2023-13-40", "31 February": not a date, leave it to the words
        return None
    return DateMention(int(year), m, int(day) if day is not None else None)


def _read(kind: str, g: tuple[str, ...]) -> list[DateMention | None]:
    if kind == "d-d m y":
        return [_mention(g[3], g[2], g[0]), _mention(g[3], g[2], g[1])]
    if kind == "m d-d y":
        return [_mention(g[3], g[0], g[1]), _mention(g[3], g[0], g[2])]
    if kind == "zh d-d":
        return [_mention(g[0], int(g[1]), g[2]), _mention(g[0], int(g[1]), g[3])]
    if kind == "iso":
        return [_mention(g[0], int(g[2]), g[3])]
    if kind == "d m y":
        return [_mention(g[2], g[1], g[0])]
    if kind == "m d y":
        return [_mention(g[2], g[0], g[1])]
    if kind == "zh d":
        return [_mention(g[0], int(g[1]), g[2])]
    if kind == "m y":
        return [_mention(g[1], g[0], None)]
    return [_mention(g[0], int(g[1]), None)]  # iso month, zh month


def find_dates(text: str) -> tuple[DateMention, ...]:
    """The dates ``text`` names, in order, without repeats.

    Recognised: "7 May 2023", "7th of May, 2023", "May 7, 2023", "2023-05-07" (also with
    ``/`` or ``.``), "2023年5月7日", ranges such as "10 to 17 October 2024" or
    "2024年8月24日和25日" (both ends), and months: "May 2023", "2023-05", "2023年5月".
    Numeric day/month forms such as "7/5/2023" are skipped: they read both ways.

    >>> [(d.year, d.month, d.day) for d in find_dates("from 10 to 17 October 2024, back in Nov 2024")]
    [(2024, 10, 10), (2024, 10, 17), (2024, 11, None)]
    """
    folded = _fold(_check_text(text, "text", allow_blank=True))
    found: list[tuple[int, DateMention]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(folded):
            found.extend((match.start(), d) for d in _read(kind, match.groups()) if d is not None)
        # Mask with a letter so neither digits nor month names match twice.
        folded = pattern.sub(lambda m: "x" * len(m.group()), folded)
    found.sort(key=lambda pair: pair[0])
    return tuple(dict.fromkeys(d for _, d in found))


def date_renderings(mention: DateMention) -> tuple[str, ...]:
    """The common ways to write ``mention``, casefolded (what the date rule accepts).

    >>> date_renderings(DateMention(2023, 5, 7))
    ('2023-05-07', '7 may 2023', '7 may, 2023', 'may 7 2023', 'may 7, 2023', '2023年5月7日')
    >>> date_renderings(DateMention(2023, 5))
    ('2023-05', 'may 2023', '2023年5月')
    """
    y, m, mon = mention.year, mention.month, _MONTHS[mention.month - 1]
    if mention.day is None:
        return (f"{y:04d}-{m:02d}", f"{mon} {y}", f"{y}年{m}月")
    d = mention.day
    return (f"{y:04d}-{m:02d}-{d:02d}", f"{d} {mon} {y}", f"{d} {mon}, {y}", f"{mon} {d} {y}",
            f"{mon} {d}, {y}", f"{y}年{m}月{d}日")


@dataclass(frozen=True, slots=True)
class Containment:
    """How much of an answer a context holds.

    ``words_found`` is the share of the answer's distinct content words found in the
    context (None when the answer has none, e.g. "it is"); ``date_match`` says whether
    every date of the answer is in the context (None when the answer names no date).
    """

    strict: bool
    loose: bool
    words_found: float | None
    date_match: bool | None


def _substring_at_boundaries(needle: str, haystack: str) -> bool:
    # Latin/digit edges must not continue into a longer word ("cat" is not in
    # "category"); Han characters have no word boundaries ("用Python写" holds "python").
    before = _NOT_AFTER_LATIN if _LATIN_EDGE.match(needle[0]) else ""
    after = _NOT_BEFORE_LATIN if _LATIN_EDGE.match(needle[-1]) else ""
    return re.search(before + re.escape(needle) + after, haystack) is not None


def containment(answer: str, context: str) -> Containment:
    """Whether ``context`` holds ``answer`` strictly, loosely, by words and by dates.

    Raises :class:`~hmem.errors.InvalidInput` for an empty or blank answer, or a
    non-string answer or context.

    >>> containment("Kraków", "She booked KRAKÓW for the markets").strict
    True
    >>> c = containment("Oat milk (she is lactose intolerant)", "She takes oat milk; lactose upsets her.")
    >>> c.strict, c.loose, round(c.words_found, 2)
    (False, False, 0.75)
    >>> containment("2023年11月1日", "[2023-11-01, session s4] 她入职了").strict
    True
    """
    text = _check_text(answer, "answer", allow_blank=False)
    haystack = _check_text(context, "context", allow_blank=True)
    needle, hay = normalise(text), normalise(haystack)
    strict = bool(needle) and _substring_at_boundaries(needle, hay)
    words = content_words(text)
    fraction: float | None = None
    if words:
        present = set(_tokens(hay))
        fraction = sum(1 for w in words if w in present) / len(words)
    dates = find_dates(text)
    date_match: bool | None = None
    if dates:
        seen = find_dates(haystack)
        date_match = all(any(want.covers(got) for got in seen) for want in dates)
    loose = strict if fraction is None else fraction >= LOOSE_SHARE
    return Containment(
        strict=strict or bool(date_match), loose=loose or bool(date_match), words_found=fraction, date_match=date_match
    )
