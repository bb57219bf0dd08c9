"""The profile schema: the canonical keys users can rely on, their value types and
merge rules, and the aliases that normalise onto them. Pure data and lookups.

Twenty keys cover what an assistant should know about its user (the table is the one
in ``data/profile_eval/SCHEMA.md``; a test keeps the two equal). Any other key is a
*free-form* key: allowed, stored as given, superseding like a scalar.

* :func:`canonical_key` — ``"City"``, ``"lives_in"``, ``"所在地"`` → ``"location"``;
  ``"favorite_band"`` / ``"最喜欢的电影"`` → ``"likes"``; unknown keys normalised only.
* :data:`KEYS` — one :class:`KeySpec` per canonical key: its ``type`` (``string``,
  ``integer``, ``date``, ``list``) and ``merge`` rule:

  - ``supersede``: a new value replaces the current one; the old one goes to history;
  - ``accumulate``: list items add up; an item leaves only on an explicit removal
    ("I no longer like X", "Biscuit died");
  - ``keep``: like ``accumulate``, and a write that would drop an item is refused
    silently for that item (allergies: never dropped without "no longer allergic");
  - ``labels``: ``accumulate``, except that a new label of a kind replaces the old label
    of that kind (diet: vegetarian → vegan), while "no:X" items accumulate.

Example::

    >>> canonical_key("Home-Town"), canonical_key("最喜欢的电影"), canonical_key("car")
    ('hometown', 'likes', 'car')
    >>> KEYS["allergies"].merge, KEYS["location"].merge
    ('keep', 'supersede')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hmem.errors import InvalidInput
from hmem.profile.model import normalize_key

__all__ = [
    "ENTITY_KEYS",
    "KEYS",
    "KeySpec",
    "MergeRule",
    "ValueType",
    "canonical_key",
    "is_list_key",
]

ValueType = Literal["string", "integer", "date", "list"]
MergeRule = Literal["supersede", "accumulate", "keep", "labels"]


@dataclass(frozen=True, slots=True)
class KeySpec:
    """One canonical key: its value type, merge rule and aliases (normalised spellings)."""

    key: str
    type: ValueType
    merge: MergeRule
    aliases: tuple[str, ...]
    about: str


def _spec(key: str, type_: ValueType, merge: MergeRule, aliases: str, about: str) -> KeySpec:
    return KeySpec(key, type_, merge, tuple(normalize_key(a) for a in aliases.split()), about)


#: The canonical keys, in the order of SCHEMA.md.
KEYS: dict[str, KeySpec] = {
    s.key: s
    for s in (
        _spec("name", "string", "supersede", "full_name first_name nickname preferred_name 名字 姓名 称呼",
              "the name the user gives for themselves"),
        _spec("age", "integer", "supersede", "年龄", "years, stated as a current age"),
        _spec("birthday", "date", "supersede", "birth_date date_of_birth dob 生日 出生日期",
              "YYYY-MM-DD, or MM-DD without a year"),
        _spec("nationality", "string", "supersede", "citizenship 国籍", "the country of citizenship"),
        _spec("hometown", "string", "supersede",
              "home_town origin birthplace place_of_birth from grew_up_in 家乡 老家 籍贯 祖籍",
              "where the user is from, grew up or was born"),
        _spec("location", "string", "supersede",
              "city lives_in residence current_city current_location based_in home_city 所在地 城市 住址 居住地 常住地",
              "where the user lives or is based now"),
        _spec("timezone", "string", "supersede", "time_zone tz 时区", "only when the user states it"),
        _spec("languages", "list", "accumulate", "language spoken_languages native_language mother_tongue 语言 母语",
              "languages the user speaks (not ones being learnt)"),
        _spec("occupation", "string", "supersede", "job profession job_title title role position work 职业 工作 岗位 职位",
              "job title or line of work, without article or employer"),
        _spec("employer", "string", "supersede", "company works_at workplace organization organisation 公司 单位 雇主",
              "a named organisation the user works for"),
        _spec("school", "string", "supersede", "university college alma_mater education 学校 大学 母校",
              "the school or university attended or graduated from"),
        _spec("major", "string", "supersede", "field_of_study subject degree_subject 专业 研究方向",
              "the field of study"),
        _spec("partner", "string", "supersede",
              "spouse wife husband girlfriend boyfriend significant_other 伴侣 配偶 对象",
              '"kind: Name" or the kind alone ("wife: Priya", "丈夫")'),
        _spec("children", "list", "keep", "kids child 孩子 子女 儿女", '"son: Noah", "daughter", "child"'),
        _spec("family", "list", "accumulate", "family_members relatives siblings parents 家人 家庭成员",
              'named relatives or "I have …" ("mother: Linda", "sister")'),
        _spec("pets", "list", "accumulate", "pet animals 宠物", '"greyhound: Biscuit", "仓鼠"'),
        _spec("diet", "list", "labels",
              "dietary_restrictions diet_restrictions dietary_preferences 饮食 忌口 饮食习惯",
              'a diet label ("vegan", "halal") or a food not eaten ("no:pork", "不吃猪肉")'),
        _spec("allergies", "list", "keep", "allergy allergens intolerances 过敏 过敏原", "the allergen alone"),
        _spec("likes", "list", "accumulate", "interests hobbies hobby favorites favourites 爱好 喜好 兴趣 喜欢",
              "short noun phrases or gerunds"),
        _spec("dislikes", "list", "accumulate", "hates 讨厌 不喜欢", "short noun phrases"),
    )
}  # fmt: skip

#: Keys whose items are ``"kind: Name"`` or ``"kind"`` (people and animals).
ENTITY_KEYS = frozenset({"partner", "children", "family", "pets"})

_ALIASES: dict[str, str] = {alias: spec.key for spec in KEYS.values() for alias in spec.aliases}
_FAVOURITE_PREFIXES = ("favorite_", "favourite_", "最喜欢的")


def canonical_key(key: object) -> str:
    """The canonical key for ``key``: itself, the key an alias names, ``likes`` for
    ``favorite_<x>`` / ``最喜欢的<x>``, or — for a free-form key — its normalised spelling.
    Raises :class:`~hmem.errors.InvalidInput` for a key :func:`normalize_key` refuses.

    >>> canonical_key("Current City"), canonical_key("favourite_band"), canonical_key("Blood Type")
    ('location', 'likes', 'blood_type')
    """
    norm = normalize_key(key)
    if norm in KEYS:
        return norm
    if norm in _ALIASES:
        return _ALIASES[norm]
    if norm.startswith(_FAVOURITE_PREFIXES) and norm not in _FAVOURITE_PREFIXES:
        return "likes"
    return norm


def is_list_key(key: str) -> bool:
    """True for a canonical key whose value is a list (``likes``, ``pets``, ``allergies`` …).

    >>> is_list_key("likes"), is_list_key("location"), is_list_key("car")
    (True, False, False)
    """
    spec = KEYS.get(key)
    return spec is not None and spec.type == "list"


def _check_schema() -> None:
    # An alias must name one key only and never be another canonical key.
    seen: dict[str, str] = {}
    for spec in KEYS.values():
        for alias in spec.aliases:
            if alias in KEYS or seen.setdefault(alias, spec.key) != spec.key:
                raise InvalidInput(f"profile schema: alias {alias!r} is ambiguous", field="aliases")


_check_schema()
