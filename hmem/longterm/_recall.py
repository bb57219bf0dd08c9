"""The read path of :meth:`hmem.longterm.store.LongTermStore.recall`: fetch candidates
from both retrievers (I/O through the ports), keep the ones the item store confirms,
then rank them with the pure functions of :mod:`hmem.longterm._rank`.

Example (the store calls it so; it needs the embedding model)::

    >>> from hmem.backends.memory.items import MemoryItemStore
    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.backends.memory.lexical import MemoryLexicalIndex
    >>> from hmem.providers.embed import SentenceTransformerEmbedder
    >>> from hmem.longterm._args import check_recall_args
    >>> from hmem.types import utcnow
    >>> ports = RecallPorts(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(),
    ...                     SentenceTransformerEmbedder())                     # doctest: +SKIP
    >>> args = check_recall_args("u1", "tea", k=5, kinds=None, session_id=None, since=None, until=None,
    ...                          metadata=None, fusion="weighted", recency_half_life=None,
    ...                          importance_weight=0.0, mmr_lambda=None)
    >>> run_recall(ports, LongTermConfig(), utcnow(), "u1", "tea", 5, args,
    ...            fusion="weighted", mmr_lambda=None)                         # doctest: +SKIP
    []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from hmem.longterm import fusion as fz
from hmem.longterm._args import dense_where
from hmem.longterm._rank import best_first, boosted_scores, fusion_rrf, fusion_weighted, to_hits
from hmem.longterm.index_text import dense_text
from hmem.longterm.types import LongTermConfig
from hmem.protocols import Embedder, ItemFilter, ItemStore, LexicalIndex, ScoredId, VectorIndex
from hmem.types import Hit

__all__ = ["RecallPorts", "run_recall"]

#: Above this many allowed ids, the dense side filters by ``where`` instead of by ids.
_MAX_ID_FILTER = 20_000


@dataclass(frozen=True, slots=True)
class RecallPorts:
    """The collaborators recall reads from."""

    items: ItemStore
    vectors: VectorIndex
    lexical: LexicalIndex
    embedder: Embedder


def run_recall(  # noqa: PLR0917  # the checked arguments of LongTermStore.recall, passed on
    ports: RecallPorts, config: LongTermConfig, now: datetime, user_id: str, query: str, k: int,
    args: Mapping[str, Any], *, fusion: Literal["rrf", "weighted"], mmr_lambda: float | None,
) -> list[Hit]:
    """The ``k`` best hits for ``query``; ``args`` comes from :func:`check_recall_args`."""
    flt: ItemFilter = args["filter"]
    depth = max(config.candidates, k * 3)
    allowed: set[str] | None = None
    if not flt.is_empty:
        allowed = ports.items.find_ids(user_id, flt)
        if not allowed:
            return []
    qvec = ports.embedder.embed_query([query])[0]
    dense = _dense(ports.vectors, user_id, qvec, depth, flt=flt, allowed=allowed)
    lexical = ports.lexical.search(user_id, query, depth, allowed_ids=allowed)
    found = ports.items.get(user_id, list(dict.fromkeys([h.id for h in dense] + [h.id for h in lexical])))
    valid = {i: it for i, it in found.items() if it.user_id == user_id and flt.matches(it)}
    dense = [h for h in dense if h.id in valid]
    lexical = [h for h in lexical if h.id in valid]
    if fusion == "rrf":
        fused = fusion_rrf(lexical, dense, config.rrf_k)
    else:
        fused = fusion_weighted(lexical, dense, config.lexical_weight, config.dense_weight)
    scored = boosted_scores(fused, valid, now, args["half_life"], args["importance_weight"])
    order = best_first(scored)
    if mmr_lambda is not None and order:
        pool = order[: max(k * 3, 30)]
        vecs = dict(zip(pool, ports.embedder.embed([dense_text(valid[d]) for d in pool]), strict=True))
        picked = fz.mmr(pool, {d: scored[d][0] for d in pool}, vecs, k, mmr_lambda)
        for d, mmr_score in picked:
            scored[d][1]["mmr"] = mmr_score
        order = [d for d, _ in picked]
    return to_hits(order[:k], scored, fused, valid, lexical=lexical, dense=dense)


def _dense(
    vectors: VectorIndex, user_id: str, qvec: Sequence[float], depth: int, *, flt: ItemFilter,
    allowed: set[str] | None,
) -> list[ScoredId]:
    if allowed is None:
        return vectors.query(user_id, qvec, depth)
    # Searching the allowed ids directly (hmem's indexes offer ``query_ids``) is exact
    # and 4-5x faster in Chroma than the equivalent metadata ``where``; very large
    # allowed sets fall back to ``where``.
    query_ids = getattr(vectors, "query_ids", None)
    if query_ids is not None and len(allowed) <= _MAX_ID_FILTER:
        return list(query_ids(user_id, qvec, depth, allowed))
    return vectors.query(user_id, qvec, depth, where=dense_where(flt) or None)
