"""From validated entries to long-term items (pure: values in, values out).

* :func:`new_item` / :func:`new_item_id` — a :class:`~hmem.types.MemoryItem` for an entry;
  archived turns get ids derived from their source, so concurrent archiving upserts;
* :func:`with_previous_turns` — each archived turn with the turn before it;
* :func:`entry_dense_text` — what the embedder sees of an entry;
* :func:`merge_near_duplicate` — an existing item updated by a near-duplicate entry;
* :func:`retention_victims` — which items a retention cap removes;
* :func:`skip_exact_duplicates` — the entries of a write that repeat a stored item word for word.

Example::

    >>> from hmem.longterm._args import Entry
    >>> turn = Entry("hi", kind="turn", session_id="s1", source_message_id="m1", speaker="user")
    >>> new_item_id("u1", turn) == new_item_id("u1", turn), entry_dense_text(turn)
    (True, 'user: hi')
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from hmem.longterm import fusion as fz
from hmem.longterm._args import Entry
from hmem.longterm.dedup import dedup_key
from hmem.longterm.index_text import PREVIOUS_TURN_KEY, PREVIOUS_TURN_MAX_CHARS, dense_line, speaker_line
from hmem.longterm.types import RememberResult
from hmem.protocols import ItemStore
from hmem.types import MemoryItem, Message, new_id

__all__ = [
    "entry_dense_text",
    "merge_near_duplicate",
    "new_item",
    "new_item_id",
    "retention_victims",
    "skip_exact_duplicates",
    "with_previous_turns",
]


def entry_dense_text(e: Entry) -> str:
    """The embedded text of an entry: the same rule as
    :func:`hmem.longterm.index_text.dense_text`, on an entry not yet made an item."""
    return dense_line(e.kind, e.speaker, e.text)


def with_previous_turns(
    entries: list[Entry], messages: Sequence[Message], previous: Message | None, roles: frozenset[str]
) -> list[Entry]:
    """Each turn entry with the session's preceding archivable message, as
    ``"<speaker>: <text>"`` in ``metadata["previous_turn"]`` (tool messages and empty
    turns are skipped over: the question a reply answers is the last thing *said*)."""
    by_id = {e.source_message_id: e for e in entries}
    out: list[Entry] = []
    last = previous if previous is not None and previous.role in roles and previous.text.strip() else None
    for m in messages:
        entry = by_id.get(m.id)
        if entry is not None:
            if last is not None:
                line = speaker_line(last.name or last.role, last.text)[:PREVIOUS_TURN_MAX_CHARS]
                entry = replace(entry, metadata={**entry.metadata, PREVIOUS_TURN_KEY: line})
            out.append(entry)
        if m.role in roles and m.text.strip():
            last = m
    return out


def new_item(user_id: str, e: Entry, item_id: str, now: datetime) -> MemoryItem:
    """The item an entry becomes (created at the entry's time, else ``now``)."""
    created = e.created_at or now
    return MemoryItem(
        id=item_id, user_id=user_id, text=e.text, kind=e.kind, importance=e.importance, created_at=created,
        updated_at=created, session_id=e.session_id, source_message_id=e.source_message_id, speaker=e.speaker,
        metadata=dict(e.metadata),
    )


def new_item_id(user_id: str, entry: Entry) -> str:
    """A fresh id, except for an archived turn: derived from its session and source
    message, so two instances archiving the same turn at once write the same record
    (an upsert) instead of two."""
    if entry.kind == "turn" and entry.source_message_id:
        key = f"{user_id}\x1f{entry.session_id or ''}\x1f{entry.source_message_id}"
        return "turn-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return new_id()


def merge_near_duplicate(target: MemoryItem, e: Entry, now: datetime, *, replace_text: bool) -> MemoryItem:
    """``target`` after a near-duplicate entry ``e``: its wording kept (or replaced),
    importance the max, metadata merged, ``updated_at`` refreshed, and the entry's
    session and source taking precedence when it has them."""
    return replace(
        target, text=e.text if replace_text else target.text,
        importance=max(target.importance, e.importance),
        metadata={**target.metadata, **e.metadata}, updated_at=max(now, target.created_at),
        session_id=e.session_id or target.session_id,
        source_message_id=e.source_message_id or target.source_message_id,
    )


def retention_victims(
    items: Sequence[MemoryItem], cap: int, now: datetime, half_life_seconds: float
) -> list[MemoryItem]:
    """The items past ``cap`` with the lowest ``importance × 0.5**(age/half_life)``
    (ties: older first, then by id)."""
    value = {it.id: it.importance * fz.recency_factor((now - it.created_at).total_seconds(), half_life_seconds)
             for it in items}
    return sorted(items, key=lambda it: (value[it.id], it.created_at, it.id))[: len(items) - cap]


def skip_exact_duplicates(
    items: ItemStore, user_id: str, entries: Sequence[Entry], *, dedup_from: int, now: datetime,
) -> tuple[list[RememberResult | None], list[int], dict[tuple[str, str], int]]:
    """Screen ``entries`` before a write: those from index ``dedup_from`` on (facts) that
    repeat a stored item or an earlier entry of the batch word for word are skipped
    (their results filled in). Returns the results so far, the indexes of the entries to
    write, and the first entry of each dedup key (kind, normalised text)."""
    results: list[RememberResult | None] = [None] * len(entries)
    pending: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    for i, e in enumerate(entries):
        if i >= dedup_from:
            existing = items.find_duplicate(user_id, e.kind, e.text)
            key = (e.kind, dedup_key(e.text))
            if existing is not None:
                results[i] = RememberResult("skipped", existing, 1.0)
                continue
            if key in seen:
                results[i] = RememberResult("skipped", new_item(user_id, entries[seen[key]], "", now), 1.0)
                continue
            seen[key] = i
        pending.append(i)
    return results, pending, seen
