"""The read path of :meth:`hmem.longterm.store.LongTermStore.recall`: candidates from
both retrievers (I/O through the ports: dense vectors and sentence keys, BM25 with the
query's synonyms and translations), kept when the item store confirms them, fused, then
ranked by the stages of ``config.stages`` in order (:mod:`hmem.longterm.stages`). The retrieval depth (``max(config.candidates, 3k)``) and the head
(``max(config.rerank_depth, k)``) do not depend on ``k`` up to ``rerank_depth`` (100): the
first hits of ``recall(q, 10)`` are the first of ``recall(q, 100)``.
Unless a boost reads them, the candidates' items are read only for the few hits that
need them (:class:`_Confirmed`).

Example (the store calls it so; it needs the embedding model)::

    >>> from hmem.backends.memory.items import MemoryItemStore
    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.backends.memory.lexical import MemoryLexicalIndex
    >>> from hmem.providers.embed import SentenceTransformerEmbedder
    >>> from hmem.types import utcnow
    >>> ports = RecallPorts(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(),
    ...                     SentenceTransformerEmbedder())                     # doctest: +SKIP
    >>> run_recall(ports, LongTermConfig(), utcnow(), "u1", "tea", 5, RecallOptions())  # doctest: +SKIP
    []
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from hmem.longterm import fusion as fz
from hmem.longterm._args import dense_where
from hmem.longterm._rank import (
    boosts_read_items,
    fusion_rrf,
    fusion_weighted,
    to_hits,
)
from hmem.longterm.crosslingual import (
    CHINESE_PROBE,
    cc_cedict,
    cross_lingual_terms,
    holds_chinese,
    translated_words,
)
from hmem.longterm.feedback import rounds_of
from hmem.longterm.index_text import MAX_INDEX_CHARS
from hmem.longterm.keys import SentenceKeyIndex, fold_keys, key_parent, nearest_keys
from hmem.longterm.options import RecallOptions
from hmem.longterm.stages import Diversity, Ranking
from hmem.longterm.synonyms import expand_query
from hmem.longterm.types import LongTermConfig
from hmem.protocols import Embedder, ItemFilter, ItemStore, LexicalIndex, ScoredId, VectorIndex
from hmem.types import Hit, MemoryItem

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
    keys: SentenceKeyIndex | None = None


def run_recall(  # noqa: PLR0917  # the checked arguments of LongTermStore.recall, passed on
    ports: RecallPorts, config: LongTermConfig, now: datetime, user_id: str, query: str, k: int,
    options: RecallOptions,
) -> list[Hit]:
    """The ``k`` best hits for ``query`` (user, query and ``k`` checked by the caller)."""
    flt = options.item_filter
    fusion = options.fusion or config.fusion
    # Up to rerank_depth hits, the depths are the config's, not k's: asking for more must not
    # reorder the first ones (a deeper candidate list changes min-max fusion, a larger head
    # what is re-ranked). A deeper ask (context() takes up to 200) searches deeper still.
    depth = max(config.candidates, 3 * k)
    head = max(config.rerank_depth, k)
    allowed: set[str] | None = None
    if not flt.is_empty:
        allowed = ports.items.find_ids(user_id, flt)
        if not allowed:
            return []
    if fusion in ("lexical", "dense"):
        return _one_retriever(ports, user_id, query, k, fusion == "lexical", flt=flt, allowed=allowed)
    qvec = ports.embedder.embed_query([query])[0]
    dense = _dense(ports.vectors, user_id, qvec, depth, flt=flt, allowed=allowed)
    passages: dict[str, int] = {}
    if ports.keys is not None:
        dense, passages = _with_keys(ports.keys, user_id, qvec, depth, dense, flt=flt, allowed=allowed)
    # Family words in other words ("父母" for "爸妈"): BM25 only (hmem.longterm.synonyms).
    expanded = synonyms = expand_query(query)
    if config.cross_lingual:
        expanded = _with_translations(ports.lexical, user_id, synonyms)
    lexical_query = expanded if len(expanded) <= MAX_INDEX_CHARS else query
    lexical = ports.lexical.search(user_id, lexical_query, depth, allowed_ids=allowed)
    eager = boosts_read_items(options.half_life, options.importance_weight, period=None, time_weight=0.0)
    valid = _Confirmed(ports.items, user_id, flt, allowed, eager=eager)
    valid.confirm([h.id for h in dense] + [h.id for h in lexical])
    dense = [h for h in dense if h.id in valid]
    lexical = [h for h in lexical if h.id in valid]
    two: Literal["rrf", "weighted"] = "rrf" if fusion == "rrf" else "weighted"
    if two == "rrf":
        fused = fusion_rrf(lexical, dense, config.rrf_k)
    else:
        # BM25 counts as much as its best match covers the question (fz.query_coverage).
        translated = expanded != synonyms and lexical_query == expanded  # BM25 searched the translations
        coverage = _coverage(ports.lexical, user_id, query, lexical, translated=translated) \
            if config.lexical_coverage else 1.0
        fused = fusion_weighted(lexical, dense, config.lexical_weight * coverage, config.dense_weight)
    ranking = Ranking(user_id=user_id, query=query, lexical_query=lexical_query, k=k, head=head, depth=depth, now=now,
                      fusion=two, rrf_k=config.rrf_k, allowed=allowed, candidates=valid, lexical=ports.lexical,
                      embedder=ports.embedder, fused=fused, half_life=options.half_life,
                      importance_weight=options.importance_weight)
    stages = config.stages if options.stages is None else replace(
        config, recall_stages=tuple(options.stages)).stages
    if options.mmr_lambda is not None:
        stages = (*stages, Diversity(options.mmr_lambda))
    for stage in stages:
        stage.apply(ranking)
    shown = valid.first(ranking.order, k)
    hits = to_hits(shown, ranking.scored, ranking.fused, valid, lexical=lexical, dense=dense,
                   rounds=rounds_of(shown, ranking.heads, ranking.kept))
    return [replace(h, passage=passages[h.item.id]) if h.item.id in passages else h for h in hits]


def _coverage(index: LexicalIndex, user_id: str, query: str, lexical: Sequence[ScoredId], *,
              translated: bool) -> float:
    """How much of ``query`` (as written: expansions add words, not evidence) the best
    BM25 candidate covers (:func:`hmem.longterm.fusion.query_coverage`).

    When the BM25 query carried translations (``translated``), a question word the archive
    lacks while it holds the word's translation is missing because of the language, not
    because it was never said: it does not count against the coverage (the translation
    is what BM25 matched)."""
    if not lexical:
        return 0.0
    bridges = translated_words(query, dictionary) if translated and (dictionary := cc_cedict()) else []
    stats = index.term_stats(user_id, [query, *(w for w, _ in bridges), *(" ".join(t) for _, t in bridges)])
    terms = dict(stats.terms[0])
    for own, other in zip(stats.terms[1 : 1 + len(bridges)], stats.terms[1 + len(bridges) :], strict=True):
        if any(other.values()):  # the translation is there: the word's absent terms do not count
            for term in [t for t, held in own.items() if not held]:
                terms.pop(term, None)
    return fz.query_coverage(max(h.score for h in lexical), terms, stats.documents)


def _one_retriever(
    ports: RecallPorts, user_id: str, query: str, k: int, lexical: bool, *, flt: ItemFilter,
    allowed: set[str] | None,
) -> list[Hit]:
    """The ``k`` best hits of one retriever alone, as it ranks them: BM25 of the query as
    written (no synonyms, no translations) or the nearest vectors and sentence keys; no
    fusion, no stages (the baselines of an ablation)."""
    if lexical:
        found = ports.lexical.search(user_id, query, k, allowed_ids=allowed)
    else:
        qvec = ports.embedder.embed_query([query])[0]
        found = _dense(ports.vectors, user_id, qvec, k, flt=flt, allowed=allowed)
        if ports.keys is not None:
            found, _ = _with_keys(ports.keys, user_id, qvec, k, found, flt=flt, allowed=allowed)
    valid = _Confirmed(ports.items, user_id, flt, allowed, eager=False)
    valid.confirm(h.id for h in found)
    ranked = [h for h in found if h.id in valid]
    order = valid.first([h.id for h in ranked], k)
    scores = {h.id: h.score for h in ranked}
    return to_hits(order, {d: (scores[d], {}) for d in order}, scores, valid,
                   lexical=ranked if lexical else [], dense=[] if lexical else ranked)


class _Confirmed(Mapping[str, MemoryItem]):
    """The candidates the item store confirms (the user's, matching the filter: indexes
    may still hold deleted items), and their items, read from the store when first needed.

    Ranking needs only the ids unless a boost reads the items (``eager``: each is read
    when confirmed). A deep recall (``Memory.context``: ~1,300 candidates at 10k items)
    shows a few hundred, and decoding every candidate's row was a third of its time.
    ``in`` answers from the confirmed ids; reading an item deleted since its confirmation
    drops it (``KeyError``, ``get`` gives None), as if the indexes had not returned it.
    """

    def __init__(
        self, store: ItemStore, user_id: str, flt: ItemFilter, allowed: set[str] | None, *, eager: bool
    ) -> None:
        self._store, self._user, self._flt, self._allowed, self._eager = store, user_id, flt, allowed, eager
        self._ids: set[str] = set()
        self._checked: set[str] = set()
        self._items: dict[str, MemoryItem] = {}

    def confirm(self, ids: Iterable[str]) -> None:
        """Check the ids not checked yet; keep those the store holds for the user under the filter."""
        new = [d for d in dict.fromkeys(ids) if d not in self._checked]
        if not new:
            return
        self._checked.update(new)
        if self._eager:
            self._read(new)
            self._ids.update(d for d in new if d in self._items)
        elif self._allowed is not None:  # the filter's ids, read at the start of this recall
            self._ids.update(d for d in new if d in self._allowed)
        else:
            self._ids |= self._store.find_ids(self._user, ItemFilter(ids=frozenset(new)))

    def fetch(self, ids: Iterable[str]) -> None:
        """Read the items of the confirmed ``ids`` not read yet, in one call."""
        missing = [d for d in dict.fromkeys(ids) if d in self._ids and d not in self._items]
        if missing:
            self._read(missing)
            self._ids.difference_update(d for d in missing if d not in self._items)

    def first(self, order: Sequence[str], n: int) -> list[str]:
        """The first ``n`` ids of ``order`` whose items are still there, read."""
        out: list[str] = []
        start = 0
        while len(out) < n and start < len(order):
            batch = order[start : start + n - len(out)]
            self.fetch(batch)
            out += [d for d in batch if d in self._items]
            start += len(batch)
        return out

    def _read(self, ids: Sequence[str]) -> None:
        found = self._store.get(self._user, ids)
        self._items.update({i: it for i, it in found.items() if it.user_id == self._user and self._flt.matches(it)})

    def __getitem__(self, doc_id: str) -> MemoryItem:
        if doc_id not in self._items:
            self.fetch([doc_id])
        return self._items[doc_id]

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def _with_keys(
    keys: SentenceKeyIndex, user_id: str, qvec: Sequence[float], depth: int, own: list[ScoredId], *,
    flt: ItemFilter, allowed: set[str] | None,
) -> tuple[list[ScoredId], dict[str, int]]:
    """``own`` (the dense hits) folded with the nearest sentence keys, and per turn the
    number of its key nearest the query (the passage an excerpt shows): keys carry their
    turn's metadata, so the filter's ``where`` holds for them; the allowed ids are
    checked on their turns."""
    found = keys.search(user_id, qvec, depth, where=dense_where(flt) or None)
    if allowed is not None:
        found = [h for h in found if key_parent(h.id) in allowed]
    if not found:
        return own, {}
    return fold_keys(own, found)[:depth], nearest_keys(found)


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


def _with_translations(lexical: LexicalIndex, user_id: str, query: str) -> str:
    """``query`` followed by the translations of its words (:mod:`hmem.longterm.crosslingual`)
    when they can match: the question holds Chinese, or the user's archive does."""
    if not holds_chinese(query) and not any(lexical.term_stats(user_id, [CHINESE_PROBE]).terms[0].values()):
        return query
    dictionary = cc_cedict()
    extra = cross_lingual_terms(query, dictionary) if dictionary is not None else []
    translated = f"{query} {' '.join(extra)}" if extra else query
    return translated if len(translated) <= MAX_INDEX_CHARS else query
