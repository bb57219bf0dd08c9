"""In-process BM25 lexical index: the reference :class:`~hmem.protocols.LexicalIndex`.

Everything lives in this object (one :class:`~hmem.longterm.bm25.Bm25Index` per user)
and is lost when it is garbage-collected; use
:class:`hmem.backends.sqlite.lexical.SqliteLexicalIndex` to persist.

Example::

    >>> idx = MemoryLexicalIndex()
    >>> idx.add("u1", "m1", "I adopted a ginger cat named Mochi")
    >>> idx.add("u1", "m2", "My sister works at a bank in Berlin")
    >>> [hit.id for hit in idx.search("u1", "cats", k=5)]
    ['m1']
    >>> idx.search("u2", "cats", k=5)
    []
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from hmem.longterm.bm25 import Bm25Index, term_counts, term_stats
from hmem.longterm.lexical_checks import check_doc, check_docs, check_index_settings, check_search, check_texts
from hmem.longterm.text import DEFAULT_CJK_MODE, CjkMode, term_set, tokenize
from hmem.protocols import ScoredId, TermStats
from hmem.types import check_id

__all__ = ["MemoryLexicalIndex"]


class MemoryLexicalIndex:
    """BM25Okapi per user, in memory; scores equal ``rank_bm25.BM25Okapi(k1, b, epsilon)``
    on the tokens of :func:`hmem.longterm.text.tokenize` (``stem``, ``cjk``).

    Thread-safe (one lock). Adding an existing doc_id replaces it; removing an unknown
    doc_id is a no-op.
    """

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        *,
        stem: bool = True,
        cjk: CjkMode = DEFAULT_CJK_MODE,
    ) -> None:
        check_index_settings(k1, b, epsilon)
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self._stem, self._cjk = stem, cjk
        self._users: dict[str, Bm25Index] = {}
        self._lock = threading.Lock()

    def _tokens(self, text: str) -> list[str]:
        return tokenize(text, stem=self._stem, cjk=self._cjk)

    def add(self, user_id: str, doc_id: str, text: str) -> None:
        """Index ``text`` as ``doc_id`` of ``user_id`` (replacing an earlier version)."""
        uid, did, txt = check_doc(user_id, doc_id, text)
        self._add_counts(uid, [(did, term_counts(self._tokens(txt)))])

    def add_many(self, user_id: str, docs: Iterable[tuple[str, str]]) -> None:
        """Index a batch of (doc_id, text); all are validated before any is added."""
        uid, pairs = check_docs(user_id, docs)
        self._add_counts(uid, [(did, term_counts(self._tokens(txt))) for did, txt in pairs])

    def _add_counts(self, user_id: str, docs: Sequence[tuple[str, dict[str, int]]]) -> None:
        with self._lock:
            index = self._users.get(user_id)
            if index is None and len(docs) > 1:  # a first batch: the vectorized build
                rows = ((doc_id, list(counts), list(counts.values())) for doc_id, counts in docs)
                self._users[user_id] = Bm25Index.from_docs(rows, self.k1, self.b, self.epsilon)
                return
            if index is None:
                index = self._users[user_id] = Bm25Index(self.k1, self.b, self.epsilon)
            for doc_id, counts in docs:
                index.add(doc_id, counts)

    def remove(self, user_id: str, doc_id: str) -> None:
        """Forget ``doc_id`` (no-op when it is not indexed)."""
        uid, did = check_id(user_id, "user_id"), check_id(doc_id, "doc_id")
        with self._lock:
            index = self._users.get(uid)
            if index is not None:
                index.remove(did)
                if not len(index):
                    del self._users[uid]

    def search(self, user_id: str, query: str, k: int, allowed_ids: set[str] | None = None) -> list[ScoredId]:
        """The ``k`` best documents of ``user_id`` for ``query``, best first.

        Only documents sharing a term with the query are returned, so a query made of
        stopwords or punctuation returns ``[]``. ``allowed_ids`` restricts the result
        to those ids (the statistics stay those of the whole user corpus).
        """
        uid, q, k, allowed = check_search(user_id, query, k, allowed_ids)
        terms = self._tokens(q)
        if not terms:
            return []
        with self._lock:
            index = self._users.get(uid)
            if index is None:
                return []
            return [ScoredId(doc_id, score) for doc_id, score in index.top_k(terms, k, allowed)]

    def term_stats(self, user_id: str, texts: Sequence[str]) -> TermStats:
        """Each text's distinct index terms with the number of ``user_id``'s documents
        holding them (:class:`~hmem.protocols.TermStats`)."""
        uid, batch = check_texts(user_id, texts)
        tokenized = [term_set(t, stem=self._stem, cjk=self._cjk) for t in batch]
        with self._lock:
            return term_stats(self._users.get(uid), tokenized)

    def delete_user(self, user_id: str) -> None:
        """Forget every document of ``user_id``."""
        uid = check_id(user_id, "user_id")
        with self._lock:
            self._users.pop(uid, None)

    def count(self, user_id: str) -> int:
        """How many documents ``user_id`` has indexed."""
        uid = check_id(user_id, "user_id")
        with self._lock:
            index = self._users.get(uid)
            return len(index) if index is not None else 0
