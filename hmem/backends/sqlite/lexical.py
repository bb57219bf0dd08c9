"""BM25 lexical index persisted in hmem's shared SQLite file, with an in-process cache.

Tables (all prefixed ``lex_``; see docs/lexical.md):

``lex_docs(user_id, doc_id, terms, tfs)``
    the source of truth: each document's distinct terms (joined by U+001F, which no
    token contains) and their frequencies (int32 little-endian BLOB).
``lex_users(user_id, gen, base_gen, n_docs)``
    per-user generation counter, bumped by every change (never reset, also not by
    ``delete_user``, so it only grows); ``base_gen`` is the oldest generation the
    change log still covers; ``n_docs`` answers ``count`` without loading.
``lex_changes(user_id, gen, doc_id)``
    which doc changed at each generation (a bounded log, pruned to the last
    :data:`CHANGE_LOG_KEEP` entries per user).
``lex_meta(key, value)``
    the tokenizer signature the stored terms were made with.

Queries run on an in-memory :class:`~hmem.longterm.bm25.Bm25Index` per user, loaded on
the user's first query and kept in an LRU of ``max_cached_users``
(:class:`~hmem.backends._lexical_cache.LexicalCache`, shared with the Redis-backed
index). Before every query the user's ``gen`` is read (one primary-key lookup):
equal to the cache's → the cache is current; larger and still covered by the change
log → only the changed documents are re-read; otherwise → the user is reloaded. Writes through
this object update its cache in place. So any number of processes or app instances
sharing the file see each other's writes on their next query.

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> idx = SqliteLexicalIndex(SqliteDatabase(":memory:"))
    >>> idx.add("u1", "m1", "We booked a flight to Lisbon for May")
    >>> idx.add("u1", "m2", "Lunch was ramen again")
    >>> [hit.id for hit in idx.search("u1", "flights Lisbon", k=3)]
    ['m1']
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from hmem.backends._lexical_cache import Counts, LexicalCache, Row
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import ConfigError
from hmem.longterm.bm25 import Bm25Index, term_counts, term_stats
from hmem.longterm.lexical_checks import check_doc, check_docs, check_search, check_texts
from hmem.longterm.text import DEFAULT_CJK_MODE, CjkMode, term_set, tokenize, tokenizer_signature
from hmem.protocols import ScoredId, TermStats
from hmem.types import check_id

__all__ = ["CHANGE_LOG_KEEP", "SqliteLexicalIndex"]

#: Change-log entries kept per user. An instance further behind than this reloads
#: the user's documents instead of replaying changes.
CHANGE_LOG_KEEP = 10_000

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS lex_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lex_users ("
    " user_id TEXT PRIMARY KEY, gen INTEGER NOT NULL, base_gen INTEGER NOT NULL, n_docs INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS lex_docs ("
    " user_id TEXT NOT NULL, doc_id TEXT NOT NULL, terms TEXT NOT NULL, tfs BLOB NOT NULL,"
    " PRIMARY KEY (user_id, doc_id)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS lex_changes ("
    " user_id TEXT NOT NULL, gen INTEGER NOT NULL, doc_id TEXT NOT NULL,"
    " PRIMARY KEY (user_id, gen)) WITHOUT ROWID",
)
_IN_CHUNK = 500  # ids per "IN (...)" query, under SQLite's variable limit
_SEP = "\x1f"  # tokens are letters, digits, apostrophes or CJK: never a control character


def _split_terms(joined: str) -> list[str]:
    return joined.split(_SEP) if joined else []


class SqliteLexicalIndex:
    """BM25Okapi per user persisted in ``db``; scores equal ``rank_bm25.BM25Okapi``.

    ``db`` is the shared :class:`SqliteDatabase` (the caller owns and closes it).
    Thread-safe. Adding an existing doc_id replaces it; removing an unknown doc_id
    is a no-op. Raises :class:`ConfigError` when the file's terms were made by a
    different tokenizer setting (e.g. stemming on vs off): re-index, or use the
    same ``stem``/``cjk``.
    """

    def __init__(
        self,
        db: SqliteDatabase,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        *,
        stem: bool = True,
        cjk: CjkMode = DEFAULT_CJK_MODE,
        max_cached_users: int = 64,
        change_log_keep: int = CHANGE_LOG_KEEP,
    ) -> None:
        self._cache = LexicalCache(k1, b, epsilon, max_users=max_cached_users)
        if isinstance(change_log_keep, bool) or not isinstance(change_log_keep, int) or change_log_keep < 1:
            raise ConfigError(f"change_log_keep must be a positive integer, got {change_log_keep!r}")
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self._keep = change_log_keep
        self._db = db
        self._stem, self._cjk = stem, cjk
        # The cache's lock is always taken before any database access, so this object
        # never holds the database while waiting for itself (no lock-order inversion).
        self._lock = self._cache.lock
        self._init_schema(tokenizer_signature(stem=stem, cjk=cjk))

    def _init_schema(self, signature: str) -> None:
        with self._db.write() as conn:
            for statement in _SCHEMA:
                conn.execute(statement)
            row = conn.execute("SELECT value FROM lex_meta WHERE key = 'tokenizer'").fetchone()
            has_docs = conn.execute("SELECT 1 FROM lex_docs LIMIT 1").fetchone() is not None
            if row is not None and row[0] != signature and has_docs:
                raise ConfigError(
                    f"the lexical index in {self._db.path} was built with tokenizer {row[0]!r}, "
                    f"but this one is {signature!r}. Open it with the same stem/cjk settings (and "
                    "install PyStemmer if stemming was on), or rebuild it: delete_user() and add the documents again."
                )
            conn.execute("INSERT OR REPLACE INTO lex_meta (key, value) VALUES ('tokenizer', ?)", (signature,))

    def _tokens(self, text: str) -> list[str]:
        return tokenize(text, stem=self._stem, cjk=self._cjk)

    # -- writes ------------------------------------------------------------------------

    def add(self, user_id: str, doc_id: str, text: str) -> None:
        """Index ``text`` as ``doc_id`` of ``user_id`` (replacing an earlier version);
        committed when this returns."""
        uid, did, txt = check_doc(user_id, doc_id, text)
        self._write_docs(uid, [(did, term_counts(self._tokens(txt)))])

    def add_many(self, user_id: str, docs: Iterable[tuple[str, str]]) -> None:
        """Index a batch of (doc_id, text) in one transaction (all validated first)."""
        uid, pairs = check_docs(user_id, docs)
        if pairs:
            self._write_docs(uid, [(did, term_counts(self._tokens(txt))) for did, txt in pairs])

    def _write_docs(self, user_id: str, docs: Sequence[tuple[str, dict[str, int]]]) -> None:
        with self._lock:
            with self._db.write() as conn:
                old_gen, base_gen, n_docs = _user_row(conn, user_id)
                gen = old_gen
                for doc_id, counts in docs:
                    existed = conn.execute(
                        "SELECT 1 FROM lex_docs WHERE user_id = ? AND doc_id = ?", (user_id, doc_id)
                    ).fetchone()
                    conn.execute(
                        "INSERT OR REPLACE INTO lex_docs (user_id, doc_id, terms, tfs) VALUES (?, ?, ?, ?)",
                        (user_id, doc_id, _SEP.join(counts), np.fromiter(counts.values(), "<i4").tobytes()),
                    )
                    n_docs += existed is None
                    gen += 1
                    conn.execute(
                        "INSERT INTO lex_changes (user_id, gen, doc_id) VALUES (?, ?, ?)", (user_id, gen, doc_id)
                    )
                base_gen = _prune_log(conn, user_id, gen, base_gen, self._keep)
                _save_user_row(conn, user_id, gen, base_gen, n_docs)
            self._cache.apply(user_id, docs, from_gen=old_gen, to_gen=gen)

    def remove(self, user_id: str, doc_id: str) -> None:
        """Forget ``doc_id`` (no-op when it is not indexed)."""
        uid, did = check_id(user_id, "user_id"), check_id(doc_id, "doc_id")
        with self._lock:
            with self._db.write() as conn:
                old_gen, base_gen, n_docs = _user_row(conn, uid)
                gone = conn.execute("DELETE FROM lex_docs WHERE user_id = ? AND doc_id = ?", (uid, did)).rowcount
                if not gone:
                    return
                gen = old_gen + 1
                conn.execute("INSERT INTO lex_changes (user_id, gen, doc_id) VALUES (?, ?, ?)", (uid, gen, did))
                base_gen = _prune_log(conn, uid, gen, base_gen, self._keep)
                _save_user_row(conn, uid, gen, base_gen, n_docs - 1)
            self._cache.apply(uid, [(did, None)], from_gen=old_gen, to_gen=gen)

    def delete_user(self, user_id: str) -> None:
        """Forget every document of ``user_id``. A row with the user's generation stays
        behind so other instances notice the deletion (generations never go back)."""
        uid = check_id(user_id, "user_id")
        with self._lock:
            with self._db.write() as conn:
                gen, _, _ = _user_row(conn, uid)
                conn.execute("DELETE FROM lex_docs WHERE user_id = ?", (uid,))
                conn.execute("DELETE FROM lex_changes WHERE user_id = ?", (uid,))
                # base_gen = gen + 1: the change log cannot bring any cache up to date.
                _save_user_row(conn, uid, gen + 1, gen + 1, 0)
            self._cache.drop(uid)

    # -- reads -------------------------------------------------------------------------

    def search(self, user_id: str, query: str, k: int, allowed_ids: set[str] | None = None) -> list[ScoredId]:
        """The ``k`` best documents of ``user_id`` for ``query``, best first; includes
        every write committed before the call, by any process sharing the file.

        Only documents sharing a term with the query are returned (a query of
        stopwords returns ``[]``); ``allowed_ids`` restricts the result to those ids.
        """
        uid, q, k, allowed = check_search(user_id, query, k, allowed_ids)
        terms = self._tokens(q)
        if not terms:
            return []
        with self._lock:
            index = self._current_index(uid)
            if index is None:
                return []
            return [ScoredId(doc_id, score) for doc_id, score in index.top_k(terms, k, allowed)]

    def term_stats(self, user_id: str, texts: Sequence[str]) -> TermStats:
        """Each text's distinct index terms with the number of ``user_id``'s documents
        holding them (:class:`~hmem.protocols.TermStats`), as of every committed write."""
        uid, batch = check_texts(user_id, texts)
        tokenized = [term_set(t, stem=self._stem, cjk=self._cjk) for t in batch]
        with self._lock:
            return term_stats(self._current_index(uid), tokenized)

    def count(self, user_id: str) -> int:
        """How many documents ``user_id`` has indexed (read from the file, not the cache)."""
        uid = check_id(user_id, "user_id")
        with self._lock, self._db.read() as conn:
            row = conn.execute("SELECT n_docs FROM lex_users WHERE user_id = ?", (uid,)).fetchone()
        return int(row[0]) if row is not None else 0

    def cached_users(self) -> list[str]:
        """Users whose index is in this object's memory, least recently used first."""
        return self._cache.users()

    def _current_index(self, user_id: str) -> Bm25Index | None:
        with self._snapshot() as conn:
            row = conn.execute("SELECT gen, base_gen, n_docs FROM lex_users WHERE user_id = ?", (user_id,)).fetchone()
            if row is None or row[2] == 0:
                self._cache.drop(user_id)
                return None
            gen, base_gen, _ = row

            def changes(since: int) -> tuple[int, list[str]] | None:
                if not base_gen <= since < gen:
                    return None
                changed = conn.execute(
                    "SELECT DISTINCT doc_id FROM lex_changes WHERE user_id = ? AND gen > ? AND gen <= ?",
                    (user_id, since, gen),
                )
                return gen, [r[0] for r in changed]

            return self._cache.index(
                user_id, gen, changes=changes, fetch=lambda ids: self._fetch(conn, user_id, ids),
                load=lambda: (gen, self._rows(conn, user_id)),
            )

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        # One read transaction: the generation and the documents read under it are
        # from the same committed state (WAL snapshot), even while others write.
        with self._db.read() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    @staticmethod
    def _rows(conn: sqlite3.Connection, user_id: str) -> Iterator[Row]:
        rows = conn.execute("SELECT doc_id, terms, tfs FROM lex_docs WHERE user_id = ?", (user_id,))
        return ((d, _split_terms(t), np.frombuffer(f, "<i4")) for d, t, f in rows)

    @staticmethod
    def _fetch(conn: sqlite3.Connection, user_id: str, ids: list[str]) -> dict[str, Counts]:
        current: dict[str, Counts] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            for doc_id, terms, tfs in conn.execute(
                f"SELECT doc_id, terms, tfs FROM lex_docs WHERE user_id = ? AND doc_id IN ({marks})", (user_id, *chunk)
            ):
                current[doc_id] = dict(zip(_split_terms(terms), np.frombuffer(tfs, "<i4").tolist(), strict=True))
        return current


def _user_row(conn: sqlite3.Connection, user_id: str) -> tuple[int, int, int]:
    row = conn.execute("SELECT gen, base_gen, n_docs FROM lex_users WHERE user_id = ?", (user_id,)).fetchone()
    return (int(row[0]), int(row[1]), int(row[2])) if row is not None else (0, 0, 0)


def _save_user_row(conn: sqlite3.Connection, user_id: str, gen: int, base_gen: int, n_docs: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO lex_users (user_id, gen, base_gen, n_docs) VALUES (?, ?, ?, ?)",
        (user_id, gen, base_gen, n_docs),
    )


def _prune_log(conn: sqlite3.Connection, user_id: str, gen: int, base_gen: int, keep: int) -> int:
    # Prune in steps (not on every write) so the log costs O(1) amortized per change.
    if gen - base_gen <= 2 * keep:
        return base_gen
    new_base = gen - keep
    conn.execute("DELETE FROM lex_changes WHERE user_id = ? AND gen <= ?", (user_id, new_base))
    return new_base
