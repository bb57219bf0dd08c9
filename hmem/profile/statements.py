"""Atomic statements about the user: one claim each, subject resolved. Pure, offline.

A turn like "I'm Maya, I work as a UX designer at a fintech in Manchester" holds several
claims, each of which makes sense only beside the turn ("I", "my", 我). This module turns
them into statements that stand alone in a prompt months later:

* :func:`user_claims` — the clauses of a user turn worth keeping as facts (questions,
  role-play and fiction dropped), verbatim apart from spelling normalisation;
* :func:`third_person` — a claim with the speaker named: "I'm vegetarian now" →
  "Maya is vegetarian now", "我养了一只猫" → "王伟养了一只猫";
* :func:`update_statements` — a profile update said as a sentence with the day it was
  stated ("Maya lives in Manchester (as of 8 May 2023)"), and its *claim key*: facts
  sharing a claim key are versions of one claim, so the newest supersedes the others
  (:mod:`hmem.longterm.store`); a single-valued key (location) has one claim key, a list
  key (likes) one per item, so "I no longer like jazz" supersedes "Maya likes jazz";
* :func:`covered` — a claim that its profile statements already say (dropped as a fact).

Example::

    >>> [third_person(c.text) for c in user_claims("I'm Maya, I just moved to Leeds. Can you help?")]
    ['The user is Maya', 'The user just moved to Leeds']
    >>> from datetime import date
    >>> from hmem.profile.extract import ProfileUpdate
    >>> [(s.text, s.claim_key) for s in update_statements(ProfileUpdate("location", "Leeds"), "Maya", date(2023, 5, 8))]
    [('Maya lives in Leeds (as of 8 May 2023).', 'profile:user:location')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date

from hmem._time import day_key
from hmem.profile._clauses import CJK, Clause, analyse
from hmem.profile._update import ProfileUpdate
from hmem.profile.model import format_value
from hmem.profile.schema import KEYS, is_list_key

__all__ = ["DEFAULT_SUBJECT", "Statement", "covered", "is_chinese", "third_person", "update_statements", "user_claims"]

#: Who a statement is about when the speaker's name is unknown, by language.
DEFAULT_SUBJECT = {"en": "the user", "zh": "用户"}
_HAS_CJK = re.compile(f"[{CJK}]")


def is_chinese(text: str) -> bool:
    """True when ``text`` holds Chinese characters (its statements are then written in Chinese)."""
    return bool(_HAS_CJK.search(text))


@dataclass(frozen=True, slots=True)
class Statement:
    """A profile update as one self-contained sentence. ``claim_key``: facts with the same
    key are versions of one claim (the newest wins); ``kind``: the long-term item kind."""

    text: str
    kind: str
    claim_key: str
    key: str


# -- claims of a turn -----------------------------------------------------------------------

_DROP_GUARDS = frozenset({"question", "other"})  # asked, or not said as the user (role-play, fiction)


def user_claims(text: str) -> list[Clause]:
    """The clauses of ``text`` that state something, one claim each: questions and
    role-play are dropped; plans, past and temporary states are kept (their words say so:
    "used to", "this week"). An English clause without a subject of its own ("…, since
    2019", "…, living in Dubai") stays with the claim before it; a Chinese one is a claim
    of its own (Chinese drops the subject: "…，在阿里做前端")."""
    out: list[Clause] = []
    for c in analyse(text):
        if c.guards & _DROP_GUARDS:
            continue
        continues = (out and not c.first and out[-1].sentence == c.sentence and not is_chinese(c.bare)
                     and not _OWN_SUBJECT.match(c.bare))
        if continues:
            glue = " " if _CONJUNCTION.match(c.text) else ", "
            prev = out[-1]
            out[-1] = replace(prev, text=f"{prev.text}{glue}{c.text}", bare=f"{prev.bare}{glue}{c.text}",
                              guards=prev.guards | c.guards)
        elif len(c.bare) >= 4:
            out.append(c)
    return out


_OWN_SUBJECT = re.compile(r"(?:I|my|we|our|us|he|she|they|his|her|their|it|this|that|there|these|those|you|your)\b"
                          r"|[A-Z]|[\d{cjk}]*[{cjk}]".replace("{cjk}", CJK))
_CONJUNCTION = re.compile(r"(?:since|because|though|although|which|who|while|whereas|when|where|so|and|but)\b",
                          re.IGNORECASE)


# -- naming the speaker ---------------------------------------------------------------------

_ADVERBS = ("no longer|not|just|really|also|still|usually|never|always|often|recently|finally|actually|now|only|sometimes|"
            "absolutely|totally|mostly|even|already|basically|currently|definitely|kinda|kind of|pretty much|"
            "generally|mainly|rarely|seldom|probably|truly|honestly|literally|slowly|eventually|officially")
_AUX = ("can|can't|cannot|could|couldn't|will|won't|would|wouldn't|should|shouldn't|might|must|may|did|didn't|"
        "had|hadn't|used to|was|wasn't|need to|have to|had to|ought to")
_IRREGULAR_PAST = frozenset(re.findall(r"\w+", (
    "went was were had got made took saw met grew began bought left ran came found lost spent felt thought told "
    "said did knew wrote drove flew ate gave became kept brought sold sent built taught caught fell won paid read "
    "heard held stood sat slept swam wore broke chose forgot hid led let put quit set shut split spread hurt cut "
    "rode rang sang drank threw understood woke")))
_CONTRACTIONS = [(re.compile(rf"\b[Ii]['’]{a}\b"), f"I {b}")
                 for a, b in (("m", "am"), ("ve", "have"), ("d", "would"), ("ll", "will"))]
_THIRD = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "don't": "doesn't",
          "haven't": "hasn't", "am not": "is not"}


def _third_singular(verb: str) -> str:
    low = verb.lower()
    if low in _THIRD:
        return _THIRD[low]
    if not low.isalpha() or low in _IRREGULAR_PAST or low.endswith(("ed", "ing")) or verb[:1].isupper():
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _en_third_person(text: str, subject: str) -> str:
    s = subject
    out = text
    for short, full in _CONTRACTIONS:
        out = short.sub(full, out)
    out = re.sub(r"\bI am not\b", f"{s} is not", out)
    out = re.sub(r"\bI am\b", f"{s} is", out)
    out = re.sub(rf"\bI (?=(?:{_AUX})\b)", f"{s} ", out)
    # "my wife and I play": a plural subject, the verb stays.
    out = re.sub(rf"(?<![Aa]nd )\bI ((?:(?:{_ADVERBS}) ){{0,2}})(\S+)",
                 lambda m: f"{s} {m.group(1)}{_third_singular(m.group(2))}", out)
    out = re.sub(r"\bI\b", s, out)
    out = re.sub(r"\b(?:[Mm]y|[Mm]ine)\b", f"{s}'s", out)
    out = re.sub(r"\b[Mm]yself\b", "themselves", out)
    out = re.sub(r"(?<=\w )\b[Mm]e\b", s, out)
    out = re.sub(r"\b[Ww]e\b|(?<=\w )\b[Uu]s\b", f"{s} and others", out)
    return re.sub(r"\b[Oo]urs?\b", f"{s}'s", out)


def third_person(text: str, subject: str | None = None) -> str:
    """``text`` (a claim the speaker made about themselves) with the speaker named:
    ``subject``, or "the user" / "用户" when the name is unknown. A clause whose subject
    was dropped ("…，在阿里做前端", "…, living in Dubai") gets the name in front.

    >>> third_person("I love hiking and my dog loves it too", "Maya")
    "Maya loves hiking and Maya's dog loves it too"
    >>> third_person("我们上周去了杭州", "王伟"), third_person("在阿里做前端")
    ('王伟等人上周去了杭州', '用户在阿里做前端')
    """
    zh = is_chinese(text)
    s = subject or DEFAULT_SUBJECT["zh" if zh else "en"]
    if zh:
        out = re.sub("我们|咱们", f"{s}等人", text)
        out = re.sub("(?<!自)我", s, out)
        return out if s in out else f"{s}{out}"
    out = _en_third_person(text, s)
    if s not in out:
        out = f"{s}: {out}"
    return out[0].upper() + out[1:] if out[:1].islower() else out


# -- profile updates as statements ----------------------------------------------------------

_EN_SET = {
    "age": "{s} is {v} years old", "birthday": "{s}'s birthday is {v}", "nationality": "{s}'s nationality is {v}",
    "hometown": "{s} is from {v}", "location": "{s} lives in {v}", "timezone": "{s}'s timezone is {v}",
    "occupation": "{s} works as {a} {v}", "employer": "{s} works at {v}", "school": "{s}'s school is {v}",
    "major": "{s}'s field of study is {v}", "languages": "{s} speaks {v}", "allergies": "{s} is allergic to {v}",
    "likes": "{s} likes {v}", "dislikes": "{s} dislikes {v}", "diet": "{s}'s diet is {v}",
}
_ZH_SET = {
    "age": "{s}{v}岁", "birthday": "{s}的生日是{v}", "nationality": "{s}的国籍是{v}", "hometown": "{s}的家乡是{v}",
    "location": "{s}住在{v}", "timezone": "{s}的时区是{v}", "occupation": "{s}的职业是{v}",
    "employer": "{s}在{v}工作", "school": "{s}的学校是{v}", "major": "{s}的专业是{v}", "languages": "{s}会说{v}",
    "allergies": "{s}对{v}过敏", "likes": "{s}喜欢{v}", "dislikes": "{s}不喜欢{v}", "diet": "{s}的饮食：{v}",
}
_EN_REMOVE = {"likes": "{s} no longer likes {v}", "dislikes": "{s} no longer dislikes {v}",
              "pets": "{s} no longer has {v}", "allergies": "{s} is no longer allergic to {v}"}
_ZH_REMOVE = {"likes": "{s}不再喜欢{v}", "dislikes": "{s}不再讨厌{v}", "pets": "{s}不再养{v}",
              "allergies": "{s}不再对{v}过敏"}


def _stated_on(day: date, zh: bool) -> str:
    if zh:
        return f"（{day.year}年{day.month}月{day.day}日时）"
    return f" (as of {day_key(day)})"


def _set_sentence(key: str, item: str, s: str, zh: bool) -> str:
    kind, _, name = item.partition(": ")
    if key in ("partner", "children", "family", "pets") and name:
        if zh:
            return f"{s}养了{kind}，叫{name}" if key == "pets" else f"{s}的{kind}叫{name}"
        return f"{s} has a {kind} named {name}" if key == "pets" else f"{s}'s {kind} is {name}"
    if key in ("partner", "children", "family", "pets"):
        return f"{s}养了{item}" if zh and key == "pets" else f"{s}有{item}" if zh else f"{s} has {_article(item)} {item}"
    if key == "diet" and item.startswith("no:"):
        return f"{s}不吃{item[3:]}" if zh else f"{s} does not eat {item[3:]}"
    template = (_ZH_SET if zh else _EN_SET).get(key)
    if template is None:
        label = key.replace("_", " ")
        return f"{s}的{label}：{item}" if zh else f"{s}'s {label} is {item}"
    return template.format(s=s, v=item, a=_article(item))


def _article(word: str) -> str:
    if word[:2].isupper():  # an acronym is read letter by letter: "an MBA student", "a UX designer"
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    low = word.lower()
    return "an" if low[:1] in "aeiou" and not low.startswith(("uni", "use", "usu", "eu", "one")) else "a"


def update_statements(update: ProfileUpdate, subject: str | None, said_on: date, *, zh: bool = False,
                      speaker_key: str = "user") -> list[Statement]:
    """``update`` as sentences (one per list item), stated ``said_on``, about ``subject``
    ("the user" when unknown; the name key is always about "the user"). ``zh``: write
    Chinese. ``speaker_key`` keeps the claims of different speakers of one memory apart.
    A ``delete`` update says nothing."""
    if update.operation == "delete" or update.value is None:
        return []
    key = update.key
    name_subject = DEFAULT_SUBJECT["zh" if zh else "en"]
    s = name_subject if key == "name" else subject or name_subject
    items = list(update.value) if isinstance(update.value, tuple) else [format_value(update.value)]
    kind = "profile"  # its own kind: supersession looks claims up by kind (an indexed read)
    out: list[Statement] = []
    for item in items:
        if update.operation == "remove":
            template = (_ZH_REMOVE if zh else _EN_REMOVE).get(key)
            label = key.replace("_", " ")
            text = template.format(s=s, v=item) if template else (
                f"{s}的{label}不再包括{item}" if zh else f"{s}'s {label} no longer include {item}")
        elif key == "name":
            text = f"{s}叫{item}" if zh else f"{s}'s name is {item}"
        else:
            text = _set_sentence(key, item, s, zh)
        text = text[0].upper() + text[1:]
        claim = f"profile:{speaker_key}:{key}"
        if is_list_key(key) or (key not in KEYS and isinstance(update.value, tuple)):
            claim = f"{claim}={item.casefold()}"
        out.append(Statement(text + _stated_on(said_on, zh) + ("" if zh else "."), kind, claim, key))
    return out


# -- a claim its statements already say -----------------------------------------------------

_STOP = frozenset(re.findall(r"\w+", (
    "i am is are was a an the my me at in on to of and as now just really so also very from for with it this that "
    "have has been be do does doesn don currently we our")))
_WORD = re.compile(rf"[a-z0-9]+|[{CJK}]")


def _content(text: str) -> set[str]:
    text = re.sub(r"n't\b", " not", text)
    words = (w.rstrip("s") if len(w) > 3 else w for w in _WORD.findall(text.casefold()))
    return {w for w in words if w not in _STOP and w not in "我的了在是叫有个一只"}


def covered(claim: str, statements: Iterable[str]) -> bool:
    """True when every content word of ``claim`` is in ``statements`` (so the claim as a
    fact would only repeat them).

    >>> covered("I am vegetarian now", ["Maya's diet is vegetarian (as of 8 May 2023)."])
    True
    >>> covered("I work at a fintech in Manchester", ["Maya lives in Manchester."])
    False
    """
    said: set[str] = set()
    for text in statements:
        said |= _content(text)
    return _content(claim) <= said
