"""In-memory :class:`~hmem.protocols.ItemStore` — the reference implementation.

Example::

    >>> from hmem.types import MemoryItem
    >>> store = MemoryItemStore()
    >>> store.put([MemoryItem(id="i1", user_id="u1", text="I like tea")])
    >>> store.find_duplicate("u1", "fact", "i like tea.").id
    'i1'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from datetime import datetime

from hmem.errors import InvalidInput
from hmem.longterm._args import check_metadata
from hmem.longterm.dedup import dedup_key
from hmem.protocols import ItemFilter
from hmem.types import MAX_ID_CHARS, MemoryItem, check_id, check_text

__all__ = ["MemoryItemStore", "check_ids", "check_metadata", "validate_item"]


def validate_item(item: object) -> MemoryItem:
    """Reject anything that is not a storable :class:`MemoryItem` (shared by backends)."""
    if not isinstance(item, MemoryItem):
        raise InvalidInput(f"items must be MemoryItem values, got {type(item).__name__}", field="items")
    check_id(item.user_id, "user_id")
    check_id(item.id, "id")
    check_id(item.kind, "kind")
    check_text(item.text, "text", allow_empty=False)
    if isinstance(item.importance, bool) or not isinstance(item.importance, int | float) or not (
        0.0 <= item.importance <= 1.0
    ):
        raise InvalidInput(f"importance must be a number in [0, 1], got {item.importance!r}", field="importance")
    check_metadata(item.metadata)
    for name in ("session_id", "source_message_id", "speaker"):
        if getattr(item, name) is not None:
            check_id(getattr(item, name), name)
    for name in ("created_at", "updated_at"):
        value = getattr(item, name)
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise InvalidInput(f"{name} must be a timezone-aware datetime", field=name)
    return item


_BAD_ID_CHARS = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def check_ids(ids: Sequence[str]) -> list[str]:
    """Validate a list of ids like :func:`check_id`, fast enough for the thousands of
    allowed ids of a filtered recall (one C-level regex per id; the slow path only runs
    to produce the error message)."""
    if isinstance(ids, str):
        raise InvalidInput("ids must be a list of ids, not a string", field="ids")
    out = list(ids)
    for i in out:
        if (
            type(i) is not str or not i or len(i) > MAX_ID_CHARS or i[0].isspace() or i[-1].isspace()
            or _BAD_ID_CHARS.search(i)
        ):
            check_id(i, "ids[]")
    return out


class MemoryItemStore:
    """Items in a dict per user; thread-safe; lost on exit."""

    def __init__(self) -> None:
        self._items: dict[str, dict[str, MemoryItem]] = {}
        self._lock = threading.RLock()

    def put(self, items: Sequence[MemoryItem]) -> None:
        checked = [validate_item(i) for i in items]
        with self._lock:
            for item in checked:
                self._items.setdefault(item.user_id, {})[item.id] = item

    def get(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryItem]:
        check_id(user_id, "user_id")
        wanted = check_ids(ids)
        with self._lock:
            mine = self._items.get(user_id, {})
            return {i: mine[i] for i in wanted if i in mine}

    def find(self, user_id: str, flt: ItemFilter | None = None, *, limit: int | None = None) -> list[MemoryItem]:
        check_id(user_id, "user_id")
        flt = flt or ItemFilter()
        found = self._matching(user_id, flt)
        found.sort(key=lambda it: (it.created_at, it.id))
        return found if limit is None else found[:limit]

    def find_ids(self, user_id: str, flt: ItemFilter | None = None) -> set[str]:
        check_id(user_id, "user_id")
        return {it.id for it in self._matching(user_id, flt or ItemFilter())}

    def _matching(self, user_id: str, flt: ItemFilter) -> list[MemoryItem]:
        with self._lock:
            mine = self._items.get(user_id, {})
            # With ids, look those up instead of testing every item (recall confirms its
            # candidates so).
            pool = mine.values() if flt.ids is None else [mine[i] for i in flt.ids if i in mine]
            return [it for it in pool if flt.matches(it)]

    def find_duplicate(self, user_id: str, kind: str, text: str) -> MemoryItem | None:
        check_id(user_id, "user_id")
        key = dedup_key(text)
        with self._lock:
            for item in self._items.get(user_id, {}).values():
                if item.kind == kind and dedup_key(item.text) == key:
                    return item
        return None

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        check_id(user_id, "user_id")
        wanted = check_ids(ids)
        with self._lock:
            mine = self._items.get(user_id, {})
            return sum(1 for i in set(wanted) if mine.pop(i, None) is not None)

    def delete_user(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        with self._lock:
            return len(self._items.pop(user_id, {}))

    def count(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        with self._lock:
            return len(self._items.get(user_id, {}))
