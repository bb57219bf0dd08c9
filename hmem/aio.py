"""``AsyncMemory``: the :class:`~hmem.memory.Memory` API for asyncio code.

A thin wrapper, not a copy of the logic: every method runs the synchronous one in
a worker thread (:func:`asyncio.to_thread`), so the event loop never blocks on
SQLite, Redis, Chroma or the embedding model. The methods are not written out twice:
one typed forwarder (:func:`_in_thread`) turns each synchronous method into its
``async def`` twin and keeps the real signature, for type checkers (the parameters and
the awaited return type are checked) and for :func:`inspect.signature` and editors
alike (a test compares the two sides).

Example::

    mem = AsyncMemory(Memory.open("./hmem-data"))
    await mem.add("u1", "s1", [{"role": "user", "content": "hi"}])
    ctx = await mem.context("u1", "s1")
    await mem.profile.set("u1", "city", "Paris")
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from hmem.memory import Memory, ProfileView

if TYPE_CHECKING:
    from hmem.config import Settings
    from hmem.memory import MemoryOptions
    from hmem.protocols import LLM, Embedder, VectorIndex

__all__ = ["AsyncMemory", "AsyncProfile"]

P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """The ``async def`` twin of ``method``: it runs the method of the same name of the
    wrapped object (``self._target``) in a worker thread and returns its result.

    The call goes by name, not through ``method`` itself: a Protocol's methods are stubs,
    and a subclass of :class:`Memory` may override one. ``functools.wraps`` keeps the
    name, docstring and (through ``__wrapped__``) the signature of ``method``.
    """
    name = method.__name__

    @functools.wraps(method)
    async def run(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        target: Callable[P, R] = getattr(self._target, name)
        return await asyncio.to_thread(target, *args, **kwargs)

    return run


class AsyncProfile:
    """Async view of :attr:`Memory.profile <hmem.memory.Memory.profile>` (same methods, awaited)."""

    def __init__(self, view: ProfileView) -> None:
        self._target = view

    set = _in_thread(ProfileView.set)
    get = _in_thread(ProfileView.get)
    delete = _in_thread(ProfileView.delete)
    all = _in_thread(ProfileView.all)
    history = _in_thread(ProfileView.history)


class AsyncMemory:
    """The :class:`Memory` methods as coroutines; ``.sync`` is the wrapped object."""

    def __init__(self, memory: Memory) -> None:
        self._target = memory
        self._profile = AsyncProfile(memory.profile)

    @property
    def sync(self) -> Memory:
        """The wrapped synchronous :class:`Memory`."""
        return self._target

    @property
    def profile(self) -> AsyncProfile:
        return self._profile

    @property
    def options(self) -> MemoryOptions:
        return self._target.options

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

    add = _in_thread(Memory.add)
    context = _in_thread(Memory.context)
    remember = _in_thread(Memory.remember)
    recall = _in_thread(Memory.recall)
    forget = _in_thread(Memory.forget)
    forget_user = _in_thread(Memory.forget_user)
    items = _in_thread(Memory.items)
    history = _in_thread(Memory.history)
    summary = _in_thread(Memory.summary)
    set_system_prompt = _in_thread(Memory.set_system_prompt)
    clear_session = _in_thread(Memory.clear_session)
    session_infos = _in_thread(Memory.session_infos)
    users = _in_thread(Memory.users)
    export_user = _in_thread(Memory.export_user)
    import_user = _in_thread(Memory.import_user)
    stats = _in_thread(Memory.stats)
    readiness = _in_thread(Memory.readiness)
    warm_up = _in_thread(Memory.warm_up)
    flush = _in_thread(Memory.flush)
    close = _in_thread(Memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
