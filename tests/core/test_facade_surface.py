"""The Memory facade's surface: collaborators stay private, and the async twins cannot drift.

``AsyncMemory``/``AsyncProfile`` spell every method out (no ``*args: Any``); these
checks compare them with ``Memory``/``ProfileStore`` through :func:`inspect.signature`,
so a parameter added on one side and not the other fails here.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from hmem.aio import AsyncMemory, AsyncProfile
from hmem.build import build_parts
from hmem.config import Settings
from hmem.memory import Memory
from hmem.protocols import ProfileStore

#: Memory's public API. A new public name is a decision: add it here and to AsyncMemory.
PUBLIC = {
    "open", "from_settings", "profile", "options",
    "add", "context", "remember", "recall", "forget", "forget_user", "items", "retrieve",
    "history", "summary", "set_system_prompt", "clear_session", "sessions_of", "session_infos", "users",
    "export_user", "import_user", "stats", "readiness", "warm_up", "flush", "close",
}


def _public(cls: type) -> dict[str, Any]:
    return {name: inspect.getattr_static(cls, name) for name in dir(cls) if not name.startswith("_")}


def _assert_mirrors(sync_cls: type, async_cls: type, skip: frozenset[str] = frozenset()) -> None:
    sync, aio = _public(sync_cls), _public(async_cls)
    assert set(sync) - skip == set(aio) - skip, f"only in {sync_cls.__name__}: {set(sync) - set(aio)}, " \
                                                f"only in {async_cls.__name__}: {set(aio) - set(sync)}"
    for name, member in sync.items():
        if name in skip:
            continue
        twin = aio[name]
        if isinstance(member, property):
            assert isinstance(twin, property), name
            continue
        if isinstance(member, classmethod):
            assert isinstance(twin, classmethod), name
            sync_sig = inspect.signature(getattr(sync_cls, name))
            aio_sig = inspect.signature(getattr(async_cls, name))
            assert list(sync_sig.parameters.values()) == list(aio_sig.parameters.values()), name
            continue
        assert inspect.iscoroutinefunction(twin), f"{async_cls.__name__}.{name} must be `async def`"
        sync_sig, aio_sig = inspect.signature(member), inspect.signature(twin)
        assert list(sync_sig.parameters.values()) == list(aio_sig.parameters.values()), (
            f"{name}: {sync_sig} != {aio_sig}")
        assert sync_sig.return_annotation == aio_sig.return_annotation, name


def test_async_memory_mirrors_every_public_method_of_memory() -> None:
    _assert_mirrors(Memory, AsyncMemory, skip=frozenset({"sync"}))
    assert "sync" in _public(AsyncMemory)  # the one extra: the wrapped Memory


def test_async_profile_mirrors_the_profile_store_port() -> None:
    _assert_mirrors(ProfileStore, AsyncProfile)


def test_the_checker_sees_drift() -> None:
    """The comparison above must be able to fail."""

    class Sync:
        def get(self, user_id: str, key: str) -> int:
            return 0

    class Async:
        async def get(self, user_id: str, key: str, extra: int = 0) -> int:
            return 0

    class NotAsync:
        def get(self, user_id: str, key: str) -> int:
            return 0

    for twin in (Async, NotAsync):
        with pytest.raises(AssertionError):
            _assert_mirrors(Sync, twin)


def test_memory_exposes_methods_not_collaborators(tmp_path: Path) -> None:
    assert set(_public(Memory)) == PUBLIC
    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory")
    with Memory(build_parts(settings)) as mem:  # the embedding model is not loaded: nothing embeds here
        assert [name for name in vars(mem) if not name.startswith("_")] == []
        for leaked in ("sessions", "summaries", "longterm", "compactor", "worker", "profile_extractor"):
            assert not hasattr(mem, leaked), leaked
        with pytest.raises(AttributeError):
            mem.profile = mem.profile  # type: ignore[misc]  # read-only
