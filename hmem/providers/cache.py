"""Embedding caches: vectors by (model name, sha256 of the text), for
:class:`hmem.providers.embed.CachedEmbedder`.

* :class:`SqliteEmbeddingCache` — float32 blobs in the shared hmem SQLite file
  (survives restarts: a text is never embedded twice);
* :class:`LruEmbeddingCache` — a bounded in-memory layer in front of another cache;
* :class:`MemoryEmbeddingCache` — a plain dict, for tests.

Example::

    >>> lru = LruEmbeddingCache(None, max_entries=1)
    >>> lru.put_many("m", {"h1": [1.0, 0.0]}); lru.put_many("m", {"h2": [0.0, 1.0]})
    >>> sorted(lru.get_many("m", ["h1", "h2"]))  # the least recently used went
    ['h2']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.config import check_cache_size

__all__ = ["EmbeddingCache", "LruEmbeddingCache", "MemoryEmbeddingCache", "SqliteEmbeddingCache"]


class EmbeddingCache(Protocol):
    """Vectors by (model name, sha256 of the text)."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]: ...

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None: ...


class MemoryEmbeddingCache:
    """A dict; for tests and throw-away use."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], list[float]] = {}

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        return {h: self._data[(model, h)] for h in hashes if (model, h) in self._data}

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        for h, v in vectors.items():
            self._data[(model, h)] = list(v)


class LruEmbeddingCache:
    """The ``max_entries`` most recently used vectors in memory (float32: ~1.5 kB for
    384 dimensions), in front of ``backing`` (e.g. :class:`SqliteEmbeddingCache`; None:
    memory only), which still receives every vector. ``max_entries=0``: no memory layer.
    Thread-safe."""

    def __init__(self, backing: EmbeddingCache | None, max_entries: int = 4096) -> None:
        check_cache_size(max_entries)
        self._backing = backing
        self._max = max_entries
        self._data: OrderedDict[tuple[str, str], np.ndarray[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        with self._lock:
            for h in hashes:
                vec = self._data.get((model, h))
                if vec is not None:
                    self._data.move_to_end((model, h))
                    out[h] = vec.tolist()
        missing = [h for h in hashes if h not in out]
        if missing and self._backing is not None:
            found = self._backing.get_many(model, missing)
            self._keep(model, found)
            out.update(found)
        return out

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        if self._backing is not None:
            self._backing.put_many(model, vectors)
        self._keep(model, vectors)

    def _keep(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        if not self._max:
            return
        with self._lock:
            for h, v in vectors.items():
                self._data[(model, h)] = np.asarray(v, dtype=np.float32)
                self._data.move_to_end((model, h))
            while len(self._data) > self._max:
                self._data.popitem(last=False)


class SqliteEmbeddingCache:
    """Vectors as float32 blobs in table ``embedding_cache`` of the shared hmem file."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db
        with db.write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS embedding_cache (model TEXT NOT NULL, text_hash TEXT NOT NULL,"
                " vector BLOB NOT NULL, PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
            )

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(hashes))
        with self._db.read() as conn:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for h, blob in conn.execute(
                    f"SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN ({marks})",
                    (model, *chunk),
                ):
                    out[h] = np.frombuffer(blob, dtype=np.float32).tolist()
        return out

    def put_many(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        if not vectors:
            return
        rows = [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()]
        with self._db.write() as conn:
            conn.executemany("INSERT OR REPLACE INTO embedding_cache (model, text_hash, vector) VALUES (?,?,?)", rows)
