"""The per-user BM25 cache with generations, shared by the lexical indexes whose truth
lives elsewhere (:class:`~hmem.backends.sqlite.lexical.SqliteLexicalIndex`: tables in
the SQLite file; :class:`~hmem.backends.redis.lexical.SharedLexicalIndex`: the Redis
item store).

Each cached user is a :class:`~hmem.longterm.bm25.Bm25Index` stamped with the
**generation** of the truth it reflects. The truth moves its generation in the same
atomic write that changes the documents, so before a query the owner reads the
current generation and :meth:`LexicalCache.index` brings the user up to it:

* equal → the cache is current;
* different and still covered by the truth's change log → only the changed
  documents are re-read (a *catch-up*);
* otherwise (first query, log pruned, user deleted) → the user is rebuilt from a
  consistent snapshot (a *rebuild*).

At most ``max_users`` users stay cached; the least recently used are dropped and
rebuilt on demand. The owner supplies the I/O as three callables; the cache only
decides and keeps indexes.

Example::

    >>> cache = LexicalCache(max_users=2)
    >>> docs = {"a": {"red": 1, "apple": 1}}
    >>> index = cache.index("u1", 1, changes=lambda since: None, fetch=lambda ids: {},
    ...                     load=lambda: (1, [(d, list(c), list(c.values())) for d, c in docs.items()]))
    >>> [doc for doc, _ in index.top_k(["apple"], 5)], cache.rebuilds
    (['a'], 1)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hmem.longterm.bm25 import Bm25Index
from hmem.longterm.lexical_checks import check_index_settings

__all__ = ["Changes", "Counts", "LexicalCache", "Row"]

#: A document as term → frequency.
Counts = Mapping[str, int]
#: A document as ``Bm25Index.from_docs`` reads it: (doc_id, distinct terms, their frequencies).
Row = tuple[str, Sequence[str], Sequence[int] | npt.NDArray[np.int32]]
#: ``changes(since)``: ``(generation now, ids changed after since)``, or ``None`` when the
#: change log no longer reaches back to ``since`` (rebuild instead).
Changes = Callable[[int], tuple[int, Iterable[str]] | None]


@dataclass
class _Cached:
    index: Bm25Index
    gen: int


class LexicalCache:
    """Generation-stamped BM25 indexes per user, least recently used dropped first.
    Bad BM25 parameters or ``max_users`` raise :class:`~hmem.errors.ConfigError`.

    Thread-safe through :attr:`lock` (re-entrant): an owner that must order its own
    I/O with the cache (SQLite: the lock before the database) holds it around both.
    ``rebuilds`` and ``catch_ups`` count the two ways of catching up (tests, monitoring).
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25, *, max_users: int = 64) -> None:
        check_index_settings(k1, b, epsilon, max_cached_users=max_users)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.max_users = max_users
        self.lock = threading.RLock()
        self._users: OrderedDict[str, _Cached] = OrderedDict()
        self.rebuilds = 0
        self.catch_ups = 0

    def index(
        self,
        user_id: str,
        gen: int,
        *,
        changes: Changes,
        fetch: Callable[[list[str]], Mapping[str, Counts]],
        load: Callable[[], tuple[int, Iterable[Row]]],
    ) -> Bm25Index:
        """The user's index brought up to the truth's generation ``gen``.

        ``fetch(ids)`` returns the current counts of those of ``ids`` that still
        exist (a missing id was deleted); ``load()`` returns a snapshot ``(gen, rows)``
        of the whole user. Documents read may be newer than the generation they are
        stamped with: re-indexing them on the next catch-up is harmless, and nothing
        older can be missed.
        """
        with self.lock:
            cached = self._users.get(user_id)
            if cached is None or cached.gen != gen:
                delta = None if cached is None else changes(cached.gen)
                if cached is not None and delta is not None:
                    new_gen, changed = delta
                    ids = sorted(set(changed))
                    current = fetch(ids)
                    self._apply(cached.index, [(doc_id, current.get(doc_id)) for doc_id in ids])
                    cached.gen = new_gen
                    self.catch_ups += 1
                else:
                    new_gen, rows = load()
                    cached = self._users[user_id] = _Cached(
                        Bm25Index.from_docs(rows, self.k1, self.b, self.epsilon), new_gen
                    )
                    self.rebuilds += 1
            self._users.move_to_end(user_id)
            while len(self._users) > self.max_users:
                self._users.popitem(last=False)
            return cached.index

    def apply(
        self,
        user_id: str,
        docs: Sequence[tuple[str, Counts | None]],
        *,
        from_gen: int | None = None,
        to_gen: int | None = None,
    ) -> None:
        """Apply this process's own write (``None`` counts = removed) to a cached user.

        With ``from_gen`` the write is applied only when the cache is exactly at that
        generation, and the cache moves to ``to_gen``; otherwise another writer came
        in between and the next :meth:`index` catches up. Without it the write is
        applied and the generation kept, so the next catch-up re-reads these
        documents too (idempotent). An uncached user is left to its next load.
        """
        with self.lock:
            cached = self._users.get(user_id)
            if cached is None or (from_gen is not None and cached.gen != from_gen):
                return
            self._apply(cached.index, docs)
            if to_gen is not None:
                cached.gen = to_gen

    def drop(self, user_id: str) -> None:
        """Forget the user's index (the next :meth:`index` loads it again)."""
        with self.lock:
            self._users.pop(user_id, None)

    def users(self) -> list[str]:
        """Cached users, least recently used first."""
        with self.lock:
            return list(self._users)

    @staticmethod
    def _apply(index: Bm25Index, docs: Iterable[tuple[str, Counts | None]]) -> None:
        for doc_id, counts in docs:
            if counts is None:
                index.remove(doc_id)
            else:
                index.add(doc_id, counts)
