"""The read path of :meth:`hmem.longterm.store.LongTermStore.recall`: fetch candidates
from both retrievers (I/O through the ports), keep the ones the item store confirms,
then rank them with the pure functions of :mod:`hmem.longterm._rank`. With
``config.feedback_rounds`` > 1, each further round searches BM25 again with the query
expanded by the top hits' own words (:mod:`hmem.longterm.feedback`) and merges what it
finds; a round that brings nothing new into the re-ranked head is dropped and ends the
loop. The retrieval depth (``max(config.candidates, 3k)``) and the head
(``max(config.rerank_depth, k)``) do not depend on ``k`` up to ``rerank_depth`` (100): the
first hits of ``recall(q, 10)`` are the first of ``recall(q, 100)``.
Unless a boost reads them, the candidates' items are read only for the few hits that
need them (:class:`_Confirmed`).

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

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Literal

from hmem.longterm import fusion as fz
from hmem.longterm._args import dense_where
from hmem.longterm._rank import (
    Scored,
    best_first,
    boosted_scores,
    boosts_read_items,
    demote_questions,
    fusion_rrf,
    fusion_weighted,
    promote_specific,
    question_share,
    session_support,
    specificity,
    to_hits,
)
from hmem.longterm.crosslingual import CHINESE_PROBE, cc_cedict, cross_lingual_terms, holds_chinese
from hmem.longterm.dates import query_period
from hmem.longterm.feedback import SCAN_CHARS, expansion_terms, merge_round, rounds_of
from hmem.longterm.index_text import MAX_INDEX_CHARS, dense_text
from hmem.longterm.keys import SentenceKeyIndex, fold_keys, key_parent
from hmem.longterm.supersede import is_superseded
from hmem.longterm.synonyms import expand_query
from hmem.longterm.types import LongTermConfig
from hmem.protocols import Embedder, ItemFilter, ItemStore, LexicalIndex, ScoredId, VectorIndex
from hmem.types import Hit, MemoryItem

__all__ = ["RecallPorts", "run_recall"]

#: Above this many allowed ids, the dense side filters by ``where`` instead of by ids.
_MAX_ID_FILTER = 20_000
#: A feedback round contrasts its top hits with this many of the previous round's best
#: candidates (the background of :func:`expansion_terms`). 100 or 300 did no better on
#: LoCoMo (docs/longterm.md) and cost more.
_FEEDBACK_BACKGROUND = 30


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
    args: Mapping[str, Any], *, fusion: Literal["rrf", "weighted"], mmr_lambda: float | None,
) -> list[Hit]:
    """The ``k`` best hits for ``query``; ``args`` comes from :func:`check_recall_args`."""
    flt: ItemFilter = args["filter"]
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
    qvec = ports.embedder.embed_query([query])[0]
    dense = _dense(ports.vectors, user_id, qvec, depth, flt=flt, allowed=allowed)
    if ports.keys is not None:
        dense = _with_keys(ports.keys, user_id, qvec, depth, dense, flt=flt, allowed=allowed)
    # Family words in other words ("父母" for "爸妈"): BM25 only (hmem.longterm.synonyms).
    expanded = expand_query(query)
    if config.cross_lingual:
        expanded = _with_translations(ports.lexical, user_id, expanded)
    lexical_query = expanded if len(expanded) <= MAX_INDEX_CHARS else query
    lexical = ports.lexical.search(user_id, lexical_query, depth, allowed_ids=allowed)
    # Recency stays a tie-breaker (a multiplier buries old evidence); a date the question
    # names is a boost for what was said in it or about it.
    period = query_period(query, now.date()) if config.time_weight else None
    eager = boosts_read_items(args["half_life"], args["importance_weight"], period=period,
                              time_weight=config.time_weight)
    valid = _Confirmed(ports.items, user_id, flt, allowed, eager=eager)
    valid.confirm([h.id for h in dense] + [h.id for h in lexical])
    dense = [h for h in dense if h.id in valid]
    lexical = [h for h in lexical if h.id in valid]
    if fusion == "rrf":
        fused = fusion_rrf(lexical, dense, config.rrf_k)
    else:
        fused = fusion_weighted(lexical, dense, config.lexical_weight, config.dense_weight)
    boost = partial(boosted_scores, now=now, half_life=args["half_life"], importance_weight=args["importance_weight"],
                    period=period, time_weight=config.time_weight, said_in_period={})
    scored = boost(fused, valid)
    order = best_first(scored)
    heads, kept = [(1, set(order[:head]))], 1  # each kept round's head: who found what (Hit.round)
    for round_no in range(2, config.feedback_rounds + 1):
        valid.fetch(order[: max(k, _FEEDBACK_BACKGROUND)])  # the leads and background, in one read
        leads = _distinct_sources(order, valid, config.feedback_docs)
        more = _feedback_search(ports, config, user_id, lexical_query, leads=leads, order=order, valid=valid,
                                allowed=allowed, depth=depth, head=head)
        if not more:
            break  # no expansion words, or the search found nothing besides the leads
        merged = merge_round(fused, more, config.feedback_weight, leads=leads,
                             rrf_k=config.rrf_k if fusion == "rrf" else None)
        merged = {d: v for d, v in merged.items() if d in valid}  # drops the unconfirmed (see _feedback_search)
        rescored = boost(merged, valid)
        reordered = best_first(rescored)
        new_head = set(reordered[:head])
        if new_head <= set().union(*(held for _, held in heads)):
            break  # nothing new: this round's re-ranking is not kept, and a next one would repeat it
        fused, scored, order, kept = merged, rescored, reordered, round_no
        heads.append((round_no, new_head))
    # Each reorders the head (its items are read once, by the first) and leaves the rest
    # below it: a step changes the head's order, never who is in it.
    if config.session_weight:
        def support(pool: list[str]) -> list[str]:
            places = {d: (it.session_id, it.created_at) if (it := valid[d]).session_id else None for d in pool}
            return session_support(pool, scored, places, config.session_weight)
        order = _reorder_head(order, valid, head, support)
    if config.question_weight:
        # After session support: a question still tells which session is on the topic,
        # it is only a poor answer.
        def demote(pool: list[str]) -> list[str]:
            shares = {d: question_share(it.text) for d in pool if (it := valid[d]).kind == "turn"}
            return demote_questions(pool, scored, shares, config.question_weight)
        order = _reorder_head(order, valid, head, demote)
    if config.specific_weight:
        def promote(pool: list[str]) -> list[str]:
            texts = [query[:SCAN_CHARS], *(valid[d].text[:SCAN_CHARS] for d in pool)]
            stats = ports.lexical.term_stats(user_id, texts)
            asked = stats.terms[0].keys()
            specific = {d: specificity(terms, stats.documents, asked, config.specific_share)
                        for d, terms in zip(pool, stats.terms[1:], strict=True)}
            return promote_specific(pool, scored, specific, config.specific_weight)
        order = _reorder_head(order, valid, head, promote)
    order = _demote_superseded(order, valid, scored, config.superseded_weight, head)
    if mmr_lambda is not None and order:
        pool = valid.first(order, max(k * 3, 30))
        vecs = dict(zip(pool, ports.embedder.embed([dense_text(valid[d]) for d in pool]), strict=True))
        picked = fz.mmr(pool, {d: scored[d][0] for d in pool}, vecs, k, mmr_lambda)
        for d, mmr_score in picked:
            scored[d][1]["mmr"] = mmr_score
        order = [d for d, _ in picked]
    shown = valid.first(order, k)
    return to_hits(shown, scored, fused, valid, lexical=lexical, dense=dense, rounds=rounds_of(shown, heads, kept))


def _reorder_head(order: Sequence[str], valid: _Confirmed, n: int,
                  reorder: Callable[[list[str]], list[str]]) -> list[str]:
    """``order`` with its first ``n`` readable ids put in the order ``reorder`` gives them."""
    pool = valid.first(order, n)
    head = set(pool)
    return reorder(pool) + [d for d in order if d not in head]


def _demote_superseded(order: Sequence[str], valid: _Confirmed, scored: Scored, weight: float,
                       head: int) -> list[str]:
    """``order`` with superseded items among the first ``head`` scored ``weight`` times lower
    (``boosts["superseded"]``), so the newer version of a claim ranks first. Only the
    head's items are read, plus as many below them as are demoted (they may move up)."""
    shown = valid.first(order, head)
    stale = sum(is_superseded(valid[d]) for d in shown)
    if not stale or weight >= 1.0:
        return list(order)

    def demote(pool: list[str]) -> list[str]:
        for d in pool:
            if is_superseded(valid[d]):
                score, boosts = scored[d]
                scored[d] = (score * weight, {**boosts, "superseded": weight})
        return sorted(pool, key=lambda d: (-scored[d][0], d))
    return _reorder_head(order, valid, head + stale, demote)


def _feedback_search(
    ports: RecallPorts, config: LongTermConfig, user_id: str, query: str, *, leads: Sequence[str],
    order: Sequence[str], valid: _Confirmed, allowed: set[str] | None, depth: int, head: int,
) -> list[tuple[str, float]]:
    """BM25 (id, score) pairs, the ``leads`` left out, for ``query`` expanded by the leads'
    words against the rest of ``order``. Items met for the first time among the round's
    ``head`` best are confirmed and added to ``valid``; the deeper ones are not (the
    caller drops them after normalising): an item the first round did not find starts
    from 0, so it trails the ``head`` above it in this round and cannot reach the head
    (unless a recency or importance boost reorders them)."""
    background = [it.text for d in order[:_FEEDBACK_BACKGROUND]
                  if d not in leads and (it := valid.get(d)) is not None]  # None: deleted meanwhile
    terms = expansion_terms(query, [valid[d].text for d in leads], background, config.feedback_terms)
    if not terms:
        return []
    extra = " ".join(terms)
    expanded = f"{query[: MAX_INDEX_CHARS - len(extra) - 1]} {extra}"
    found = [h for h in ports.lexical.search(user_id, expanded, depth, allowed_ids=allowed) if h.id not in leads]
    valid.confirm(h.id for h in found[:head])
    return [(h.id, h.score) for h in found]


def _distinct_sources(order: Sequence[str], valid: Mapping[str, MemoryItem], n: int) -> list[str]:
    # A fact and the turn it was extracted from say the same thing twice: counting both
    # would double their words' weight and leave one fewer lead.
    out: list[str] = []
    sources: set[str] = set()
    for d in order:
        item = valid.get(d)
        if item is None:
            continue  # deleted since it was confirmed
        source = item.source_message_id or d
        if source not in sources:
            sources.add(source)
            out.append(d)
            if len(out) == n:
                break
    return out


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
) -> list[ScoredId]:
    """``own`` (the dense hits) folded with the nearest sentence keys: keys carry their
    turn's metadata, so the filter's ``where`` holds for them; the allowed ids are
    checked on their turns."""
    found = keys.search(user_id, qvec, depth, where=dense_where(flt) or None)
    if allowed is not None:
        found = [h for h in found if key_parent(h.id) in allowed]
    return fold_keys(own, found)[:depth] if found else own


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
