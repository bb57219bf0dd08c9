"""The durable half of :mod:`hmem.backends.write_behind`: the ``vector_outbox`` table in
hmem's SQLite file, one row per vector not yet in the vector index (newest last); the
index the front needs behind it; and the rebuild area wrapper that tells the front when a
rebuild committed.

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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.protocols import ScoredId, StagedVectors, VectorIndex

__all__ = ["Outbox", "Row", "SearchableIndex", "Stage"]

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

    def clear_through(self, user_id: str, seq: int) -> None:
        """Delete the user's rows up to ``seq`` (they are in the index now)."""
        with self._db.write() as conn:
            conn.execute("DELETE FROM vector_outbox WHERE user_id = ? AND seq <= ?", (user_id, seq))


class SearchableIndex(VectorIndex, Protocol):
    """A vector index with hmem's two batched searches (both of hmem's backends have them)."""

    def query_many(self, user_id: str, vectors: Sequence[Sequence[float]], k: int,
                   where: Mapping[str, Any] | None = None) -> list[list[ScoredId]]: ...

    def query_ids(self, user_id: str, vector: Sequence[float], k: int, ids: Collection[str]) -> list[ScoredId]: ...


class Stage:
    """A wrapped index's rebuild area; ``on_commit`` runs once its commit returned or failed."""

    def __init__(self, inner: StagedVectors, on_commit: Callable[[], None]) -> None:
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
        finally:
            self._on_commit()
