"""The durable half of :mod:`hmem.backends.write_behind`: the ``vector_outbox`` table in
hmem's SQLite file, one row per vector not yet in the vector index (newest last); the
index the front needs behind it, and the guard that keeps it from being read while it is
written; and the rebuild area wrapper that tells the front when a rebuild committed.

Example::

    >>> import numpy as np
    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> box = Outbox(SqliteDatabase(":memory:"))
    >>> box.load()
    {}
    >>> [row.seq for row in box.add("u1", ["a", "b"], np.eye(2, dtype=np.float32), [{}, {"k": 1}])]
    [1, 2]
    >>> box.clear_through("u1", 1); sorted(box.load()["u1"])
    ['b']
    >>> box.clear_through("u1", 2, keep={2}); sorted(box.load()["u1"])  # a refused row stays
    ['b']
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.protocols import ScoredId, StagedVectors, VectorIndex

__all__ = ["Guarded", "Outbox", "ReadWriteLock", "Row", "SearchableIndex", "Stage"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS vector_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    vector BLOB NOT NULL,
    metadata TEXT NOT NULL
)"""


@dataclass(frozen=True, slots=True)
class Row:
    """One pending vector; ``seq`` orders the rows (the newest of an id is the one that counts)."""

    seq: int
    vector: np.ndarray[Any, Any]
    metadata: dict[str, Any]


class Outbox:
    """The ``vector_outbox`` table of ``db``; each call is one transaction."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def load(self) -> dict[str, dict[str, Row]]:
        """Create the table if needed; every row left in it, user -> id -> newest row."""
        with self._db.write() as conn:
            conn.execute(_SCHEMA)
            left = conn.execute("SELECT seq, user_id, item_id, vector, metadata FROM vector_outbox ORDER BY seq"
                                ).fetchall()
        out: dict[str, dict[str, Row]] = {}
        for seq, user_id, item_id, blob, meta in left:
            out.setdefault(user_id, {})[item_id] = Row(seq, np.frombuffer(blob, dtype=np.float32), json.loads(meta))
        return out

    def add(self, user_id: str, ids: Sequence[str], vectors: np.ndarray[Any, Any],
            metadatas: Sequence[Mapping[str, Any]]) -> list[Row]:
        """Write one row per id (float32 vectors, JSON metadata); the rows, with their ``seq``."""
        texts = [json.dumps(dict(m)) for m in metadatas]
        with self._db.write() as conn:
            seqs = [conn.execute("INSERT INTO vector_outbox (user_id, item_id, vector, metadata) VALUES (?, ?, ?, ?)",
                                 (user_id, i, row.astype(np.float32).tobytes(), text)).lastrowid
                    for i, row, text in zip(ids, vectors, texts, strict=True)]
        return [Row(int(seq or 0), row, dict(m)) for row, m, seq in zip(vectors, metadatas, seqs, strict=True)]

    def drop(self, user_id: str, ids: Collection[str]) -> None:
        """Delete every row of these ids of the user."""
        with self._db.write() as conn:
            conn.executemany("DELETE FROM vector_outbox WHERE user_id = ? AND item_id = ?",
                             [(user_id, i) for i in ids])

    def clear_through(self, user_id: str, seq: int, keep: Collection[int] = ()) -> None:
        """Delete the user's rows up to ``seq`` (they are in the index now), but those of
        the ``seq`` numbers in ``keep`` (rows the index refused)."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM vector_outbox WHERE user_id = ? AND seq <= ? "
                         "AND seq NOT IN (SELECT value FROM json_each(?))", (user_id, seq, json.dumps(sorted(keep))))


class SearchableIndex(VectorIndex, Protocol):
    """A vector index with hmem's two batched searches (both of hmem's backends have them)."""

    def query_many(self, user_id: str, vectors: Sequence[Sequence[float]], k: int,
                   where: Mapping[str, Any] | None = None) -> list[list[ScoredId]]: ...

    def query_ids(self, user_id: str, vector: Sequence[float], k: int, ids: Collection[str]) -> list[ScoredId]: ...


class Stage:
    """A wrapped index's rebuild area; ``on_commit(done)`` runs once its commit returned
    (``done`` True) or failed (False)."""

    def __init__(self, inner: StagedVectors, on_commit: Callable[[bool], None]) -> None:
        self._inner = inner
        self._on_commit = on_commit

    def fingerprints(self) -> dict[str, str]:
        return self._inner.fingerprints()

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]], fingerprints: Sequence[str]) -> None:
        self._inner.upsert(ids, vectors, metadatas, fingerprints)

    def delete(self, ids: Sequence[str]) -> None:
        self._inner.delete(ids)

    def commit(self) -> None:
        try:
            self._inner.commit()
        except BaseException:
            self._on_commit(False)
            raise
        self._on_commit(True)


class ReadWriteLock:
    """Many readers at once, or one writer; a waiting writer goes before new readers.
    Not reentrant: a holder must not ask again."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class Guarded:
    """``inner`` whose reads wait while it is written. Why: embedded Chroma fails a query
    that runs while another thread's upsert creates a collection's HNSW files ("Error
    creating hnsw segment reader: Nothing found on disk", seen in hmem's sample eval once
    moves ran in a thread); reads among themselves still run side by side."""

    _READS = frozenset({"query", "query_many", "query_ids", "count", "stamp", "users"})

    def __init__(self, inner: SearchableIndex) -> None:
        self._inner = inner
        self._lock = ReadWriteLock()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._inner, name)
        hold = self._lock.reading if name in self._READS else self._lock.writing

        def call(*args: Any, **kwargs: Any) -> Any:
            with hold():
                return method(*args, **kwargs)

        return call
