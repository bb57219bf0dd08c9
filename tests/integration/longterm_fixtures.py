"""Shared pieces of the long-term store tests: the real embedding model (loaded once
per test session) and the two backend stacks (all-memory; SQLite + Chroma embedded)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hmem.backends.chroma import ChromaVectorIndex, chroma_persistent_client
from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.items import SqliteItemStore
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.longterm.store import LongTermConfig, LongTermStore
from hmem.providers.embed import CachedEmbedder, MemoryEmbeddingCache, SentenceTransformerEmbedder, SqliteEmbeddingCache


@functools.cache
def real_model() -> SentenceTransformerEmbedder:
    """One model per test process (loading takes seconds; it is read-only after)."""
    return SentenceTransformerEmbedder()


class Clock:
    """A settable clock (the store takes ``clock=``)."""

    def __init__(self) -> None:
        self.now = datetime(2025, 6, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: Any) -> None:
        self.now += timedelta(**kw)


@dataclass
class Stack:
    store: LongTermStore
    embedder: CachedEmbedder
    clock: Clock

    def counts(self, user: str) -> tuple[int, int, int]:
        s = self.store
        return s.items.count(user), s.vectors.count(user), s.lexical.count(user)

    def snapshot(self, user: str) -> tuple[Any, ...]:
        return (tuple(self.store.items.find(user)), self.counts(user))


def make_stack(kind: str, tmp: Path, config: LongTermConfig | None = None) -> Stack:
    clock = Clock()
    if kind == "memory":
        emb = CachedEmbedder(real_model(), MemoryEmbeddingCache())
        store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), emb,
                              config=config, clock=clock)
    else:
        db = SqliteDatabase(tmp / "hmem.db")
        emb = CachedEmbedder(real_model(), SqliteEmbeddingCache(db))
        store = LongTermStore(SqliteItemStore(db), ChromaVectorIndex(chroma_persistent_client(tmp / "chroma")),
                              SqliteLexicalIndex(db), emb, config=config, clock=clock)
    return Stack(store, emb, clock)
