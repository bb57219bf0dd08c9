"""The :class:`~hmem.protocols.ProfileStore` contract suite.

Subclass :class:`ProfileStoreContract` and override the ``profile_backend`` fixture to
return a :class:`ProfileBackend`. Its ``make(**kw)`` opens a store and must accept
``clock`` (a callable returning an aware :class:`~datetime.datetime`: the suite drives
time with it) and ``max_keys`` (the per-user key cap).

Example::

    import pytest
    from hmem.testing.contracts import ProfileBackend, ProfileStoreContract

    class TestMyProfileStore(ProfileStoreContract):
        @pytest.fixture
        def profile_backend(self, tmp_path) -> ProfileBackend:
            return ProfileBackend(lambda **kw: MyProfileStore(tmp_path / "p.db", **kw), persistent=True)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hmem.errors import CapacityError, InvalidInput
from hmem.profile.model import MAX_LIST_ITEMS, MAX_VALUE_CHARS, history_problems
from hmem.protocols import ProfileStore
from hmem.types import Provenance

__all__ = ["FakeClock", "ProfileBackend", "ProfileStoreContract"]

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


class FakeClock:
    """Advances one second per reading, so every write has a distinct, known time."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@dataclass(frozen=True)
class ProfileBackend:
    """``make(**kw)`` opens a store (keywords ``clock`` and ``max_keys``). When
    ``persistent``, stores made by one backend share storage (a reopened file, the
    same server), so data written through one is read through the next."""

    make: Callable[..., ProfileStore]
    persistent: bool


@dataclass(frozen=True)
class Bad:
    why: str
    kwargs: dict[str, Any]
    field: str


BAD_INPUTS = [
    Bad("empty key", {"key": ""}, "key"),
    Bad("whitespace key", {"key": "   "}, "key"),
    Bad("only hyphens", {"key": " - - "}, "key"),
    Bad("punctuation in key", {"key": "a/b"}, "key"),
    Bad("key too long", {"key": "k" * 65}, "key"),
    Bad("non-string key", {"key": 5}, "key"),
    Bad("huge string", {"value": "x" * (MAX_VALUE_CHARS + 1)}, "value"),
    Bad("empty string", {"value": "  "}, "value"),
    Bad("NUL in string", {"value": "a\x00b"}, "value"),
    Bad("lone surrogate", {"value": "\udcff"}, "value"),
    Bad("too many items", {"value": ["x"] * (MAX_LIST_ITEMS + 1)}, "value"),
    Bad("list too long in total", {"value": ["x" * 1500, "y" * 1500]}, "value"),
    Bad("non-string list item", {"value": ["tea", 3]}, "value[1]"),
    Bad("empty list item", {"value": ["tea", ""]}, "value[1]"),
    Bad("empty list", {"value": []}, "value"),
    Bad("dict", {"value": {"city": "Paris"}}, "value"),
    Bad("None", {"value": None}, "value"),
    Bad("NaN", {"value": math.nan}, "value"),
    Bad("infinity", {"value": math.inf}, "value"),
    Bad("set", {"value": {"tea"}}, "value"),
    Bad("bytes", {"value": b"Paris"}, "value"),
    Bad("int beyond 64 bits", {"value": 2**70}, "value"),
    Bad("confidence above 1", {"confidence": 1.5}, "confidence"),
    Bad("confidence NaN", {"confidence": math.nan}, "confidence"),
    Bad("confidence bool", {"confidence": True}, "confidence"),
    Bad("empty user id", {"user_id": ""}, "user_id"),
    Bad("padded user id", {"user_id": " u1"}, "user_id"),
    Bad("control char in user id", {"user_id": "u\n1"}, "user_id"),
    Bad("non-string user id", {"user_id": None}, "user_id"),
    Bad("provenance of wrong type", {"provenance": "api"}, "provenance"),
    Bad("provenance unknown source", {"provenance": Provenance("gossip")}, "provenance.source"),  # type: ignore[arg-type]
    Bad("provenance empty session id", {"provenance": Provenance("message", "")}, "provenance.session_id"),
    Bad("at not a time", {"at": "yesterday"}, "at"),
]


class ProfileStoreContract:
    """Behaviour every :class:`~hmem.protocols.ProfileStore` must show: typed values,
    key normalization, the versioning rule (supersede, confirm, delete, history that
    never overlaps even when the clock goes back), the key cap, isolation, and bad
    input rejected with nothing changed."""

    @pytest.fixture
    def profile_backend(self) -> ProfileBackend:
        raise NotImplementedError("override the `profile_backend` fixture to return a ProfileBackend")

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    def store(self, profile_backend: ProfileBackend, clock: FakeClock) -> ProfileStore:
        return profile_backend.make(clock=clock)

    def test_implements_the_port(self, store: ProfileStore) -> None:
        assert isinstance(store, ProfileStore)

    @pytest.mark.parametrize(
        "value",
        ["Berlin", "北京 🐼", 42, -7, 2**63 - 1, 1.75, 0.1, True, False, ("tea", "chess"), ("猫",)],
        ids=repr,
    )
    def test_typed_values_round_trip_with_their_type(self, store: ProfileStore, value: Any) -> None:
        store.set("u1", "k", value)
        got = store.get("u1", "k")
        assert got is not None
        assert got.value == value and type(got.value) is type(value)

    def test_list_is_stored_as_tuple(self, store: ProfileStore) -> None:
        store.set("u1", "likes", ["tea", "chess"])  # type: ignore[arg-type]  # lists are accepted
        got = store.get("u1", "likes")
        assert got is not None and got.value == ("tea", "chess")

    def test_bool_int_float_and_str_are_different_values(self, store: ProfileStore) -> None:
        # 1, 1.0, True and "1" compare equal-ish in Python; as profile values they must not.
        for value in (1, 1.0, True, "1"):
            store.set("u1", "k", value)
        assert [type(e.value) for e in store.history("u1", "k")] == [int, float, bool, str]

    def test_keys_are_normalized_on_write_and_read(self, store: ProfileStore) -> None:
        entry = store.set("u1", "  Home-Town ", "Berlin")
        assert entry.key == "home_town"
        for spelling in ("home_town", "HOME TOWN", "home   town", "Ｈｏｍｅ－Ｔｏｗｎ", "home-_-town"):
            got = store.get("u1", spelling)
            assert got is not None and got.value == "Berlin", spelling
        store.set("u1", " 居住 城市 ", "北京")
        got = store.get("u1", "居住_城市")
        assert got is not None and got.key == "居住_城市"

    def test_last_write_wins_and_history_keeps_the_old_value(self, store: ProfileStore) -> None:
        first = store.set("u1", "location", "Berlin", provenance=Provenance("message", "s1", "m1"), confidence=0.9)
        second = store.set("u1", "location", "Paris", provenance=Provenance("message", "s2", "m7"), confidence=0.8)
        current = store.get("u1", "location")
        assert current is not None and current.value == "Paris" and current.is_current
        assert current.provenance == Provenance("message", "s2", "m7") and current.confidence == 0.8
        history = store.history("u1", "location")
        assert [e.value for e in history] == ["Berlin", "Paris"]
        berlin = history[0]
        assert berlin.valid_from == first.valid_from and berlin.valid_to == second.valid_from
        assert berlin.provenance == Provenance("message", "s1", "m1") and berlin.confidence == 0.9
        assert berlin.valid_to is not None and berlin.valid_to > berlin.valid_from
        assert history_problems(history) == []

    def test_setting_the_same_value_confirms_without_a_new_version(self, store: ProfileStore) -> None:
        first = store.set("u1", "location", "Berlin", confidence=0.6, provenance=Provenance("message", "s1", "m1"))
        store.set("u1", "pet", "cat")
        again = store.set("u1", "location", "Berlin", confidence=0.4, provenance=Provenance("message", "s2", "m2"))
        history = store.history("u1", "location")
        assert len(history) == 1
        assert again.valid_from == first.valid_from  # still the same version
        assert again.confirmed_at is not None and again.confirmed_at > first.valid_from
        assert again.confidence == 0.6  # the higher of the two statements
        assert again.provenance == Provenance("message", "s1", "m1")  # where it was first said
        assert store.get("u1", "location") == again
        # re-confirmation moves the key to the front of all() (most recently confirmed first)
        assert [e.key for e in store.all("u1")] == ["location", "pet"]

    def test_delete_records_a_deletion_and_set_after_delete_continues_the_chain(self, store: ProfileStore) -> None:
        store.set("u1", "location", "Berlin")
        assert store.delete("u1", "Location", provenance=Provenance("message", "s3", "m9")) is True
        assert store.get("u1", "location") is None
        assert store.all("u1") == []
        assert store.delete("u1", "location") is False  # already deleted: nothing recorded
        assert store.delete("u1", "never_set") is False
        assert store.history("u1", "never_set") == []
        store.set("u1", "location", "Paris")
        history = store.history("u1", "location")
        assert [e.value for e in history] == ["Berlin", None, "Paris"]
        assert history[1].provenance == Provenance("message", "s3", "m9")
        assert not history[1].is_current
        assert history_problems(history) == []

    def test_all_lists_current_entries_most_recent_first(self, store: ProfileStore) -> None:
        store.set("u1", "a", "1")
        store.set("u1", "b", "2")
        store.set("u1", "c", "3")
        store.set("u1", "a", "1b")
        store.delete("u1", "b")
        assert [(e.key, e.value) for e in store.all("u1")] == [("a", "1b"), ("c", "3")]
        assert all(e.valid_to is None for e in store.all("u1"))

    def test_users_are_isolated(self, store: ProfileStore) -> None:
        store.set("alice", "location", "Berlin")
        store.set("bob", "location", "Rome")
        assert store.delete("bob", "location")
        got = store.get("alice", "location")
        assert got is not None and got.value == "Berlin"
        assert [e.value for e in store.history("alice", "location")] == ["Berlin"]
        assert store.delete_user("bob") == 1
        assert store.all("bob") == [] and store.history("bob", "location") == []
        assert [e.value for e in store.all("alice")] == ["Berlin"]
        assert store.delete_user("nobody") == 0

    def test_explicit_time_is_used_and_history_is_append_only(self, store: ProfileStore) -> None:
        t1 = datetime(2023, 1, 1, tzinfo=UTC)
        t2 = datetime(2023, 6, 1, tzinfo=UTC)
        store.set("u1", "job", "nurse", at=t1)
        store.set("u1", "job", "doctor", at=t2)
        history = store.history("u1", "job")
        assert [(e.valid_from, e.valid_to) for e in history] == [(t1, t2), (t2, None)]
        with pytest.raises(InvalidInput) as info:
            store.set("u1", "job", "pilot", at=t1)
        assert info.value.field == "at"
        assert [e.value for e in store.history("u1", "job")] == ["nurse", "doctor"]

    def test_a_clock_that_goes_backwards_never_breaks_the_chain(self, profile_backend: ProfileBackend) -> None:
        times = iter([T0, T0 - timedelta(hours=1), T0 - timedelta(hours=2), T0 + timedelta(hours=1)])
        store = profile_backend.make(clock=lambda: next(times))
        store.set("u1", "k", "a")
        store.set("u1", "k", "b")  # clock skew (another process, NTP step): clamp, don't overlap
        store.delete("u1", "k")
        store.set("u1", "k", "c")
        history = store.history("u1", "k")
        assert [e.value for e in history] == ["a", "b", None, "c"]
        assert history_problems(history) == []

    def test_key_cap_raises_capacity_error_and_stores_nothing(self, profile_backend: ProfileBackend,
                                                               clock: FakeClock) -> None:
        store = profile_backend.make(max_keys=3, clock=clock)
        for key in ("a", "b", "c"):
            store.set("u1", key, "v")
        with pytest.raises(CapacityError, match=r"max_keys=3") as info:
            store.set("u1", "d", "v")
        assert "delete a key" in str(info.value)
        assert store.get("u1", "d") is None and store.history("u1", "d") == []
        store.set("u1", "a", "updated")  # updating an existing key is always allowed
        store.set("u2", "d", "v")  # the cap is per user
        store.delete("u1", "b")
        store.set("u1", "d", "v")  # a freed slot can be used
        assert sorted(e.key for e in store.all("u1")) == ["a", "c", "d"]
        with pytest.raises(CapacityError):
            store.set("u1", "b", "back")  # a deleted key counts as new again

    def test_data_survives_reopening_when_persistent(self, profile_backend: ProfileBackend, clock: FakeClock) -> None:
        if not profile_backend.persistent:
            pytest.skip("this backend keeps data only in its own instance")
        first = profile_backend.make(clock=clock)
        first.set("u1", "location", "Berlin")
        first.set("u1", "location", "Paris")
        first.set("u1", "likes", ("tea", "茶"))
        first.close()
        second = profile_backend.make(clock=clock)
        assert [e.value for e in second.history("u1", "location")] == ["Berlin", "Paris"]
        got = second.get("u1", "likes")
        assert got is not None and got.value == ("tea", "茶")

    @pytest.mark.parametrize("bad", BAD_INPUTS, ids=lambda b: b.why)
    def test_bad_input_is_rejected_and_changes_nothing(self, store: ProfileStore, bad: Bad) -> None:
        store.set("u1", "location", "Berlin")
        before = (store.all("u1"), store.history("u1", "location"))
        call: dict[str, Any] = {"user_id": "u1", "key": "location", "value": "Paris", **bad.kwargs}
        with pytest.raises(InvalidInput) as info:
            store.set(call.pop("user_id"), call.pop("key"), call.pop("value"), **call)
        assert info.value.field == bad.field
        assert (store.all("u1"), store.history("u1", "location")) == before
        for user in ("", " u1", "u\n1"):
            with pytest.raises(InvalidInput):
                store.get(user, "location")

    @pytest.mark.parametrize("bad_key", ["", "   ", "a/b", 5])
    def test_bad_keys_are_rejected_by_every_method(self, store: ProfileStore, bad_key: Any) -> None:
        store.set("u1", "location", "Berlin")
        for call in (store.get, store.history, store.delete):
            with pytest.raises(InvalidInput):
                call("u1", bad_key)
        assert [e.value for e in store.history("u1", "location")] == ["Berlin"]
