"""Which of a user's long-term items a query may see: :class:`ItemFilter`, the value the
:class:`~hmem.protocols.ItemStore` port and recall take (re-exported by
:mod:`hmem.protocols`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from hmem.types import JSONScalar, MemoryItem

__all__ = ["ItemFilter"]


@dataclass(frozen=True, slots=True)
class ItemFilter:
    """Which of a user's long-term items a query may see (all conditions ANDed).

    ``since``/``until`` bound ``created_at`` (inclusive); ``metadata`` requires each
    key to equal the given value. ``None`` means "no condition".

    Example::

        >>> ItemFilter(kinds=frozenset({"fact"})).is_empty
        False
    """

    kinds: frozenset[str] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    metadata: Mapping[str, JSONScalar] | None = None
    ids: frozenset[str] | None = None
    source_message_ids: frozenset[str] | None = None

    @property
    def is_empty(self) -> bool:
        return all(
            v is None
            for v in (self.kinds, self.session_id, self.since, self.until, self.metadata, self.ids,
                      self.source_message_ids)
        )

    def matches(self, item: MemoryItem) -> bool:
        """True if ``item`` satisfies every condition (the user is checked by the caller)."""
        if self.kinds is not None and item.kind not in self.kinds:
            return False
        if self.session_id is not None and item.session_id != self.session_id:
            return False
        if self.since is not None and item.created_at < self.since:
            return False
        if self.until is not None and item.created_at > self.until:
            return False
        if self.ids is not None and item.id not in self.ids:
            return False
        if self.source_message_ids is not None and item.source_message_id not in self.source_message_ids:
            return False
        if self.metadata:
            for key, value in self.metadata.items():
                if key not in item.metadata or item.metadata[key] != value or type(item.metadata[key]) is not type(value):
                    return False
        return True
