"""English rules for who the user is: name, age, birthday, nationality, hometown,
location, time zone, languages. Each reads one :class:`~hmem.profile._clauses.Clause`
(its ``pred``: what is said after the user's "I" — or the whole clause when the subject
carries over) and returns :class:`~hmem.profile._values.Found` facts. Pure.

Example::

    >>> from hmem.profile._clauses import analyse
    >>> cs = analyse("Grew up in Cork but I've been living in Dublin for ten years")
    >>> [(f.key, f.value) for i in range(len(cs)) for f in identity(cs, i)]
    [('hometown', 'Cork'), ('location', 'Dublin')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hmem.profile._clauses import CJK, CURRENT, STAY, TIMELESS, Clause, allowed, negated
from hmem.profile._en_work import first_days_at
from hmem.profile._lex_en import DEMONYMS, FIELDS, JOBS, LANGUAGES, TIMEZONES
from hmem.profile._lex_zh import ZH_LANGUAGES
from hmem.profile._values import Found, en_date, en_int, en_name, en_place, fact

__all__ = ["LANG_LIST", "TZ", "identity", "languages_in"]


def _alt(words: object) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))  # type: ignore[call-overload]


_LANG = rf"(?:(?i:{_alt(LANGUAGES)})\b(?: sign language)?|{_alt(ZH_LANGUAGES)})"
_HOW_WELL = (r"(?:(?:a little bit of|a little bit|a little|a bit of|a bit|some|basic|fluent|conversational|broken|native|decent|good)\s+"
             r"|(?:一点点|一点儿?|一些|少量|简单的|流利的)\s*)?")
#: A list of languages: "Polish, English and German", "French and a little Arabic", "普通话 and Hokkien".
_WHERE = r"(?:\s+(?:at home|at work|with (?:my )?\w+|fluently|well|too|natively|as well))?"
LANG_LIST = re.compile(rf"{_LANG}{_WHERE}(?:\s*(?:,\s*(?:and\s+|or\s+)?|\band\b|\bor\b|&|/|、|和|跟|以及)\s*{_HOW_WELL}{_LANG}"
                       rf"{_WHERE})*")
_DEMONYM = rf"(?i:{_alt(DEMONYMS)})"
#: A stated time zone: "Pacific time", "EST", "GMT+1", "东八区".
TZ = re.compile(
    r"(?:UTC|GMT)\s?[+\-−]\s?\d{1,2}(?::?\d{2})?|(?i:(?:pacific|mountain|central|eastern|atlantic|"
    r"(?:central|eastern|western) european|"
    r"uk|london|beijing|china|tokyo|paris|sydney|singapore)(?: standard| daylight)? time)|"
    r"\b(?:PST|PDT|PT|MST|MDT|CST|CDT|EST|EDT|ET|GMT|BST|CET|CEST|EET|JST|KST|SGT|HKT|AEST|AEDT|ACST|ACDT|AWST|NZST|NZDT|IST|WIB|PHT|MSK|SAST|HST|AKST|UTC)\b|"
    r"\b[A-Z][a-z]+/[A-Z][A-Za-z_]+\b|东[一二三四五六七八九十]{1,2}区|西[一二三四五六七八九十]{1,2}区|"
    r"北京时间|美东时间|美西时间|太平洋时间|东部时间|中部时间|格林尼治时间|(?:日本|新加坡|香港|台北|东京|首尔|伦敦|悉尼)时间")


#: "会说英语和一点日语": a degree word before the name is no part of it.
_ZH_ANY_LANG = rf"(?![和跟与及、]|一点|一些|点)[{CJK}]{{1,5}}?(?:语|话)(?![{CJK}])"


def languages_in(text: str, *, loose: bool = False) -> tuple[str, ...] | None:
    """The language names of a list at the start of ``text``; with ``loose`` (after
    "母语是" / "会说") any Chinese "…语/…话" counts, known to the lexicon or not."""
    lang = f"(?:{_LANG}|{_ZH_ANY_LANG})" if loose else _LANG
    sep = r"\s*(?:,\s*(?:and\s+|or\s+)?|\band\b|\bor\b|&|/|、|和|跟|以及)\s*"
    m = re.match(rf"{lang}{_WHERE}(?:{sep}{_HOW_WELL}{lang}{_WHERE})*", text.strip())
    if not m:
        return None
    found = re.findall(lang, m.group(0))
    out: list[str] = []
    for name in found:
        if name.lower() not in [o.lower() for o in out]:
            out.append(name)
    return tuple(out) or None


def _name(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    if not allowed(c, TIMELESS):
        return []
    out: list[Found] = []
    m = re.match(r"^(?:.*,\s*)?(?:my )?(?:full |real |first |preferred )?name is\s+(?P<v>.+)$", c.bare, re.IGNORECASE)
    if m:
        name = en_name(m.group("v"), lower_ok=True)
        if name:
            out.append(fact("name", name, 0.95, c.text))
    m = re.match(r"^(?:(?:please|you can|just|everyone|everybody|people|friends) )?calls? me\s+(?P<v>.+)$", c.bare,
                 re.IGNORECASE)
    if m:
        name = en_name(m.group("v"), lower_ok=True)
        if name:
            out.append(fact("name", name, 0.85, c.text))
    if c.subject == "self" and c.pred.startswith("go by "):
        name = en_name(c.pred[6:])
        if name:
            out.append(fact("name", name, 0.85, c.text))
    m = re.match(r"^am\s+(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?(?P<v>[A-Z][\w']*(?:\s+[A-Z][\w']*){0,2}|[" + CJK + r"]{2,4})(?P<rest>.*)$", c.pred)
    if m and c.subject == "self" and not re.match(r"^[-\s]*(?:-|based|born|year|citizen|national)", m.group("rest")):
        name = en_name(m.group("v"))
        if name and name.lower() not in JOBS and name.lower() not in FIELDS and name.lower() not in TIMEZONES:
            out.append(fact("name", name, 0.8, c.text))
    m = re.match(r"^(?P<v>[A-Z][a-z]+(?: [A-Z][a-z]+)?) here$", c.bare)
    if m and c.first and c.subject == "self":
        name = en_name(m.group("v"))
        if name and name.lower() not in JOBS:
            out.append(fact("name", name, 0.8, c.text))
    m = re.match(r"^this is (?P<v>[A-Z][a-z]+(?: [A-Z][a-z]+)?)$", c.bare)
    if m and c.first:
        out.append(fact("name", m.group("v"), 0.7, c.text))
    # "Officially Dr Priya Nair!", "I'm officially Mrs Anna Kowalski now": a new title or name, announced
    m = re.match(r"^(?i:(?:(?:I )?am |it is )?(?:now )?officially )(?:(?:Dr|Mrs|Mr|Ms|Mx|Miss|Prof)\.? )?"
                 r"(?P<v>[A-Z][\w'-]+(?: [A-Z][\w'-]+){1,2})(?: now)?$", c.bare)
    if m and c.subject == "self" and (name := en_name(m.group("v"))) and " " in name:
        out.append(fact("name", name, 0.8, c.text))
    return out


_AGE_AFTER = r"(?=$|,|\s+(?:and|but|so|now|this|btw|years|yrs|yo|y/o|m|f|male|female|turning|next|myself)\b)"


def _age(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if c.subject != "self" or not allowed(c, frozenset({"question", "hypothetical", "other"})):
        return []
    for pattern in (rf"^(?:am|turned|just turned|recently turned|have just turned) (?:a |an )?(?P<n>\d{{1,3}})"
                    rf"(?:\s*(?:years old|year old|yrs old|yo|y/o))?{_AGE_AFTER}",
                    r"^am an? (?P<n>\d{1,2})\s?(?:yo|y/o|yr old|year old)\b",
                    r"^(?:just |recently )?turned (?P<n>[a-z]+(?:-[a-z]+)?|\d{1,3})\b(?! into| out| off| down| up)",
                    r"^am an? (?P<n>\d{1,3})[- ]year[- ]old\b"):
        m = re.match(pattern, p, re.IGNORECASE)
        if m and not negated(p[: m.start("n")]):
            n = en_int(m.group("n"))
            if n is not None and 1 <= n <= 120:
                return [fact("age", n, 0.85, c.text)]
    m = re.fullmatch(r"(?P<n>\d{1,2})(?:\s*(?:yo|y/o|years old))?", p)
    if m and i > 0 and cs[i - 1].sentence == c.sentence and cs[i - 1].subject == "self" and not c.first:
        n = int(m.group("n"))
        if 5 <= n <= 99:
            return [fact("age", n, 0.7, c.text)]
    m = re.match(r"^my age is (?P<n>\d{1,3})\b", c.bare, re.IGNORECASE)
    if m:
        return [fact("age", int(m.group("n")), 0.9, c.text)]
    return []


def _birthday(cs: Sequence[Clause], i: int) -> list[Found]:
    c = cs[i]
    if not allowed(c, TIMELESS):
        return []
    m = re.match(r"^(?:my|我的)\s*(?:birthday|bday|b-day|birth date|date of birth|dob)(?: is| falls on| was|\s*是)?\s*"
                 r"(?:on\s+)?(?P<v>.+)$", c.bare, re.IGNORECASE)
    if m is None and c.subject in ("self", "with"):
        m = re.search(r"\b(?:was )?born (?:on )?(?P<v>.+)$", c.pred)
    if m and not negated(c.pred[: m.start("v")] if c.pred else ""):
        date = en_date(m.group("v"))
        if date:
            return [fact("birthday", date, 0.9, c.text)]
    return []


def _nationality(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if c.subject not in ("self", "with") or not allowed(c, TIMELESS):
        return []
    pats = (
        rf"^(?:am|are) (?:a |an )?(?:proud |full-blooded )?(?P<d>{_DEMONYM})(?: (?:citizen|national|passport holder|"
        r"guy|girl|woman|man|person|expat|native|by birth))?(?=$|,|\s+(?:living|based|working|who|and|but|so|here|"
        r"born|from|too|myself|though|now|in|at)\b)",
        rf"\b(?:have|hold) (?:a |an |dual )?(?P<d>{_DEMONYM}) (?:citizenship|passport|nationality)\b",
        rf"\b(?P<d>{_DEMONYM}) citizen\b",
    )
    for pattern in pats:
        m = re.search(pattern, p)
        if m and not negated(p[: m.start("d")]):
            return [fact("nationality", DEMONYMS[m.group("d").lower()], 0.85, c.text)]
    m = re.search(r"\bcitizen of (?P<v>.+)$", p)
    if m and (place := en_place(m.group("v"))):
        return [fact("nationality", place, 0.85, c.text)]
    return []


_FROM = re.compile(r"^(?:(?:am|are) (?:originally |actually |also )?from|(?:originally )?from|come from|"
                   r"(?:am|are) an? (?:[\w-]+ ){0,3}?from) (?P<v>.+)$", re.IGNORECASE)
_BORN_RAISED = re.compile(r"\b(?:was )?(?:born and raised|born and bred|raised|grew up|born)(?: in \d{4}| on [^,]+?\d{4})?"
                          r"\s+(?:in|near|on (?:a|an|the) [^,]*? in) (?P<v>.+)$",
                          re.IGNORECASE)


def _hometown(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    out: list[Found] = []
    if not allowed(c, TIMELESS):
        return out
    m = re.match(r"^my (?:hometown|home town) is (?P<v>.+)$", c.bare, re.IGNORECASE)
    if m and (place := en_place(m.group("v"))):
        return [fact("hometown", place, 0.9, c.text)]
    if c.subject not in ("self", "with"):
        return out
    for pattern, confidence in ((_FROM, 0.85), (_BORN_RAISED, 0.85)):
        m = pattern.search(p)
        if m and not negated(p[: m.start("v")]):
            place = en_place(m.group("v"))
            inner = re.match(r"(?:a|an|the)\s[^,]*?\bin (?P<v>.+)$", m.group("v"), re.IGNORECASE)
            if place is None and inner:  # "from a small town in Ohio"
                place = en_place(inner.group("v"))
            if place and place.lower() not in FIELDS:
                out.append(fact("hometown", place, confidence, c.text))
                break
    m = re.search(r"\b(?:have )?lived in (?P<v>.+?) (?:my (?:whole|entire) life|all my life)\b", p)
    if m and not negated(p[: m.start("v")]) and (place := en_place(m.group("v"))):
        out.append(fact("hometown", place, 0.8, c.text))  # …and the location (the _LIVE rule)
    m = re.search(r"\b(?:a|an) (?P<v>[A-Z][a-z]+(?: [A-Z][a-z]+)?) native\b", p)
    if m and not out:
        out.append(fact("hometown", m.group("v"), 0.7, c.text))
    return out


_LIVE = re.compile(
    r"\b(?:live|lives|living|am living|have been living|have lived|reside|residing|am based|based|am located|located|"
    r"am renting|are renting|"
    r"am settled|settled|live and work|work and live)\s+(?:in|out of)\s+(?P<v>.+)$", re.IGNORECASE)
_MOVED = re.compile(r"\b(?:moved|relocated|emigrated|immigrated|have moved|have relocated)\s+(?:back\s+)?"
                    r"(?:here\s+)?(?:from\s+(?P<old>.+?)\s+)?to\s+(?P<v>.+)$", re.IGNORECASE)
#: A move said without "moved to": "moved into a flat in Hackney", "made the move to Denver", "ended up
#: moving to Cork", "got the keys to our new place in Bath", "now call Melbourne home".
_MOVED_OTHERWISE = re.compile(
    r"\b(?:(?:have |just |finally )*moved into (?:a |an |our |my |the )?(?:new |own |little |small |tiny )?"
    r"(?:(?:one|two|three|four|[1-4])[- ]bed(?:room)?|studio|house|home|flat|apartment|place|condo)"
    r"(?: flat| apartment)? in|(?:made|have made) the (?:big )?move (?:over )?to|ended up (?:moving|relocating|settling) "
    r"(?:back )?(?:to|in)|got the keys to (?:our|my) (?:new |first )?(?:house|home|flat|apartment|place|condo) in)\s+"
    r"(?P<v>.+)$|\b(?:now )?call (?P<home>.+?) home(?: now)?$", re.IGNORECASE)
_STAY_LONG = re.compile(r"^(?:have been|have lived|am) in (?P<v>.+?) (?:for|since) (?:ages|years|decades|a while|"
                        r"a long time|most of my life|\w+ years|\d{4})\b", re.IGNORECASE)


#: A home rented, bought or owned somewhere: "we've rented a flat in Bath", "renting a one-bedroom in …".
_HOME_IN = re.compile(r"\b(?:bought|rent|rented|am renting|are renting|own|leased) (?:a |an |our |my )?"
                      r"(?:new |own |small |tiny )?(?:(?:one|two|three|four|[1-4])[- ]bed(?:room)?|studio|house|home|flat|"
                      r"apartment|place|condo)(?: flat| apartment)? in (?P<v>.+)$")


def _location(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if c.subject not in ("self", "with", "we") or not allowed(c, STAY):
        return []
    found: list[tuple[float, str]] = []
    m = _LIVE.search(p)
    if m and not negated(p[: m.start("v")]):
        rest = m.group("v")
        place = en_place(rest)
        if place is None and re.match(r"(?:a|an|the)\s", rest, re.IGNORECASE):
            inner = re.search(r"\bin (?P<v>[A-Z" + CJK + r"].*)$", rest)
            place = en_place(inner.group("v")) if inner else None
        if place:
            found.append((0.9, place))
    m = re.search(r"\b(?:live|living|am living|am based|based)\s+(?:just\s+)?(?:outside|near|close to)\s+(?:of\s+)?"
                  r"(?P<v>.+)$", p, re.IGNORECASE) or re.search(_HOME_IN, p)
    if m and not negated(p[: m.start("v")]) and (place := en_place(m.group("v"))):
        found.append((0.75, place))
    m = _MOVED.search(p)
    if m and not negated(p[: m.start("v")]) and (place := en_place(m.group("v"))):
        found.append((0.9, place))
    m = _MOVED_OTHERWISE.search(p)
    where = m.group("v") or m.group("home") if m else None
    if m and where and not negated(p[: m.start()]) and (place := en_place(where)):
        found.append((0.85, place))
    if c.subject != "we":
        m = _STAY_LONG.match(p)
        if m and (place := en_place(m.group("v"))):
            found.append((0.85, place))
        m = re.search(r"\bhere in (?P<v>.+)$", p)
        if m and (place := en_place(m.group("v"))):
            found.append((0.8, place))
        m = re.search(r"\b(?P<v>[A-Z]{2,3}|[A-Z][a-z]+)-based\b", p)
        if m and not negated(p[: m.start("v")]):
            found.append((0.75, m.group("v")))
        m = re.match(r"^(?:(?:am|are) (?:currently |now |still )?|(?:now|currently) (?:living |based )?)in (?P<v>.+)$", p)
        if m and (place := en_place(m.group("v"))) and place.lower() not in FIELDS and not TZ.search(m.group("v")):
            found.append((0.75, place))
        m = re.search(r"\bwork(?:s|ing)?(?: (?:nights|days|remotely|part-time|full-time|from home))? in (?P<v>.+)$", p)
        if m and not negated(p[: m.start("v")]) and (place := en_place(m.group("v"))) and place.lower() not in FIELDS:
            found.append((0.7, place))
    return [fact("location", place, conf, c.text) for conf, place in found[:1]]


#: "Hello from Lisbon!", "Writing from Vancouver!": where the user is as they write.
_GREETING_FROM = re.compile(r"^(?:hello|hi|hey|greetings|writing|love|hola|ciao) from (?P<v>.+?)(?: (?:everyone|all|again))?$",
                            re.IGNORECASE)
#: … and what makes that place home rather than a trip: a job or a home started there.
_SETTLED_IN = re.compile(
    r"(?i:\bfirst (?:full )?(?:days?|weeks?|months?) (?:at|in|of) (?:the |my )?new (?:job|office|role|place|flat|home)\b)|"
    r"(?i:\b(?:took|accepted|started) the )(?:[A-Z][\w&.'-]* )?(?i:job|role|position)\b|"
    r"(?i:\b(?:started|start) (?:my|the) new (?:job|role)\b|\bnew (?:job|flat|apartment|home|house|place) (?:is|has)\b|"
    r"\b(?:moved|settled) in\b|\bmoved (?:here|over)\b)")
_TRIP = re.compile(r"\b(?:trip|holiday|vacation|conference|festival|visit(?:ing)?|honeymoon|tour|hotel|hostel|"
                   r"weekend|layover|stopover)\b", re.IGNORECASE)


def _greeting_home(cs: Sequence[Clause], i: int) -> list[Found]:
    """"Hello from Lisbon! First week at Ondina done.": a greeting from a place names where the
    user lives when the same message says they started a job or a home there; a greeting
    alone may come from a trip, so it says nothing."""
    c = cs[i]
    m = _GREETING_FROM.match(c.bare)
    if not m or not allowed(c, STAY):
        return []
    message = " ".join(x.text for x in cs)
    if _TRIP.search(message):
        return []
    settled = any(x is not c and ((x.subject in ("self", "we", "with") and allowed(x, STAY) and _SETTLED_IN.search(x.text))
                                  or first_days_at(x, message)) for x in cs)
    place = en_place(m.group("v")) if settled else None
    return [fact("location", place, 0.8, c.text)] if place else []


def _timezone(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if not allowed(c, TIMELESS | {"past"}):
        return []
    m = re.match(r"^my (?:time ?zone|tz) is (?P<v>.+)$", c.bare, re.IGNORECASE)
    if m and (tz := TZ.match(m.group("v").strip())):
        return [fact("timezone", tz.group(0), 0.9, c.text)]
    if c.subject != "self":
        return []
    m = re.match(r"^(?:am|are) (?:on |in |using )?(?:the )?(?P<v>.+)$", p) or re.match(r"^(?P<v>.+?) here$", p) or \
        (re.fullmatch(r"(?P<v>[A-Z]{2,5}(?:[+\-−]\d{1,2})?)", c.bare) if c.pred == c.bare and i > 0 else None)
    if m and (tz := TZ.match(m.group("v").strip())) and not negated(p[: m.start("v")]):
        return [fact("timezone", tz.group(0), 0.85, c.text)]
    return []


def _languages(cs: Sequence[Clause], i: int) -> list[Found]:
    c, p = cs[i], cs[i].pred
    if not allowed(c, CURRENT):
        return []
    m = re.match(r"^my (?:native language|mother tongue|first language|native tongue|first languages?) "
                 r"(?:is|are) (?P<v>.+)$", c.bare, re.IGNORECASE)
    if m is None and c.subject == "self":
        m = re.search(r"(?:^|\b(?:also|can|do) )(?:speak|speaks|grew up speaking) (?:fluent |some |a little |"
                      r"a bit of |basic |conversational |native |decent |good |pretty good )?(?P<v>.+)$", p) or \
            re.match(r"^(?:am|are) (?:also )?(?:fluent|native|conversational|proficient)(?: in)? (?P<v>.+)$", p) or \
            re.match(r"^(?:am|are) (?:bilingual|trilingual|multilingual)(?: in)?,? (?P<v>.+)$", p) or \
            re.match(r"^(?:am|are) (?:a )?native (?P<v>.+?) speaker\b", p)
    if m is None and c.subject == "self":
        m = re.match(r"^(?P<v>.+?) is my (?:native language|mother tongue|first language)\b", p)
    if m and not negated((c.pred or c.bare)[: max(0, (c.pred or c.bare).find(m.group("v")))]):
        langs = languages_in(m.group("v"))
        if langs:
            return [fact("languages", langs, 0.85, c.text)]
    return []


def identity(cs: Sequence[Clause], i: int) -> list[Found]:
    """Every identity fact of clause ``i`` of ``cs``."""
    out: list[Found] = []
    for rule in (_name, _age, _birthday, _nationality, _hometown, _location, _greeting_home, _timezone, _languages):
        out.extend(rule(cs, i))
    return out
