"""Pieces shared by the English and Chinese profile rules: the :class:`Found` and
:class:`Rule` types, object-phrase parsing, and the value builders both languages use.

Pure: a rule's regex match in, :class:`Found` tuples out. See
:mod:`hmem.profile._rules` for how the rules are applied.

Example::

    >>> object_items("tea, chess and long walks")
    ('tea', 'chess', 'long walks')
    >>> zh_int("二十五")
    25
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from hmem.errors import InvalidInput
from hmem.profile.model import normalize_key
from hmem.types import ProfileValue

__all__ = [
    "LIST_SPLIT",
    "NOT_PLACES_ZH",
    "PRONOUN_OBJECT",
    "TRAILING_FILLER",
    "Builder",
    "Found",
    "Rule",
    "build_favorite",
    "build_forget",
    "build_job",
    "build_pet",
    "clean",
    "merge_list",
    "object_items",
    "set_int",
    "set_text",
    "zh_int",
]


class Found(NamedTuple):
    """One rule match. ``merge``: add the list items to the key's current list."""

    key: str
    value: ProfileValue | None
    confidence: float
    operation: Literal["set", "delete"]
    evidence: str
    merge: bool = False


Builder = Callable[["re.Match[str]"], list[Found]]


class Rule(NamedTuple):
    """One rule: its name (``en_…`` / ``zh_…``), the clause pattern, its builder."""

    name: str
    pattern: re.Pattern[str]
    build: Builder


# -- object phrases --------------------------------------------------------------------

PRONOUN_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|him|her|them|me|us|my|your|his|their|what|how|when|where|which|who|"
    r"yours|mine|ours|theirs|hers|its|"
    r"the (?:idea|way|fact)|to (?:think|say|know|believe|hear|see|point out|add|mention))\b",
    re.IGNORECASE,
)
_ZH_PRONOUN_OBJ = re.compile(r"^(?:你|您|他|她|它|这|那|我|的|哪|谁|什么|人是|一)")
TRAILING_FILLER = re.compile(
    r"\s+(?:a lot|very much|so much|too|as well|anymore|either|though|now|these days|at all|sometimes|"
    r"on (?:the )?weekends?|at the weekend|in my (?:free|spare) time|every (?:day|morning|evening|week))$",
    re.IGNORECASE
)
LIST_SPLIT = re.compile(r"\s*(?:,|\band\b|\bor\b|和|、|跟|与|还有|以及)\s*")
NOT_PLACES_ZH = ("这里", "那里", "这儿", "那儿", "附近", "家里", "宿舍", "酒店", "宾馆", "医院", "学校", "公司", "隔壁",
                  "旁边", "对面", "楼上", "楼下")  # fmt: skip
_ZH_NUM = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


def clean(text: str) -> str:
    return text.strip().strip(".,;:!'\"’“”").strip()


def object_items(raw: str, *, max_words: int = 6, infinitives: bool = True) -> tuple[str, ...] | None:
    """List items of an object phrase, or None when any item looks like a pronoun/clause
    (or, with ``infinitives=False``, a "to <verb>" phrase)."""
    text = TRAILING_FILLER.sub("", clean(raw))
    out: list[str] = []
    for part in LIST_SPLIT.split(text):
        raw_item = clean(part)
        if PRONOUN_OBJECT.match(raw_item) or _ZH_PRONOUN_OBJ.match(raw_item):
            return None
        if not infinitives and re.match(r"to\s", raw_item, re.IGNORECASE):
            return None
        item = re.sub(r"^to\s+", "", raw_item).rstrip("了啊呀吧的")
        if not item:
            continue
        if len(item.split()) > max_words:
            return None
        if item not in out:
            out.append(item)
    return tuple(out) or None


def zh_int(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return _ZH_NUM.get(tens, 1 if not tens else -100) * 10 + (_ZH_NUM.get(ones, -100) if ones else 0)
    if len(text) == 1 and text in _ZH_NUM:
        return _ZH_NUM[text]
    return None


# -- builders used by both languages --------------------------------------------------


def set_text(key: str, confidence: float, *, min_len: int = 1) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        value = clean(m.group("v"))
        if len(value) < min_len:
            return []
        return [Found(key, value, confidence, "set", m.group(0))]

    return build


def merge_list(key: str, confidence: float) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        items = object_items(m.group("v"))
        return [Found(key, items, confidence, "set", m.group(0), merge=True)] if items else []

    return build


def set_int(key: str, confidence: float, lo: int, hi: int) -> Builder:
    def build(m: re.Match[str]) -> list[Found]:
        number = zh_int(m.group("v"))
        if number is None or not lo <= number <= hi:
            return []
        return [Found(key, number, confidence, "set", m.group(0))]

    return build


def build_job(m: re.Match[str]) -> list[Found]:
    job = re.sub(r"^(?:an?|一名|一个|一位|个|名|位)\s*", "", clean(m.group("v")))
    out = [Found("occupation", job, 0.85, "set", m.group(0))] if job else []
    employer = m.groupdict().get("emp")
    if employer:
        out.append(Found("employer", clean(employer), 0.8, "set", m.group(0)))
    return out


def build_pet(m: re.Match[str]) -> list[Found]:
    animal = m.group("v").lower()
    if animal.endswith("s") and not animal.endswith(("ss", "fish")):
        animal = animal[:-1]
    animal = {"puppy": "dog", "kitten": "cat", "bunny": "rabbit", "小狗": "狗", "小猫": "猫"}.get(animal, animal)
    name = m.groupdict().get("name")
    value = (
        f"{animal} named {clean(name)}" if name and animal.isascii() else (f"{animal}（{name}）" if name else animal)
    )
    return [Found("pets", (value,), 0.85, "set", m.group(0), merge=True)]


_FORGET_ALIASES = {
    "address": "location", "home address": "location", "location": "location", "city": "location",
    "where i live": "location", "name": "name", "job": "occupation", "occupation": "occupation",
    "profession": "occupation", "employer": "employer", "company": "employer", "workplace": "employer",
    "birthday": "birthday", "date of birth": "birthday", "age": "age", "pet": "pets", "pets": "pets",
    "likes": "likes", "dislikes": "dislikes", "preferences": "preferences", "languages": "languages",
    "language": "languages", "native language": "native_language", "hometown": "hometown",
    "地址": "location", "住址": "location", "住处": "location", "所在地": "location", "城市": "location",
    "名字": "name", "姓名": "name", "工作": "occupation", "职业": "occupation", "公司": "employer",
    "生日": "birthday", "年龄": "age", "宠物": "pets", "爱好": "likes", "喜好": "likes", "母语": "native_language",
    "家乡": "hometown", "老家": "hometown", "语言": "languages",
}  # fmt: skip


def build_forget(m: re.Match[str]) -> list[Found]:
    what = clean(m.group("v")).lower()
    what = re.sub(r"\s+(?:please|now|for me)$", "", what)
    key = _FORGET_ALIASES.get(what)
    if key is None:
        if len(what.split()) > 4:
            return []
        try:
            key = normalize_key(what)
        except InvalidInput:
            return []
    return [Found(key, None, 0.9, "delete", m.group(0))]


def build_favorite(m: re.Match[str]) -> list[Found]:
    value = clean(m.group("v"))
    try:
        key = normalize_key(f"favorite {m.group('k')}" if m.group("k").isascii() else f"最喜欢的{m.group('k')}")
    except InvalidInput:
        return []
    return [Found(key, value, 0.85, "set", m.group(0))] if value and not PRONOUN_OBJECT.match(value) else []
