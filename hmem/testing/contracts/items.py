"""The :class:`~hmem.protocols.ItemStore` contract suite.

Subclass :class:`ItemStoreContract` and override the ``store`` fixture to yield a
fresh, empty store (and clean up after it).

Example::

    import pytest
    from hmem.testing.contracts import ItemStoreContract

    class TestMyItemStore(ItemStoreContract):
        @pytest.fixture
        def store(self):
            yield MyItemStore()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.protocols import ItemFilter, ItemStore
from hmem.types import MemoryItem

__all__ = ["ItemStoreContract", "item"]

T0 = datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def item(id: str, user: str = "u1", text: str | None = None, **kw: Any) -> MemoryItem:
    """A fact of ``user`` created at a fixed instant (``kw`` sets any other field)."""
    kw.setdefault("created_at", T0)
    kw.setdefault("updated_at", kw["created_at"])
    return MemoryItem(id=id, user_id=user, text=text or f"text of {id}", **kw)


BAD: list[tuple[str, Callable[[ItemStore], object]]] = [
    ("empty user", lambda s: s.put([item("n", user="")])),
    ("empty text", lambda s: s.put([item("n", text="  ")])),
    ("text not str", lambda s: s.put([dataclasses.replace(item("n"), text=5)])),  # type: ignore[arg-type]
    ("lone surrogate", lambda s: s.put([item("n", text="bad \udcff")])),
    ("importance > 1", lambda s: s.put([item("n", importance=1.5)])),
    ("importance NaN", lambda s: s.put([item("n", importance=float("nan"))])),
    ("metadata nested", lambda s: s.put([item("n", metadata={"x": {"y": 1}})])),
    ("naive datetime", lambda s: s.put([item("n", created_at=datetime(2024, 1, 1))])),
    ("not an item", lambda s: s.put([{"id": "n"}])),  # type: ignore[list-item]
    ("good then bad in one batch", lambda s: s.put([item("ok"), item("n", kind="")])),
    ("ids as string", lambda s: s.get("u1", "keep")),
    ("whitespace user", lambda s: s.count(" u1")),
    ("delete with empty id", lambda s: s.delete("u1", [""])),
]


class ItemStoreContract:
    """Behaviour every :class:`~hmem.protocols.ItemStore` must show: exact round trips,
    replace by id, every :class:`~hmem.protocols.ItemFilter` condition, large id
    filters, normalized duplicate lookup, isolation, and bad input rejected with
    nothing changed."""

    @pytest.fixture
    def store(self) -> ItemStore:
        raise NotImplementedError("override the `store` fixture to yield a fresh, empty ItemStore")

    def test_satisfies_protocol(self, store: ItemStore) -> None:
        assert isinstance(store, ItemStore)

    def test_round_trip_is_exact(self, store: ItemStore) -> None:
        original = item(
            "i1", text="我住在上海 — emoji 🎉", kind="preference", importance=0.75, session_id="s1",
            source_message_id="m1", speaker="user", metadata={"b": True, "n": 1, "f": 1.5, "s": "x", "z": None},
            created_at=T0, updated_at=T0 + timedelta(microseconds=1),
        )
        store.put([original])
        got = store.get("u1", ["i1"])["i1"]
        assert got == original
        assert type(got.metadata["b"]) is bool and type(got.metadata["n"]) is int

    def test_put_replaces_by_id(self, store: ItemStore) -> None:
        store.put([item("i1", text="old")])
        store.put([item("i1", text="new")])
        assert store.count("u1") == 1
        assert store.get("u1", ["i1"])["i1"].text == "new"

    def test_get_ignores_missing_ids(self, store: ItemStore) -> None:
        store.put([item("a"), item("b")])
        assert set(store.get("u1", ["a", "zzz", "b", "a"])) == {"a", "b"}
        assert store.get("u1", []) == {}

    def test_filters(self, store: ItemStore) -> None:
        store.put([
            item("a", kind="fact", session_id="s1", created_at=T0, metadata={"topic": "food", "pinned": True}),
            item("b", kind="turn", session_id="s1", created_at=T0 + timedelta(days=1), source_message_id="m-b"),
            item("c", kind="event", session_id="s2", created_at=T0 + timedelta(days=2), metadata={"topic": "work"}),
            item("d", kind="fact", created_at=T0 + timedelta(days=3), metadata={"pinned": 1}),
        ])

        def ids(**kw: Any) -> list[str]:
            flt = ItemFilter(**kw)
            found = [it.id for it in store.find("u1", flt)]
            assert set(found) == store.find_ids("u1", flt)
            return found

        assert ids() == ["a", "b", "c", "d"]  # oldest first
        assert ids(kinds=frozenset({"fact"})) == ["a", "d"]
        assert ids(kinds=frozenset({"fact", "event"})) == ["a", "c", "d"]
        assert ids(session_id="s1") == ["a", "b"]
        assert ids(since=T0 + timedelta(days=1)) == ["b", "c", "d"]
        assert ids(until=T0 + timedelta(days=1)) == ["a", "b"]  # inclusive bounds
        assert ids(since=T0 + timedelta(days=1), until=T0 + timedelta(days=2)) == ["b", "c"]
        assert ids(metadata={"topic": "food"}) == ["a"]
        assert ids(metadata={"pinned": True}) == ["a"]  # True is not 1
        assert ids(metadata={"pinned": 1}) == ["d"]
        assert ids(ids=frozenset({"a", "c", "zz"})) == ["a", "c"]
        assert ids(source_message_ids=frozenset({"m-b"})) == ["b"]
        assert ids(kinds=frozenset({"fact"}), session_id="s1", metadata={"topic": "food"}) == ["a"]
        assert ids(kinds=frozenset()) == []
        assert [it.id for it in store.find("u1", limit=2)] == ["a", "b"]

    def test_large_id_filter_is_chunked(self, store: ItemStore) -> None:
        store.put([item(f"i{n}") for n in range(1200)])
        wanted = frozenset(f"i{n}" for n in range(0, 1200, 2))
        assert store.find_ids("u1", ItemFilter(ids=wanted)) == set(wanted)
        assert len(store.get("u1", sorted(wanted))) == 600
        assert store.delete("u1", sorted(wanted)) == 600
        assert store.count("u1") == 600

    def test_find_duplicate_uses_normalized_text_per_user_and_kind(self, store: ItemStore) -> None:
        store.put([item("a", text="I like  Green Tea."), item("b", user="u2", text="I like green tea")])
        for spelling in ("i like green tea", "I LIKE GREEN TEA!!"):
            found = store.find_duplicate("u1", "fact", spelling)
            assert found is not None and found.id == "a", spelling
        assert store.find_duplicate("u1", "preference", "I like green tea") is None
        assert store.find_duplicate("u1", "fact", "I like black tea") is None
        assert store.find_duplicate("u3", "fact", "I like green tea") is None

    def test_users_are_isolated(self, store: ItemStore) -> None:
        store.put([item("same", user="alice", text="alice secret"), item("same", user="bob", text="bob secret")])
        assert store.get("bob", ["same"])["same"].text == "bob secret"
        assert [it.text for it in store.find("bob")] == ["bob secret"]
        assert store.delete("bob", ["same"]) == 1
        assert store.get("alice", ["same"])["same"].text == "alice secret"
        store.put([item("x", user="bob")])
        assert store.delete_user("alice") == 1
        assert (store.count("alice"), store.count("bob")) == (0, 1)

    def test_delete_counts_only_existing(self, store: ItemStore) -> None:
        store.put([item("a"), item("b")])
        assert store.delete("u1", ["a", "a", "zz"]) == 1
        assert store.delete("u1", []) == 0
        assert store.delete_user("nobody") == 0

    @pytest.mark.parametrize(("label", "call"), BAD, ids=[b[0] for b in BAD])
    def test_bad_input_is_rejected_and_changes_nothing(self, store: ItemStore, label: str,
                                                       call: Callable[[ItemStore], object]) -> None:
        store.put([item("keep")])
        with pytest.raises(InvalidInput):
            call(store)
        assert [it.id for it in store.find("u1")] == ["keep"], label
