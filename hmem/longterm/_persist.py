"""Writing long-term items to the three stores of a user, in the fixed order of
:mod:`hmem.longterm.store`: the item store (source of truth) first, then the vector and
lexical indexes; an index that refuses the batch undoes the item-store write, so a
retry is not mistaken for a duplicate of an item no index knows.

Example::

    >>> from hmem.backends.memory.items import MemoryItemStore
    >>> from hmem.backends.memory.lexical import MemoryLexicalIndex
    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.types import MemoryItem
    >>> items, lexical = MemoryItemStore(), MemoryLexicalIndex()
    >>> tea = MemoryItem(id="a", user_id="u", text="I like green tea")
    >>> persist(items, MemoryVectorIndex(), lexical, "u", {"a": (tea, [1.0, 0.0])})
    >>> sorted(items.get("u", ["a"])), [h.id for h in lexical.search("u", "tea", 1)]
    (['a'], ['a'])
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from hmem.errors import InvalidInput
from hmem.longterm._args import index_metadata
from hmem.longterm.index_text import dense_text, lexical_text
from hmem.longterm.supersede import CLAIM_KEY, SUPERSEDED_AT, SUPERSEDED_BY, SUPERSEDES, plan_supersession
from hmem.protocols import Embedder, ItemFilter, ItemStore, LexicalIndex, VectorIndex
from hmem.types import MemoryItem, check_id

__all__ = ["check_restore", "lexical_add", "link_versions", "persist", "rebuild_lexical", "restore_items",
           "revive_versions"]


def persist(
    items: ItemStore, vectors: VectorIndex, lexical: LexicalIndex, user_id: str,
    final: Mapping[str, tuple[MemoryItem, list[float]]],
) -> None:
    """Write ``final`` (item id → (item, vector)): the item store first, then the indexes;
    if an index refuses, the item-store write is undone (see the module doc)."""
    written = [it for it, _ in final.values()]
    previous = items.get(user_id, [it.id for it in written])
    # Order matters: the item store (source of truth) first, then the indexes.
    items.put(written)
    try:
        vectors.upsert(user_id, [it.id for it in written], [v for _, v in final.values()],
                       [index_metadata(it) for it in written])
        lexical_add(lexical, user_id, [(it.id, lexical_text(it)) for it in written])
    except BaseException:
        # An index refused the batch (e.g. Chroma down): undo the item-store write so a
        # retry is not mistaken for a duplicate of an item no index knows. If this undo
        # is itself interrupted, the item is stored but unindexed and reindex() repairs.
        new_ids = [it.id for it in written if it.id not in previous]
        items.delete(user_id, new_ids)
        if previous:
            items.put(list(previous.values()))
        with contextlib.suppress(Exception):
            vectors.delete(user_id, new_ids)
            for doc_id in new_ids:
                lexical.remove(user_id, doc_id)
        raise


def check_restore(user_id: str, items: Sequence[MemoryItem], vectors: Sequence[Sequence[float]] | None) -> bool:
    """Check the arguments of :meth:`LongTermStore.restore`; False when there is nothing to do."""
    check_id(user_id, "user_id")
    if any(it.user_id != user_id for it in items):
        raise InvalidInput("every restored item must belong to user_id", field="items")
    if vectors is not None and len(vectors) != len(items):
        raise InvalidInput("vectors must match items one to one", field="vectors")
    return bool(items)


def restore_items(
    items: ItemStore, vectors: VectorIndex, lexical: LexicalIndex, user_id: str, *, restored: Sequence[MemoryItem],
    vecs: Sequence[Sequence[float]],
) -> None:
    """Write exported items back verbatim and index them with ``vecs`` (item store first)."""
    items.put(list(restored))
    vectors.upsert(user_id, [it.id for it in restored], vecs, [index_metadata(it) for it in restored])
    lexical_add(lexical, user_id, [(it.id, lexical_text(it)) for it in restored])


def rebuild_lexical(lexical: LexicalIndex, user_id: str, everything: Sequence[MemoryItem], batch_size: int) -> None:
    """Replace the user's lexical entries by those of ``everything``, a batch at a time."""
    lexical.delete_user(user_id)
    for start in range(0, len(everything), batch_size):
        lexical_add(lexical, user_id, [(it.id, lexical_text(it)) for it in everything[start : start + batch_size]])


def lexical_add(lexical: LexicalIndex, user_id: str, docs: Sequence[tuple[str, str]]) -> None:
    """Add ``docs`` (id, text) to ``lexical``, in one transaction where the index offers it."""
    # ``add`` replaces an existing doc id (LexicalIndex contract). hmem's indexes also
    # offer ``add_many`` (one transaction for the batch), which ingest throughput needs.
    add_many = getattr(lexical, "add_many", None)
    if add_many is not None:
        add_many(user_id, docs)
    else:
        for doc_id, text in docs:
            lexical.add(user_id, doc_id, text)


def link_versions(
    items: ItemStore, embedder: Embedder, user_id: str, final: dict[str, tuple[MemoryItem, list[float]]],
    now: datetime,
) -> dict[str, MemoryItem]:
    """Link the claim-keyed items of ``final`` (about to be persisted) to the stored
    versions they supersede, and add those, marked, to ``final``
    (:mod:`hmem.longterm.supersede`). Returns the new items that changed, by id."""
    claimed = [it for it, _ in final.values() if CLAIM_KEY in it.metadata]
    if not claimed:
        return {}
    # Read by kind (an indexed condition in every item store), then by claim in Python.
    stored = items.find(user_id, ItemFilter(kinds=frozenset(it.kind for it in claimed)))
    active = [it for it in stored if it.id not in final and CLAIM_KEY in it.metadata]
    new, old = plan_supersession([it for it, _ in final.values()], active, now)
    changed = {it.id: it for it in new if it is not final[it.id][0]}
    for it in changed.values():
        final[it.id] = (it, final[it.id][1])
    if old:
        # Marking changes metadata only: the same text, the same vector (the embedding cache answers).
        vectors = embedder.embed([dense_text(it) for it in old])
        final.update({it.id: (it, vec) for it, vec in zip(old, vectors, strict=True)})
    return changed


def revive_versions(
    items: ItemStore, vectors: VectorIndex, lexical: LexicalIndex, embedder: Embedder, user_id: str, *,
    deleted: Mapping[str, MemoryItem],
) -> list[MemoryItem]:
    """Mend the version chains ``deleted`` (id → item, just removed) sat in: a version a
    deleted *current* version had superseded is current again (forgetting "we moved to
    York" makes "Maya lives in Leeds" the newest version again); one a deleted *middle*
    version had superseded is linked to that version's successor instead. Returns the
    items rewritten (re-indexed with their unchanged vectors)."""
    def successor(item: MemoryItem) -> str | None:  # the nearest newer version that is left
        seen: set[str] = set()
        while item.id in deleted and item.id not in seen:
            seen.add(item.id)
            newer = item.metadata.get(SUPERSEDED_BY)
            if not isinstance(newer, str) or not newer:
                return None
            if newer not in deleted:
                return newer
            item = deleted[newer]
        return None

    wanted = sorted({str(it.metadata[SUPERSEDES]) for it in deleted.values() if it.metadata.get(SUPERSEDES)}
                    - set(deleted))
    if not wanted:
        return []
    changed: list[MemoryItem] = []
    for old in items.get(user_id, wanted).values():
        gone = old.metadata.get(SUPERSEDED_BY)
        if not isinstance(gone, str) or gone not in deleted:
            continue  # superseded by a version that is still there
        newer = successor(deleted[gone])
        meta = {k: v for k, v in old.metadata.items() if k not in (SUPERSEDED_BY, SUPERSEDED_AT)}
        if newer is not None:
            meta = {**meta, SUPERSEDED_BY: newer, SUPERSEDED_AT: old.metadata.get(SUPERSEDED_AT)}
            found = items.get(user_id, [newer]).get(newer)
            if found is not None:
                changed.append(replace(found, metadata={**found.metadata, SUPERSEDES: old.id}))
        changed.append(replace(old, metadata=meta))
    if changed:
        vecs = embedder.embed([dense_text(it) for it in changed])  # same texts: the cache answers
        persist(items, vectors, lexical, user_id, {it.id: (it, v) for it, v in zip(changed, vecs, strict=True)})
    return changed
