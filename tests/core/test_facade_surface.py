"""The Memory facade's surface: collaborators stay private, and the async twins cannot drift.

``AsyncMemory``/``AsyncProfile`` build each method with one typed forwarder
(``hmem.aio._in_thread``) from the ``Memory``/``ProfileView`` method of the same name, so
a parameter cannot differ; what can drift is the list. These checks compare the two
sides name by name: a public method of one side missing from the other, a twin that is not
``async def``, or one built from another method (its signature, through
:func:`inspect.signature`, and its name) fails here. A forwarded call runs the wrapped
object's method, by name, in a worker thread.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from hmem.aio import AsyncMemory, AsyncProfile
from hmem.build import build_parts
from hmem.config import Settings
from hmem.memory import Memory, ProfileView

#: Memory's public API. A new public name is a decision: add it here and to AsyncMemory.
PUBLIC = {
    "open", "from_settings", "profile", "options",
    "add", "context", "remember", "recall", "forget", "forget_user", "items",
    "history", "summary", "set_system_prompt", "clear_session", "session_infos", "users",
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
        assert twin.__name__ == name, f"{async_cls.__name__}.{name} forwards to {twin.__name__}"
        sync_sig, aio_sig = inspect.signature(member), inspect.signature(twin)
        assert list(sync_sig.parameters.values()) == list(aio_sig.parameters.values()), (
            f"{name}: {sync_sig} != {aio_sig}")
        assert sync_sig.return_annotation == aio_sig.return_annotation, name


def test_async_memory_mirrors_every_public_method_of_memory() -> None:
    _assert_mirrors(Memory, AsyncMemory, skip=frozenset({"sync"}))
    assert "sync" in _public(AsyncMemory)  # the one extra: the wrapped Memory


def test_async_profile_mirrors_the_profile_store_port() -> None:
    _assert_mirrors(ProfileView, AsyncProfile)


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

    class Missing:
        pass

    for twin in (Async, NotAsync, Missing):
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


def test_a_forwarded_call_runs_the_wrapped_method_in_a_worker_thread(tmp_path: Path) -> None:
    """By name on the wrapped object (a subclass's override is the one run), off the loop's thread."""
    ran_in: list[int] = []

    class Recording(Memory):
        def users(self) -> list[str]:
            ran_in.append(threading.get_ident())
            return ["from-the-override"]

    async def scenario(amem: AsyncMemory) -> tuple[int, list[str], object, object]:
        users = await amem.users()
        entry = await amem.profile.set("u1", "city", "Paris")
        return threading.get_ident(), users, entry, await amem.profile.get("u1", "city")

    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory")
    with Recording(build_parts(settings)) as mem:  # nothing embeds here
        loop_thread, users, entry, got = asyncio.run(scenario(AsyncMemory(mem)))
        assert users == ["from-the-override"]
        assert len(ran_in) == 1 and ran_in[0] != loop_thread
        assert got == entry == mem.profile.get("u1", "city")
        assert entry is not None and entry.value == "Paris"


def test_the_profile_view_offers_the_user_facing_methods_only(tmp_path: Path) -> None:
    # The Memory owns its profile store: closing it or erasing a user goes through the Memory.
    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory")
    with Memory(build_parts(settings)) as mem:  # nothing embeds here
        view = mem.profile
        assert set(_public(type(view))) == {"set", "get", "delete", "all", "history"}
        view.set("u1", "city", "Lisbon")
        entry = view.get("u1", "city")
        assert entry is not None and entry.value == "Lisbon"
