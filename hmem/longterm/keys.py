"""Sentence keys: each archived turn of several sentences is also found by its sentences.

One embedding of a whole turn averages it: "Wow, Caroline! That's great! I just signed up
for a pottery class yesterday. It's like therapy for me … Have you tried it?" lies
between its sentences, and a question about Melanie's activities is far from all of them
on average. So besides the turn's own vector, each of its sentences is embedded as a key
of its own (:func:`hmem.longterm.index_text.sentence_keys`) in a second vector index, and
a turn's dense score becomes the mean of its own cosine and the best of it and its keys'
(:func:`fold_keys`). The text shown and BM25's key are unchanged (what it measured:
docs/longterm.md, "Sentence keys").

:class:`SentenceKeyIndex` is the port :class:`~hmem.longterm.store.LongTermStore`
writes keys through; :class:`InlineSentenceKeys` is its reference implementation (keys
embedded and written at once, in the caller's thread). The one hmem builds by default
writes them behind the add, durably (:mod:`hmem.backends.sentence_keys`). A key's id is
its turn's id, ``#k`` and its number; its metadata is the turn's, so ``where`` filters
hold for keys too.

Example::

    >>> from hmem.protocols import ScoredId
    >>> fold_keys([ScoredId("t1", 0.5), ScoredId("t2", 0.4)], [ScoredId("t2#k1", 0.8)])
    [ScoredId(id='t2', score=0.6000000000000001), ScoredId(id='t1', score=0.5)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from hmem.longterm._args import index_metadata
from hmem.longterm._stamps import wanted_stamp
from hmem.longterm.index_text import MAX_SENTENCE_KEYS, sentence_keys
from hmem.protocols import Embedder, ScoredId, VectorIndex
from hmem.types import MAX_ID_CHARS, MemoryItem

__all__ = [
    "KEY_SEPARATOR", "InlineSentenceKeys", "KeyJob", "SentenceKeyIndex", "fold_keys", "key_ids", "key_jobs",
    "key_parent", "nearest_keys", "settle_stamp", "submit_turns", "write_keys",
]

#: Between a turn's id and the number of one of its keys.
KEY_SEPARATOR = "#k"

#: One turn's keys to write: (turn id, key texts, the turn's index metadata).
KeyJob = tuple[str, list[str], dict[str, Any]]


def key_ids(item_id: str, n: int = MAX_SENTENCE_KEYS) -> list[str]:
    """The ids of an item's first ``n`` keys (all it can have, by default).

    >>> key_ids("a1", 2)
    ['a1#k0', 'a1#k1']
    """
    return [f"{item_id}{KEY_SEPARATOR}{i}" for i in range(n)]


def key_parent(key_id: str) -> str:
    """The item id a key belongs to.

    >>> key_parent("u1:t#3#k0")
    'u1:t#3'
    """
    return key_id.rpartition(KEY_SEPARATOR)[0] or key_id


def key_jobs(items: Sequence[MemoryItem]) -> list[KeyJob]:
    """The keys to write for ``items``: turns of two or more sentences only (and whose
    key ids fit the id limit: hmem's own ids always do; a restored one may not)."""
    room = MAX_ID_CHARS - len(KEY_SEPARATOR) - len(str(MAX_SENTENCE_KEYS - 1))
    return [(it.id, texts, index_metadata(it)) for it in items if len(it.id) <= room and (texts := sentence_keys(it))]


def fold_keys(own: Sequence[ScoredId], keys: Sequence[ScoredId]) -> list[ScoredId]:
    """Dense hits after sentence keys, best first: an item's score becomes
    ``(own + max(own, best key)) / 2`` (unchanged without keys). A key's turn that is not
    among ``own`` (the nearest vectors returned) is at most as near as the last of them,
    so that bound stands in for its own cosine. Pure.

    >>> fold_keys([ScoredId("a", 0.6)], [ScoredId("b#k0", 0.9), ScoredId("b#k1", 0.7)])
    [ScoredId(id='b', score=0.75), ScoredId(id='a', score=0.6)]
    """
    best: dict[str, float] = {}
    for hit in keys:
        parent = key_parent(hit.id)
        if hit.score > best.get(parent, float("-inf")):
            best[parent] = hit.score
    scores = {h.id: h.score for h in own}
    floor = min(scores.values()) if scores else None
    for parent, key in best.items():
        mine = scores.get(parent)
        if mine is None:
            mine = key if floor is None else min(floor, key)
        scores[parent] = (mine + max(mine, key)) / 2
    return [ScoredId(d, s) for d, s in sorted(scores.items(), key=lambda p: (-p[1], p[0]))]


def nearest_keys(keys: Sequence[ScoredId]) -> dict[str, int]:
    """Per turn, the number of its key scoring best among ``keys``. Pure.

    >>> nearest_keys([ScoredId("b#k1", 0.9), ScoredId("b#k0", 0.7), ScoredId("a#k2", 0.5)])
    {'b': 1, 'a': 2}
    """
    best: dict[str, tuple[float, int]] = {}
    for hit in keys:
        parent, _, number = hit.id.rpartition(KEY_SEPARATOR)
        if parent and number.isdigit() and hit.score > best.get(parent, (float("-inf"), 0))[0]:
            best[parent] = (hit.score, int(number))
    return {parent: number for parent, (_, number) in best.items()}


def settle_stamp(index: VectorIndex, embedder: Embedder, user_id: str) -> None:
    """Before writing keys: a user's keys index holds one embedder's vectors. Keys of
    another embedder (left from before a switch) are dropped, then the index is stamped."""
    want = wanted_stamp(embedder)
    have = index.stamp(user_id)
    if have == want:
        return
    if have is not None:
        index.delete_user(user_id)
    index.set_stamp(user_id, want)


def write_keys(index: VectorIndex, embedder: Embedder, user_id: str, jobs: Sequence[KeyJob]) -> None:
    """Embed ``jobs``' key texts in one call and write them to ``index`` (stamped first);
    a turn's spare keys (it had more sentences before it was rewritten) are dropped."""
    if not jobs:
        return
    vectors = embedder.embed([t for _, texts, _ in jobs for t in texts])
    settle_stamp(index, embedder, user_id)
    index.delete(user_id, [kid for item_id, texts, _ in jobs for kid in key_ids(item_id)[len(texts):]])
    index.upsert(user_id, [kid for item_id, texts, _ in jobs for kid in key_ids(item_id, len(texts))], vectors,
                 [meta for _, texts, meta in jobs for _ in texts])


def submit_turns(keys: SentenceKeyIndex | None, user_id: str, written: Sequence[MemoryItem]) -> None:
    """Hand the turns among ``written`` to ``keys`` (nothing without keys or turns)."""
    turns = [it for it in written if it.kind == "turn"]
    if keys is not None and turns:
        keys.submit(user_id, turns)


@runtime_checkable
class SentenceKeyIndex(Protocol):
    """Where a :class:`~hmem.longterm.store.LongTermStore` keeps its turns' sentence keys."""

    def submit(self, user_id: str, items: Sequence[MemoryItem]) -> None:
        """Index the sentence keys of ``items`` (written or rewritten turns; other items and
        one-sentence turns have none). May return before they are searchable."""

    def search(self, user_id: str, vector: Sequence[float], k: int,
               where: Mapping[str, Any] | None = None) -> list[ScoredId]:
        """The ``k`` nearest keys (ids from :func:`key_ids`); none while the user's keys are
        of another embedder than the store's (``hmem reindex`` rebuilds them)."""

    def forget(self, user_id: str, ids: Sequence[str]) -> None:
        """Drop every key of these items, written or still waiting."""

    def delete_user(self, user_id: str) -> None:
        """Drop every key of the user, written or still waiting."""

    def flush(self, timeout: float | None = 60.0) -> bool:
        """Wait until every submitted key is searchable; True if they are."""

    def waiting(self, user_id: str) -> int:
        """How many of the user's turns wait for their keys to be built (0 when
        :meth:`submit` builds them before it returns)."""


class InlineSentenceKeys:
    """The reference :class:`SentenceKeyIndex`: keys embedded by ``embedder`` and written
    to ``index`` in the caller's thread (a second :class:`~hmem.protocols.VectorIndex`,
    never the one holding the items' own vectors).

    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.providers.onnx import OnnxMiniLMEmbedder
    >>> keys = InlineSentenceKeys(MemoryVectorIndex(), OnnxMiniLMEmbedder())
    >>> it = MemoryItem(id="t1", user_id="u1", kind="turn", speaker="Mel",
    ...                 text="Hi! Great news. I signed up for a pottery class.")
    >>> keys.submit("u1", [it])                                        # doctest: +SKIP
    >>> [h.id for h in keys.search("u1", OnnxMiniLMEmbedder().embed_query(["pottery"])[0], 1)]  # doctest: +SKIP
    ['t1#k1']
    """

    def __init__(self, index: VectorIndex, embedder: Embedder) -> None:
        self.index = index
        self._embedder = embedder

    def submit(self, user_id: str, items: Sequence[MemoryItem]) -> None:
        write_keys(self.index, self._embedder, user_id, key_jobs(items))

    def search(self, user_id: str, vector: Sequence[float], k: int,
               where: Mapping[str, Any] | None = None) -> list[ScoredId]:
        if self.index.stamp(user_id) != wanted_stamp(self._embedder):
            return []
        return self.index.query(user_id, vector, k, where=where)

    def forget(self, user_id: str, ids: Sequence[str]) -> None:
        self.index.delete(user_id, [kid for item_id in ids for kid in key_ids(item_id)])

    def delete_user(self, user_id: str) -> None:
        self.index.delete_user(user_id)

    def flush(self, timeout: float | None = 60.0) -> bool:
        return True

    def waiting(self, user_id: str) -> int:
        return 0
