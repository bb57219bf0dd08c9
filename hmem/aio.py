"""``AsyncMemory``: the :class:`~hmem.memory.Memory` API for asyncio code.

A thin wrapper, not a copy of the logic: every method runs the synchronous one in
a worker thread (:func:`asyncio.to_thread`), so the event loop never blocks on
SQLite, Redis, Chroma or the embedding model.

Example::

    mem = AsyncMemory(Memory.open("./hmem-data"))
    await mem.add("u1", "s1", [{"role": "user", "content": "hi"}])
    ctx = await mem.context("u1", "s1")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from hmem.memory import Memory
from hmem.protocols import ProfileStore

__all__ = ["AsyncMemory", "AsyncProfile"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def _offload(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """Turn ``Target.method`` into an async method of a wrapper whose ``_target``
    holds the synchronous object."""

    async def wrapper(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(method, self._target, *args, **kwargs)

    wrapper.__name__ = method.__name__
    wrapper.__qualname__ = f"AsyncMemory.{method.__name__}"
    wrapper.__doc__ = method.__doc__
    return wrapper


class AsyncProfile:
    """Async view of a :class:`~hmem.protocols.ProfileStore` (same method names)."""

    def __init__(self, store: ProfileStore) -> None:
        self._target = store

    async def set(self, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self._target.set, *args, **kwargs)

    async def get(self, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self._target.get, *args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self._target.delete, *args, **kwargs)

    async def all(self, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self._target.all, *args, **kwargs)

    async def history(self, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(self._target.history, *args, **kwargs)


class AsyncMemory:
    """The :class:`Memory` methods as coroutines; ``.sync`` is the wrapped object."""

    def __init__(self, memory: Memory) -> None:
        self._target = memory
        self.sync = memory
        self.profile = AsyncProfile(memory.profile)

    @classmethod
    def open(cls, *args: Any, **kwargs: Any) -> AsyncMemory:
        """Like :meth:`Memory.open` (construction is quick: models load on first use)."""
        return cls(Memory.open(*args, **kwargs))

    @classmethod
    def from_settings(cls, *args: Any, **kwargs: Any) -> AsyncMemory:
        return cls(Memory.from_settings(*args, **kwargs))

    add = _offload(Memory.add)
    context = _offload(Memory.context)
    remember = _offload(Memory.remember)  # type: ignore[arg-type]  # mypy: **kwargs + self
    recall = _offload(Memory.recall)  # type: ignore[arg-type]  # mypy: **kwargs + self
    forget = _offload(Memory.forget)  # type: ignore[arg-type]  # mypy: **kwargs + self
    forget_user = _offload(Memory.forget_user)
    history = _offload(Memory.history)
    set_system_prompt = _offload(Memory.set_system_prompt)
    clear_session = _offload(Memory.clear_session)
    sessions_of = _offload(Memory.sessions_of)
    export_user = _offload(Memory.export_user)
    import_user = _offload(Memory.import_user)
    stats = _offload(Memory.stats)
    items = _offload(Memory.items)
    flush = _offload(Memory.flush)
    close = _offload(Memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
