"""``AsyncMemory``: the :class:`~hmem.memory.Memory` API for asyncio code.

A thin wrapper, not a copy of the logic: every method runs the synchronous one in
a worker thread (:func:`asyncio.to_thread`), so the event loop never blocks on
SQLite, Redis, Chroma or the embedding model. Each method is written out with the
same parameters and return type as the synchronous one (a test compares the
signatures), so type checkers and editors see the real API.

Example::

    mem = AsyncMemory(Memory.open("./hmem-data"))
    await mem.add("u1", "s1", [{"role": "user", "content": "hi"}])
    ctx = await mem.context("u1", "s1")
    await mem.profile.set("u1", "city", "Paris")
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from hmem.memory import Memory

if TYPE_CHECKING:
    from hmem._options import When
    from hmem._readiness import BackendReady
    from hmem.assembly.assemble import TierCaps
    from hmem.assembly.render import ContextTemplate
    from hmem.config import Settings
    from hmem.longterm.types import RememberResult
    from hmem.memory import AddResult, MemoryOptions
    from hmem.protocols import LLM, Embedder, ProfileStore, VectorIndex
    from hmem.types import (
        AssembledContext,
        Hit,
        MemoryItem,
        Message,
        ProfileEntry,
        ProfileValue,
        Provenance,
        SessionInfo,
        SessionSummary,
    )

__all__ = ["AsyncMemory", "AsyncProfile"]

_run = asyncio.to_thread


class AsyncProfile:
    """Async view of a :class:`~hmem.protocols.ProfileStore` (same methods, awaited)."""

    def __init__(self, store: ProfileStore) -> None:
        self._store = store

    async def set(
        self,
        user_id: str,
        key: str,
        value: ProfileValue,
        *,
        provenance: Provenance | None = None,
        confidence: float = 1.0,
        at: datetime | None = None,
    ) -> ProfileEntry:
        return await _run(self._store.set, user_id, key, value, provenance=provenance, confidence=confidence, at=at)

    async def get(self, user_id: str, key: str) -> ProfileEntry | None:
        return await _run(self._store.get, user_id, key)

    async def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        return await _run(self._store.delete, user_id, key, provenance=provenance)

    async def all(self, user_id: str) -> list[ProfileEntry]:
        return await _run(self._store.all, user_id)

    async def history(self, user_id: str, key: str) -> list[ProfileEntry]:
        return await _run(self._store.history, user_id, key)

    async def delete_user(self, user_id: str) -> int:
        return await _run(self._store.delete_user, user_id)

    async def close(self) -> None:
        await _run(self._store.close)


class AsyncMemory:
    """The :class:`Memory` methods as coroutines; ``.sync`` is the wrapped object."""

    def __init__(self, memory: Memory) -> None:
        self._sync = memory
        self._profile = AsyncProfile(memory.profile)

    @property
    def sync(self) -> Memory:
        """The wrapped synchronous :class:`Memory`."""
        return self._sync

    @property
    def profile(self) -> AsyncProfile:
        return self._profile

    @property
    def options(self) -> MemoryOptions:
        return self._sync.options

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] = "./hmem-data", *, embedder: Embedder | None = None,
        llm: LLM | None = None, **settings: Any,
    ) -> AsyncMemory:
        """Like :meth:`Memory.open` (construction is quick: models load on first use)."""
        return cls(Memory.open(path, embedder=embedder, llm=llm, **settings))

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, *, embedder: Embedder | None = None, llm: LLM | None = None,
        vectors: VectorIndex | None = None,
    ) -> AsyncMemory:
        """Like :meth:`Memory.from_settings`."""
        return cls(Memory.from_settings(settings, embedder=embedder, llm=llm, vectors=vectors))

    async def add(self, user_id: str, session_id: str, messages: Iterable[Message | Mapping[str, Any]], *,
                  extraction: Literal["foreground", "background"] | None = None) -> AddResult:
        return await _run(self._sync.add, user_id, session_id, messages, extraction=extraction)

    async def context(
        self,
        user_id: str,
        session_id: str,
        query: str | None = None,
        *,
        model: str | None = None,
        budget: int | None = None,
        reply_reserve: int | None = None,
        system_prompt: str | None = None,
        k: int | None = None,
        caps: TierCaps | Literal["default"] | None = "default",
        template: ContextTemplate | None = None,
        truncate_current_turn: bool = False,
        relevance_cutoff: float | Literal["default"] | None = "default",
        kinds: Iterable[str] | str | None = None,
        since: When | None = None,
        until: When | None = None,
        metadata: Mapping[str, Any] | None = None,
        fusion: Literal["rrf", "weighted"] | None = None,
        recency_half_life: timedelta | float | None = None,
        importance_weight: float = 0.0,
        mmr_lambda: float | None = None,
        pending: Iterable[Message | Mapping[str, Any]] | None = None,
    ) -> AssembledContext:
        return await _run(
            self._sync.context, user_id, session_id, query, model=model, budget=budget, reply_reserve=reply_reserve,
            system_prompt=system_prompt,
            k=k, caps=caps, template=template, truncate_current_turn=truncate_current_turn,
            relevance_cutoff=relevance_cutoff, kinds=kinds, since=since,
            until=until, metadata=metadata, fusion=fusion, recency_half_life=recency_half_life,
            importance_weight=importance_weight, mmr_lambda=mmr_lambda, pending=pending)

    async def remember(
        self,
        user_id: str,
        text: str,
        kind: str = "fact",
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        *,
        session_id: str | None = None,
        source_message_id: str | None = None,
        created_at: When | None = None,
    ) -> RememberResult:
        return await _run(self._sync.remember, user_id, text, kind, importance, metadata, session_id=session_id,
                          source_message_id=source_message_id, created_at=created_at)

    async def recall(
        self,
        user_id: str,
        query: str,
        k: int = 10,
        *,
        kinds: Iterable[str] | str | None = None,
        session_id: str | None = None,
        since: When | None = None,
        until: When | None = None,
        metadata: Mapping[str, Any] | None = None,
        fusion: Literal["rrf", "weighted"] | None = None,
        recency_half_life: timedelta | float | None = None,
        importance_weight: float = 0.0,
        mmr_lambda: float | None = None,
    ) -> list[Hit]:
        return await _run(
            self._sync.recall, user_id, query, k, kinds=kinds, session_id=session_id, since=since, until=until,
            metadata=metadata, fusion=fusion, recency_half_life=recency_half_life,
            importance_weight=importance_weight, mmr_lambda=mmr_lambda)

    async def forget(
        self,
        user_id: str,
        ids: Sequence[str] | None = None,
        *,
        kinds: Iterable[str] | str | None = None,
        session_id: str | None = None,
        before: When | None = None,
        all: bool = False,
    ) -> int:
        return await _run(self._sync.forget, user_id, ids, kinds=kinds, session_id=session_id, before=before, all=all)

    async def forget_user(self, user_id: str) -> dict[str, int]:
        return await _run(self._sync.forget_user, user_id)

    async def items(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        session_id: str | None = None,
        source_message_id: str | None = None,
        kinds: Iterable[str] | str | None = None,
    ) -> list[MemoryItem]:
        return await _run(self._sync.items, user_id, ids=ids, session_id=session_id,
                          source_message_id=source_message_id, kinds=kinds)

    async def retrieve(
        self, user_id: str, query: str, k: int = 10, *, using: Literal["lexical", "dense"]
    ) -> list[MemoryItem]:
        return await _run(self._sync.retrieve, user_id, query, k, using=using)

    async def history(self, user_id: str, session_id: str, last_n: int | None = None) -> list[Message]:
        return await _run(self._sync.history, user_id, session_id, last_n)

    async def summary(self, user_id: str, session_id: str) -> SessionSummary | None:
        return await _run(self._sync.summary, user_id, session_id)

    async def set_system_prompt(self, user_id: str, session_id: str, prompt: str | None) -> None:
        await _run(self._sync.set_system_prompt, user_id, session_id, prompt)

    async def clear_session(self, user_id: str, session_id: str) -> bool:
        return await _run(self._sync.clear_session, user_id, session_id)

    async def sessions_of(self, user_id: str) -> list[str]:
        return await _run(self._sync.sessions_of, user_id)

    async def session_infos(self, user_id: str) -> list[SessionInfo]:
        return await _run(self._sync.session_infos, user_id)

    async def users(self) -> list[str]:
        return await _run(self._sync.users)

    async def export_user(self, user_id: str, path: str | os.PathLike[str]) -> int:
        return await _run(self._sync.export_user, user_id, path)

    async def import_user(self, path: str | os.PathLike[str], *, user_id: str | None = None) -> str:
        return await _run(self._sync.import_user, path, user_id=user_id)

    async def stats(self, user_id: str) -> dict[str, Any]:
        return await _run(self._sync.stats, user_id)

    async def readiness(self, timeout_s: float = 2.0) -> dict[str, BackendReady]:
        return await _run(self._sync.readiness, timeout_s)

    async def warm_up(self) -> None:
        await _run(self._sync.warm_up)

    async def flush(self, timeout: float | None = 60.0) -> bool:
        return await _run(self._sync.flush, timeout)

    async def close(self) -> None:
        await _run(self._sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
