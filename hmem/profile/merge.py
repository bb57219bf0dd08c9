"""How a list key's items change when new ones arrive: the merge rules of
:mod:`hmem.profile.schema`, decided here once and purely. A store then persists the
resulting value with :func:`hmem.profile.versioning.plan_set` (old list → history).

* :func:`merge_items` — the key's new list from its current list, the items to add,
  the items to remove, and whether the added items are a complete list;
* :func:`item_identity` — when two spellings are the same item ("Peanuts" = "peanut",
  "dog: Rex" = "Rex", "不吃猪肉" = "no:猪肉");
* :func:`item_origins` — for each current item, the version that first brought it
  (its provenance: message, session and time), read from the key's history.

Example::

    >>> merge_items("likes", ("tea", "chess"), add=("Chess", "jazz"))
    ('tea', 'chess', 'jazz')
    >>> merge_items("likes", ("tea", "jazz"), remove=("jazz",))
    ('tea',)
    >>> merge_items("allergies", ("peanuts",), add=("penicillin",), complete=True)  # never dropped silently
    ('peanuts', 'penicillin')
    >>> merge_items("diet", ("vegetarian", "no:pork"), add=("vegan",))  # a label of the same kind supersedes
    ('no:pork', 'vegan')
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from hmem.profile.model import MAX_LIST_ITEMS, MAX_VALUE_CHARS
from hmem.profile.schema import ENTITY_KEYS, KEYS
from hmem.types import ProfileEntry, ProfileValue

__all__ = ["DIET_LABEL_KINDS", "diet_label_kind", "item_identity", "item_origins", "merge_items"]

#: Diet labels by kind: a new label replaces the user's previous label of the same kind.
DIET_LABEL_KINDS: dict[str, tuple[str, ...]] = {
    "pattern": ("vegetarian", "veggie", "vegan", "pescatarian", "pescetarian", "flexitarian", "omnivore",
                "carnivore", "plant based", "lacto vegetarian", "ovo vegetarian", "lacto ovo vegetarian",
                "素食", "吃素", "素食者", "素食主义", "素食主义者", "素", "纯素", "全素", "吃全素", "吃纯素",
                "纯素食", "蛋奶素", "海鲜素", "鱼素"),
    "religious": ("halal", "kosher", "清真"),
    "plan": ("keto", "keto diet", "paleo", "low carb", "whole30", "intermittent fasting", "生酮", "生酮饮食",
             "低碳", "低碳水", "轻断食"),
}  # fmt: skip
_LABEL_KIND = {label: kind for kind, labels in DIET_LABEL_KINDS.items() for label in labels}
_NO_FOOD = re.compile(r"^(?:no[:\s]\s*|不吃|不喝|不能吃|忌)(.+)$")
_PUNCT = re.compile(r"[\s\-_'’\"“”.,!?;:()（）《》]+")


def _plain(text: str) -> str:
    text = _PUNCT.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
    text = re.sub(r"^(?:a|an|the)\s+", "", text)
    text = re.sub(r"(?<=[\u3400-\u9fff])\s+|\s+(?=[\u3400-\u9fff])", "", text)
    word = re.search(r"([a-z]+)$", text)
    if word and len(word.group(1)) > 3 and not word.group(1).endswith(("ss", "us", "is")):
        stem = word.group(1)
        stem = stem[:-3] + "y" if stem.endswith("ies") and len(stem) > 4 else stem.removesuffix("s")
        text = text[: word.start(1)] + stem
    return text


def diet_label_kind(item: str) -> str | None:
    """The kind of a diet label (``pattern``, ``religious``, ``plan``), or None for a
    food item ("no:pork") or an unknown label.

    >>> diet_label_kind("Vegan"), diet_label_kind("清真"), diet_label_kind("no:pork")
    ('pattern', 'religious', None)
    """
    plain = _plain(item)
    return _LABEL_KIND.get(plain) or _LABEL_KIND.get(plain.removesuffix(" diet"))


def item_identity(key: str, item: str) -> str:
    """What makes two list items the same item of ``key`` (case, plural, punctuation and
    article folded; an entity is its name when it has one, else its kind).

    >>> item_identity("pets", "Greyhound: Biscuit") == item_identity("pets", "dog: biscuit")
    True
    >>> item_identity("diet", "不吃猪肉") == item_identity("diet", "no:猪肉")
    True
    """
    if key in ENTITY_KEYS:
        kind, sep, name = item.partition(":")
        if not sep:
            kind, sep, name = item.partition("：")
        return "name:" + _plain(name) if sep and name.strip() else "kind:" + _plain(kind)
    if key == "diet":
        food = _NO_FOOD.match(unicodedata.normalize("NFKC", item).strip())
        if food:
            return "no:" + _plain(food.group(1))
    if key == "allergies":
        return re.sub(r"\s*(?:allergy|allergies|allergic|过敏)$", "", _plain(item).removeprefix("对"))
    return _plain(item)


def _entity_kind(item: str) -> str:
    return _plain(re.split(r"[:：]", item, maxsplit=1)[0])


def merge_items(
    key: str,
    current: ProfileValue | None,
    *,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    complete: bool = False,
) -> tuple[str, ...]:
    """The new list of ``key`` (an empty tuple: nothing left, delete the key).

    ``add`` items join the end unless already there (:func:`item_identity`); a named
    entity replaces an unnamed one of the same kind ("dog" then "dog: Rex"; "dog" after
    "dog: Rex" adds nothing). ``remove``
    items leave (explicit statements only). ``complete=True`` says ``add`` is the whole
    new list (an LLM's answer): for ``accumulate`` keys it replaces the current items,
    for ``keep`` keys (allergies, children) items missing from it stay. For ``diet`` a
    new label replaces the previous label of its kind (:data:`DIET_LABEL_KINDS`). The
    oldest items give way when the list caps would be exceeded, except for ``keep``
    keys, whose items are never dropped (the store then refuses the oversized list).
    """
    spec = KEYS.get(key)
    rule = spec.merge if spec else "accumulate"
    items = list(current) if isinstance(current, tuple) else [current] if isinstance(current, str) else []
    removed = {item_identity(key, r) for r in remove}
    if key in ENTITY_KEYS:  # "Rex died" / "the dog died": a bare word is a name or a kind
        removed |= {"name:" + i[5:] for i in removed if i.startswith("kind:")}
    if complete and rule != "keep":
        items = []
    items = [i for i in items if item_identity(key, i) not in removed]
    for new in add:
        ident = item_identity(key, new)
        if ident in removed or not new.strip():
            continue
        if rule == "labels" and (kind := diet_label_kind(new)):
            items = [i for i in items if diet_label_kind(i) != kind]
        if key in ENTITY_KEYS and ident.startswith("name:"):
            unnamed = "kind:" + _entity_kind(new)
            items = [i for i in items if item_identity(key, i) != unnamed]
        elif key in ENTITY_KEYS and any(_entity_kind(i) == ident[5:] for i in items):
            continue  # "dog" when "dog: Rex" is known: the same animal, already named
        if all(item_identity(key, i) != ident for i in items):
            items.append(new)
    if rule != "keep":
        while len(items) > MAX_LIST_ITEMS or sum(map(len, items)) > MAX_VALUE_CHARS:
            items.pop(0)
    return tuple(items)


def item_origins(history: Iterable[ProfileEntry]) -> dict[str, ProfileEntry]:
    """For each item of the key's current list, the version that brought it (the first
    of the unbroken run of versions, up to the current one, that hold it): its
    ``provenance`` names the message and session, its ``valid_from`` the time.

    >>> from datetime import UTC, datetime
    >>> from hmem.types import Provenance
    >>> t = [datetime(2024, m, 1, tzinfo=UTC) for m in (1, 2)]
    >>> h = [ProfileEntry("u", "likes", ("tea",), t[0], t[1], Provenance("message", "s1", "m1")),
    ...      ProfileEntry("u", "likes", ("tea", "jazz"), t[1], None, Provenance("message", "s2", "m7"))]
    >>> {item: e.provenance.message_id for item, e in item_origins(h).items()}
    {'tea': 'm1', 'jazz': 'm7'}
    """
    versions = list(history)
    if not versions or versions[-1].value is None:
        return {}
    current = versions[-1]
    key = current.key
    values = current.value if isinstance(current.value, tuple) else (str(current.value),)
    origins: dict[str, ProfileEntry] = {}
    for item in values:
        ident = item_identity(key, item)
        origin = current
        for entry in reversed(versions[:-1]):
            held = entry.value if isinstance(entry.value, tuple) else (entry.value,) if entry.value else ()
            if not any(isinstance(h, str) and item_identity(key, h) == ident for h in held):
                break
            origin = entry
        origins[item] = origin
    return origins
