"""A BM25 :class:`~hmem.protocols.LexicalIndex` kept in process, derived from a shared
item store — so app instances on different hosts search the same documents.

The item store (e.g. :class:`~hmem.backends.redis.items.RedisItemStore`) is the one
shared truth; every instance keeps its own :class:`~hmem.longterm.bm25.Bm25Index` per user,
built from the store's items with the same text :class:`~hmem.longterm.store.LongTermStore`
indexes (:func:`hmem.longterm.index_text.lexical_text`). Before every query the user's
**generation** is read (one round trip): equal to the cache's → the cache is current;
different and still covered by the store's change log → only the changed items are
re-read and re-indexed; otherwise (first query, log pruned, ``delete_user``) → the user
is rebuilt from a consistent snapshot (O(user's items)). That cache is
:class:`~hmem.backends._lexical_cache.LexicalCache`, the same one the SQLite index uses;
this class only reads the item store.

Why this is never silently stale: the store moves the generation *in the same atomic
write* that changes the items, and LongTermStore writes the item store before any
index (deletes too). So once a write is acknowledged, any query that starts later, on
any instance, sees a new generation and catches up before searching. ``add`` /
``remove`` also apply to this instance's cache at once (they do not advance the cache's
generation, so the catch-up still re-reads those items: idempotent); they are a view
of the store, so a document whose item is not in the store disappears on the next
rebuild. See docs/longterm.md, "Several app instances".

Example::

    from hmem.backends.redis.client import connect_redis
    from hmem.backends.redis.items import RedisItemStore
    items = RedisItemStore(connect_redis("redis://127.0.0.1:6379/0"))
    lexical = SharedLexicalIndex(items)
    items.put([MemoryItem(id="i1", user_id="u1", text="We booked a flight to Lisbon")])
    [h.id for h in lexical.search("u1", "flights Lisbon", k=3)]    # ['i1']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from hmem.backends._lexical_cache import Counts, LexicalCache, Row
from hmem.longterm.bm25 import Bm25Index, term_counts, term_stats
from hmem.longterm.index_text import lexical_text
from hmem.longterm.lexical_checks import check_doc, check_docs, check_search, check_texts
from hmem.longterm.text import DEFAULT_CJK_MODE, CjkMode, term_set, tokenize
from hmem.protocols import ScoredId, TermStats
from hmem.types import MemoryItem, check_id

__all__ = ["ItemChangeFeed", "SharedLexicalIndex"]


@runtime_checkable
class ItemChangeFeed(Protocol):
    """What :class:`SharedLexicalIndex` needs of an item store (RedisItemStore has it)."""

    def generation(self, user_id: str) -> int: ...

    def snapshot(self, user_id: str) -> tuple[int, list[MemoryItem]]: ...

    def changes_since(self, user_id: str, generation: int) -> tuple[int, set[str]] | None: ...

    def get(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryItem]: ...


class SharedLexicalIndex:
    """BM25Okapi per user over ``items``' documents (scores equal MemoryLexicalIndex's
    on the same texts). Thread-safe (one lock); keeps at most ``max_cached_users``
    users in memory (least recently searched are dropped and rebuilt on demand).

    ``text_of`` must be the function whose output the writer passes to ``add``
    (LongTermStore: :func:`~hmem.longterm.index_text.lexical_text`).
    """

    def __init__(
        self,
        items: ItemChangeFeed,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        *,
        text_of: Callable[[MemoryItem], str] = lexical_text,
        stem: bool = True,
        cjk: CjkMode = DEFAULT_CJK_MODE,
        max_cached_users: int = 64,
    ) -> None:
        self._cache = LexicalCache(k1, b, epsilon, max_users=max_cached_users)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self._items = items
        self._text_of = text_of
        self._stem, self._cjk = stem, cjk

    @property
    def rebuilds(self) -> int:
        """Full rebuilds of a user from the item store so far (tests, monitoring)."""
        return self._cache.rebuilds

    @property
    def catch_ups(self) -> int:
        """Incremental catch-ups from the store's change log so far."""
        return self._cache.catch_ups

    def _counts(self, text: str) -> dict[str, int]:
        return term_counts(tokenize(text, stem=self._stem, cjk=self._cjk))

    # -- writes (local; the item store already holds the truth) -------------------------

    def add(self, user_id: str, doc_id: str, text: str) -> None:
        """Index ``text`` as ``doc_id`` in this instance's cache (if the user is cached)."""
        uid, did, txt = check_doc(user_id, doc_id, text)
        self._cache.apply(uid, [(did, self._counts(txt))])

    def add_many(self, user_id: str, docs: Iterable[tuple[str, str]]) -> None:
        """Index a batch of (doc_id, text) in this instance's cache (all validated first)."""
        uid, pairs = check_docs(user_id, docs)
        self._cache.apply(uid, [(did, self._counts(txt)) for did, txt in pairs])

    def remove(self, user_id: str, doc_id: str) -> None:
        """Drop ``doc_id`` from this instance's cache (no-op when absent)."""
        uid, did = check_id(user_id, "user_id"), check_id(doc_id, "doc_id")
        self._cache.apply(uid, [(did, None)])

    def delete_user(self, user_id: str) -> None:
        """Drop the user's cache (the next query rebuilds it from the item store)."""
        self._cache.drop(check_id(user_id, "user_id"))

    # -- reads ---------------------------------------------------------------------------

    def search(self, user_id: str, query: str, k: int, allowed_ids: set[str] | None = None) -> list[ScoredId]:
        """The ``k`` best documents of ``user_id`` for ``query``, best first; includes
        every item write acknowledged before the call, by any instance."""
        uid, q, k, allowed = check_search(user_id, query, k, allowed_ids)
        terms = tokenize(q, stem=self._stem, cjk=self._cjk)
        if not terms:
            return []
        with self._cache.lock:
            index = self._current(uid)
            return [ScoredId(doc_id, score) for doc_id, score in index.top_k(terms, k, allowed)]

    def term_stats(self, user_id: str, texts: Sequence[str]) -> TermStats:
        """Each text's distinct index terms with the number of the user's documents
        holding them (:class:`~hmem.protocols.TermStats`), after catching up with the store."""
        uid, batch = check_texts(user_id, texts)
        tokenized = [term_set(t, stem=self._stem, cjk=self._cjk) for t in batch]
        with self._cache.lock:
            return term_stats(self._current(uid), tokenized)

    def count(self, user_id: str) -> int:
        """How many documents the user has (after catching up with the store)."""
        uid = check_id(user_id, "user_id")
        with self._cache.lock:
            return len(self._current(uid))

    def cached_users(self) -> list[str]:
        """Users whose index is in memory, least recently used first."""
        return self._cache.users()

    def _current(self, user_id: str) -> Bm25Index:
        def fetch(ids: list[str]) -> dict[str, Counts]:
            return {doc_id: self._counts(self._text_of(it)) for doc_id, it in self._items.get(user_id, ids).items()}

        def load() -> tuple[int, list[Row]]:
            gen, items = self._items.snapshot(user_id)
            rows: list[Row] = []
            for it in items:
                counts = self._counts(self._text_of(it))
                rows.append((it.id, list(counts), list(counts.values())))
            return gen, rows

        return self._cache.index(
            user_id, self._items.generation(user_id),
            changes=lambda since: self._items.changes_since(user_id, since), fetch=fetch, load=load,
        )
