"""Write-time near-duplicate search of :meth:`hmem.longterm.store.LongTermStore.remember_many`:
the nearest stored vectors of each new entry (I/O through the vector index) and the
best same-kind match at or above the threshold, among stored items and the earlier
entries of the same batch.

Example::

    >>> import numpy as np
    >>> from hmem.backends.memory.items import MemoryItemStore
    >>> from hmem.types import MemoryItem
    >>> tea = MemoryItem(id="a", user_id="u", text="I like tea")
    >>> v = np.array([1.0, 0.0], dtype=np.float32)
    >>> near_duplicate(MemoryItemStore(), "u", "fact", [1.0, 0.0], [], threshold=0.95,
    ...                pending={"a": (tea, [1.0, 0.0])}, batch_vecs=[("a", v)])[0].id
    'a'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hmem.longterm.text import same_wording
from hmem.protocols import ItemStore, ScoredId, VectorIndex
from hmem.types import MemoryItem

__all__ = ["NEIGHBOURS", "near_duplicate", "neighbours", "neighbours_of"]

#: How many stored vectors each new entry is compared with.
NEIGHBOURS = 5


def neighbours(vectors: VectorIndex, user_id: str, queries: Sequence[Sequence[float]]) -> list[list[ScoredId]]:
    """The :data:`NEIGHBOURS` nearest stored ids of each query vector."""
    # Unfiltered top-5 (kind is checked on the item): a kind filter makes Chroma 2-3x
    # slower, and one batched round trip beats one query per entry.
    query_many = getattr(vectors, "query_many", None)
    if query_many is not None:
        return list(query_many(user_id, queries, NEIGHBOURS))
    return [vectors.query(user_id, v, NEIGHBOURS) for v in queries]


def neighbours_of(vectors: VectorIndex, user_id: str, queries: Sequence[Sequence[float]], deduped: Sequence[bool],
                  *, searched: bool) -> list[list[ScoredId]]:
    """The stored neighbours of each query that is ``deduped`` (none for the others, or
    for all when not ``searched``: near-duplicate detection is off)."""
    out: list[list[ScoredId]] = [[] for _ in queries]
    wanted = [j for j, d in enumerate(deduped) if d]
    if searched and wanted:
        for j, near in zip(wanted, neighbours(vectors, user_id, [queries[j] for j in wanted]), strict=True):
            out[j] = near
    return out


def near_duplicate(
    items: ItemStore, user_id: str, kind: str, vec: Sequence[float], near: Sequence[ScoredId], *, threshold: float,
    pending: Mapping[str, tuple[MemoryItem, Any]], batch_vecs: Sequence[tuple[str, Any]], text: str | None = None,
) -> tuple[MemoryItem | None, float | None]:
    """The most similar item of ``kind`` at or above ``threshold`` (and its cosine), or
    ``(None, None)``: among the earlier entries of this batch (``batch_vecs``, their
    items in ``pending``) and the stored neighbours ``near``. With ``text`` (the new
    entry's), only an item in the same wording counts (:func:`~hmem.longterm.text.same_wording`):
    a cosine alone merges two different events of one shape (multilingual-e5 puts
    "went to a support group yesterday" and "went to a conference two days ago" at 0.97),
    and a merge keeps one wording only, where a missed merge costs one more item."""
    q = np.asarray(vec, dtype=np.float32)
    best: tuple[MemoryItem | None, float | None] = (None, None)

    def same(item: MemoryItem) -> bool:
        return item.kind == kind and (text is None or same_wording(text, item.text))

    for item_id, other in batch_vecs:  # earlier entries of this same batch
        sim = float(q @ other)
        item = pending[item_id][0]
        if sim >= threshold and (best[1] is None or sim > best[1]) and same(item):
            best = (item, sim)
    candidates = [h for h in near if h.score >= threshold]
    found_items = items.get(user_id, [h.id for h in candidates if h.id not in pending]) if candidates else {}
    for hit in candidates:
        if hit.score < threshold or (best[1] is not None and hit.score <= best[1]):
            continue
        found = pending[hit.id][0] if hit.id in pending else found_items.get(hit.id)
        if found is not None and same(found):  # a stale index id has no item: ignore it
            best = (found, hit.score)
    return best
