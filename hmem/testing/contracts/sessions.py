"""The :class:`~hmem.protocols.SessionStore` contract suite.

A backend passes it by subclassing :class:`SessionStoreContract` and overriding one
fixture, ``session_backend``, that returns a :class:`SessionBackend`: how to open a
store (with or without a TTL) and how to let time pass for it (a fake clock's step,
or ``time.sleep`` when the server keeps the time, as Redis does).

Example::

    import pytest
    from hmem.testing.contracts import SessionBackend, SessionStoreContract

    class TestMySessionStore(SessionStoreContract):
        @pytest.fixture
        def session_backend(self) -> SessionBackend:
            clock = FakeClock()
            return SessionBackend(lambda ttl: MyStore(ttl_seconds=ttl, clock=clock), clock.advance, ttl=60.0)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from hmem.errors import ConflictError, DuplicateId, InvalidInput
from hmem.protocols import SessionStore
from hmem.types import Message, SessionInfo, ToolCall

__all__ = ["SessionBackend", "SessionStoreContract"]


@dataclass(frozen=True)
class SessionBackend:
    """What :class:`SessionStoreContract` needs of a backend.

    ``make(ttl_seconds)`` opens a fresh, empty store (``None``: no TTL); the suite
    closes every store it made. ``advance(seconds)`` lets that much time pass for the
    store. ``ttl`` is a TTL short enough to wait for with ``advance`` (one second is
    enough for a real clock).
    """

    make: Callable[[float | None], SessionStore]
    advance: Callable[[float], None]
    ttl: float


def msg(i: int | str, role: str = "user", **kw: Any) -> Message:
    return Message(role=role, content=f"message {i}", id=f"m{i}", **kw)  # type: ignore[arg-type]


def ids(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    return [m.id for m in messages]


def rich_messages() -> list[Message]:
    """Every field a message can carry, with awkward text (CJK, emoji, NUL, quotes, 20k chars)."""
    tz = timezone(timedelta(hours=8))
    return [
        Message(role="system", content="You are helpful.", id="sys", created_at=datetime(2024, 1, 2, 3, 4, 5, 123456, UTC)),
        Message(role="user", content="我住在柏林 🏠, and I like \"quotes\" \\ back\nslash\ttab\x00nul", id="用户-1",
                name="alice_1", created_at=datetime(2024, 5, 6, 7, 8, 9, 999999, tz),
                metadata={"lang": "zh", "n": 3, "score": 0.25, "ok": True, "none": None, "emoji": "😀"}),
        Message(role="assistant", content=None, id="a1",
                tool_calls=(ToolCall(id="call_1", name="weather", arguments='{"city": "柏林"}'),
                            ToolCall(id="call_2", name="time", arguments="{}"))),
        Message(role="tool", content='{"temp": 21}', tool_call_id="call_1", id="t1"),
        Message(role="tool", content="", tool_call_id="call_2", id="t2"),
        Message(role="assistant", content="It is 21 °C in Berlin. 👍🏽" + "x" * 20_000, id="a2"),
        Message(role="developer", content="  leading and trailing spaces  ", id="d1"),
    ]


# -- bad input: InvalidInput (or DuplicateId, a subclass), nothing changed -------------------

BAD_IDS: list[Any] = ["", "   ", " padded", "padded ", "tab\tid", "nul\x00", "\ud800lone", 5, None, b"bytes", "x" * 257]
BAD_LAST_N: list[Any] = [-1, 1.5, "2", True, [1]]
BAD_VERSIONS: list[Any] = [-1, "1", None, True, 1.0]
NEW = Message(role="user", content="new", id="new")
BadCall = tuple[str, Callable[[SessionStore], object], type[InvalidInput]]


def _call(method: str, *args: Any, **kwargs: Any) -> Callable[[SessionStore], object]:
    """``store.method(*args, **kwargs)``, as a function of the store."""
    return lambda store: getattr(store, method)(*args, **kwargs)


def _bad_calls() -> list[BadCall]:
    calls: list[BadCall] = []
    for bad in BAD_IDS:
        calls += [
            (f"append user_id={bad!r}", _call("append", bad, "s1", [NEW]), InvalidInput),
            (f"append session_id={bad!r}", _call("append", "u1", bad, [NEW]), InvalidInput),
            (f"load user_id={bad!r}", _call("load", bad, "s1"), InvalidInput),
            (f"replace session_id={bad!r}", _call("replace", "u1", bad, [NEW], 1), InvalidInput),
            (f"delete session_id={bad!r}", _call("delete", "u1", bad), InvalidInput),
            (f"list_sessions user_id={bad!r}", _call("list_sessions", bad), InvalidInput),
        ]
    for bad in BAD_LAST_N:
        calls.append((f"load last_n={bad!r}", _call("load", "u1", "s1", last_n=bad), InvalidInput))
    for bad in BAD_VERSIONS:
        calls.append((f"replace expected_version={bad!r}", _call("replace", "u1", "s1", [NEW], bad), InvalidInput))
    bad_batches: list[tuple[str, Any, type[InvalidInput]]] = [
        ("a string", "hello", InvalidInput),
        ("a dict", {"role": "user", "content": "hi"}, InvalidInput),
        ("a list of dicts", [{"role": "user", "content": "hi"}], InvalidInput),
        ("None item", [NEW, None], InvalidInput),
        ("str item", [NEW, "hi"], InvalidInput),
        ("an int", 7, InvalidInput),
        ("same id twice in the batch", [NEW, Message(role="user", content="again", id="new")], DuplicateId),
    ]
    for label, batch, exc in bad_batches:
        calls.append((f"append {label}", _call("append", "u1", "s1", batch), exc))
        calls.append((f"replace {label}", _call("replace", "u1", "s1", batch, 1), exc))
    calls.append(("append an id already stored", _call("append", "u1", "s1", [msg(1)]), DuplicateId))
    calls.append(("append new + stored id", _call("append", "u1", "s1", [NEW, msg(2)]), DuplicateId))
    return calls


BAD_CALLS = _bad_calls()


class SessionStoreContract:
    """Behaviour every :class:`~hmem.protocols.SessionStore` must show: versions,
    compare-and-set, TTL on inactivity, isolation, lossless round trips, bad input.

    Override the ``session_backend`` fixture (see the module docstring).
    """

    @pytest.fixture
    def session_backend(self) -> SessionBackend:
        raise NotImplementedError("override the `session_backend` fixture to return a SessionBackend")

    @pytest.fixture
    def backend(self, session_backend: SessionBackend) -> Iterator[SessionBackend]:
        made: list[SessionStore] = []

        def make(ttl: float | None) -> SessionStore:
            made.append(session_backend.make(ttl))
            return made[-1]

        yield SessionBackend(make, session_backend.advance, session_backend.ttl)
        for store in made:
            store.close()

    @pytest.fixture
    def store(self, backend: SessionBackend) -> SessionStore:
        return backend.make(None)

    # -- append / load / versions --------------------------------------------------------

    def test_store_satisfies_the_protocol(self, store: SessionStore) -> None:
        assert isinstance(store, SessionStore)

    def test_missing_session_is_empty_at_version_0(self, store: SessionStore) -> None:
        state = store.load("u1", "nope")
        assert state.messages == () and state.version == 0
        assert store.list_sessions("u1") == []

    def test_each_append_bumps_version_by_one_and_keeps_order(self, store: SessionStore) -> None:
        assert store.append("u1", "s1", [msg(1), msg(2)]) == 1
        assert store.append("u1", "s1", [msg(3)]) == 2
        assert store.append("u1", "s1", (msg(4), msg(5), msg(6))) == 3
        state = store.load("u1", "s1")
        assert ids(state.messages) == ["m1", "m2", "m3", "m4", "m5", "m6"]
        assert state.version == 3

    def test_empty_append_is_a_noop_returning_the_current_version(self, store: SessionStore) -> None:
        assert store.append("u1", "s1", []) == 0
        assert store.list_sessions("u1") == []  # not created
        store.append("u1", "s1", [msg(1)])
        assert store.append("u1", "s1", []) == 1
        assert store.load("u1", "s1").version == 1

    @pytest.mark.parametrize(("last_n", "expected"), [
        (0, []), (1, ["m5"]), (2, ["m4", "m5"]), (5, ["m1", "m2", "m3", "m4", "m5"]),
        (99, ["m1", "m2", "m3", "m4", "m5"]), (None, ["m1", "m2", "m3", "m4", "m5"]),
    ])
    def test_last_n_returns_the_newest_n_oldest_first(self, store: SessionStore, last_n: int | None,
                                                      expected: list[str]) -> None:
        store.append("u1", "s1", [msg(1), msg(2), msg(3)])
        store.append("u1", "s1", [msg(4), msg(5)])
        state = store.load("u1", "s1", last_n=last_n)
        assert ids(state.messages) == expected
        assert state.version == 2

    # -- replace (compare-and-set) ---------------------------------------------------------

    def test_replace_with_current_version_swaps_the_list(self, store: SessionStore) -> None:
        store.append("u1", "s1", [msg(1), msg(2), msg(3)])
        version = store.load("u1", "s1").version
        assert store.replace("u1", "s1", [msg("summary", role="system"), msg(3)], version) == version + 1
        state = store.load("u1", "s1")
        assert ids(state.messages) == ["msummary", "m3"] and state.version == version + 1

    def test_replace_with_stale_version_conflicts_and_changes_nothing(self, store: SessionStore) -> None:
        store.append("u1", "s1", [msg(1)])
        stale = store.load("u1", "s1").version
        store.append("u1", "s1", [msg(2)])  # someone else wrote first
        before = store.load("u1", "s1")
        with pytest.raises(ConflictError) as info:
            store.replace("u1", "s1", [msg(9)], stale)
        assert info.value.expected == stale and info.value.actual == before.version
        assert store.load("u1", "s1") == before

    def test_replace_creates_a_missing_session_only_at_version_0(self, store: SessionStore) -> None:
        with pytest.raises(ConflictError):
            store.replace("u1", "s1", [msg(1)], 1)
        assert store.load("u1", "s1").version == 0
        assert store.replace("u1", "s1", [msg(1)], 0) == 1
        assert ids(store.load("u1", "s1").messages) == ["m1"]

    def test_replace_resets_which_ids_are_taken(self, store: SessionStore) -> None:
        store.append("u1", "s1", [msg(1), msg(2)])
        store.replace("u1", "s1", [msg(2)], 1)
        with pytest.raises(DuplicateId):
            store.append("u1", "s1", [msg(2)])
        assert store.append("u1", "s1", [msg(1)]) == 3  # m1 was dropped by the replace, so it is free again
        assert ids(store.load("u1", "s1").messages) == ["m2", "m1"]

    def test_replace_with_empty_list_keeps_the_session_at_a_new_version(self, store: SessionStore) -> None:
        store.append("u1", "s1", [msg(1)])
        assert store.replace("u1", "s1", [], 1) == 2
        assert store.load("u1", "s1") == store.load("u1", "s1", last_n=3)
        state = store.load("u1", "s1")
        assert state.messages == () and state.version == 2
        assert [(i.session_id, i.message_count, i.version) for i in store.list_sessions("u1")] == [("s1", 0, 2)]

    # -- delete / list -----------------------------------------------------------------------

    def test_delete_removes_only_that_session(self, store: SessionStore) -> None:
        store.append("u1", "s1", [msg(1)])
        store.append("u1", "s2", [msg(2)])
        assert store.delete("u1", "s1") is True
        assert store.delete("u1", "s1") is False
        assert store.load("u1", "s1").version == 0
        assert ids(store.load("u1", "s2").messages) == ["m2"]
        assert [i.session_id for i in store.list_sessions("u1")] == ["s2"]
        assert store.append("u1", "s1", [msg(1)]) == 1  # a deleted session starts over

    def test_list_sessions_most_recently_updated_first(self, store: SessionStore, backend: SessionBackend) -> None:
        for session in ("s1", "s2", "s3"):
            store.append("u1", session, [msg(session)])
            backend.advance(0.01)
        store.append("u1", "s1", [msg("again")])
        infos = store.list_sessions("u1")
        assert [(i.session_id, i.message_count, i.version) for i in infos] == [("s1", 2, 2), ("s3", 1, 1), ("s2", 1, 1)]
        assert all(isinstance(i, SessionInfo) and i.updated_at.tzinfo is not None for i in infos)
        assert infos[0].updated_at > infos[1].updated_at > infos[2].updated_at
        assert abs(infos[0].updated_at - datetime.now(UTC)) < timedelta(days=3650)

    def test_list_users_names_every_user_with_a_session_once(self, store: SessionStore) -> None:
        assert store.list_users() == []
        # Ids with the characters key layouts escape or glob on (: { } % * ? [ ] \\), CJK, a space.
        awkward = ["we}ird:id", "{brace", "100%", "star*?", "[set]", "back\\slash", "用户", "a b"]
        for user in [*awkward, "alice", "bob"]:
            store.append(user, "s1", [msg(1)])
            store.append(user, "s2", [msg(2)])
        assert store.list_users() == sorted([*awkward, "alice", "bob"])
        store.delete("bob", "s1")
        assert "bob" in store.list_users()  # one session left
        store.delete("bob", "s2")
        store.replace("alice", "s1", [], 1)  # an emptied session still exists
        assert store.list_users() == sorted([*awkward, "alice"])

    def test_list_users_forgets_users_whose_sessions_expired(self, backend: SessionBackend) -> None:
        store = backend.make(backend.ttl)
        store.append("old", "s1", [msg(1)])
        backend.advance(backend.ttl / 2)
        store.append("new", "s1", [msg(1)])
        assert store.list_users() == ["new", "old"]
        backend.advance(backend.ttl / 2 + 0.2)
        assert store.list_users() == ["new"]

    # -- TTL on inactivity ---------------------------------------------------------------------

    def test_ttl_expires_inactive_sessions_and_writes_refresh_it(self, backend: SessionBackend) -> None:
        store = backend.make(backend.ttl)
        ttl = backend.ttl
        store.append("u1", "s1", [msg(1)])
        store.append("u1", "keep", [msg(1)])
        backend.advance(ttl * 0.6)
        store.append("u1", "s1", [msg(2)])  # refreshes s1, not "keep"
        backend.advance(ttl * 0.6)
        assert ids(store.load("u1", "s1").messages) == ["m1", "m2"]
        assert store.load("u1", "keep").version == 0  # 1.2 ttl without a write
        assert [i.session_id for i in store.list_sessions("u1")] == ["s1"]
        backend.advance(ttl * 0.6)
        assert store.load("u1", "s1").version == 0
        assert store.list_sessions("u1") == []
        assert store.delete("u1", "s1") is False
        # an expired session starts over: version 1, its old ids are free, nothing old resurfaces
        assert store.append("u1", "s1", [msg(2)]) == 1
        assert ids(store.load("u1", "s1").messages) == ["m2"]

    def test_no_ttl_by_default(self, backend: SessionBackend, store: SessionStore) -> None:
        store.append("u1", "s1", [msg(1)])
        backend.advance(backend.ttl * 1.2)  # longer than a TTL would have let it live
        assert store.load("u1", "s1").version == 1

    # -- isolation -------------------------------------------------------------------------------

    @pytest.mark.parametrize(("user_a", "user_b"), [("alice", "bob"), ("a}b", "a%7Db"), ("x:s:y", "x"), ("{u}", "u"),
                                                     ("Alice", "alice")])
    def test_users_never_see_each_others_sessions(self, store: SessionStore, user_a: str, user_b: str) -> None:
        store.append(user_a, "chat", [msg(1), msg(2)])
        assert store.load(user_b, "chat").version == 0
        assert store.list_sessions(user_b) == []
        assert store.append(user_b, "chat", [msg(1)]) == 1  # same message id is fine in another user's session
        with pytest.raises(ConflictError):
            store.replace(user_b, "chat", [], 2)  # B's version, not A's
        assert store.delete(user_b, "chat") is True
        state = store.load(user_a, "chat")
        assert ids(state.messages) == ["m1", "m2"] and state.version == 1
        assert [i.session_id for i in store.list_sessions(user_a)] == ["chat"]

    @pytest.mark.parametrize(("session_a", "session_b"),
                             [("a", "a:msgs"), ("a:meta", "a"), ("s%3A", "s:"), ("会话", "会话 2")])
    def test_similar_session_ids_are_distinct(self, store: SessionStore, session_a: str, session_b: str) -> None:
        store.append("u1", session_a, [msg(1)])
        store.append("u1", session_b, [msg(2), msg(3)])
        assert ids(store.load("u1", session_a).messages) == ["m1"]
        assert ids(store.load("u1", session_b).messages) == ["m2", "m3"]
        assert sorted(i.session_id for i in store.list_sessions("u1")) == sorted([session_a, session_b])

    # -- lossless round trip --------------------------------------------------------------------

    def test_messages_round_trip_losslessly(self, store: SessionStore) -> None:
        original = rich_messages()
        store.append("u1", "s1", original[:3])
        store.append("u1", "s1", original[3:])
        loaded = store.load("u1", "s1").messages
        assert loaded == tuple(original)
        assert [m.to_openai(include_meta=True) for m in loaded] == [m.to_openai(include_meta=True) for m in original]
        assert [m.created_at for m in loaded] == [m.created_at for m in original]
        store.replace("u1", "s1", list(reversed(original)), 2)
        assert store.load("u1", "s1").messages == tuple(reversed(original))

    def test_callers_cannot_change_stored_data_through_shared_objects(self, store: SessionStore) -> None:
        meta: dict[str, Any] = {"k": "v"}
        batch = [Message(role="user", content="hi", id="m1", metadata=meta)]
        store.append("u1", "s1", batch)
        meta["k"] = "changed"
        batch.append(msg(2))
        loaded = store.load("u1", "s1").messages
        assert ids(loaded) == ["m1"] and dict(loaded[0].metadata) == {"k": "v"}
        loaded[0].metadata["k"] = "mutated"  # type: ignore[index]
        assert dict(store.load("u1", "s1").messages[0].metadata) == {"k": "v"}

    # -- bad input ---------------------------------------------------------------------------------

    @pytest.mark.parametrize(("label", "call", "exc"), BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
    def test_bad_input_raises_invalid_input_and_changes_nothing(
        self, store: SessionStore, label: str, call: Callable[[SessionStore], object], exc: type[InvalidInput]
    ) -> None:
        store.append("u1", "s1", [msg(1), msg(2)])
        before = (store.load("u1", "s1"), store.list_sessions("u1"))
        with pytest.raises(exc) as info:
            call(store)
        assert info.value.field, f"{label}: the error must name the field"
        assert (store.load("u1", "s1"), store.list_sessions("u1")) == before
        assert store.load("u1", "s1").version == 1
