"""The :class:`~hmem.protocols.SummaryStore` contract suite.

Subclass :class:`SummaryStoreContract` and override the ``store`` fixture to yield a
fresh, empty store (and clean up after it).

Example::

    import pytest
    from hmem.testing.contracts import SummaryStoreContract

    class TestMySummaryStore(SummaryStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            yield MySummaryStore(tmp_path / "summaries.db")
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.protocols import SummaryStore
from hmem.types import SessionSummary

__all__ = ["SummaryStoreContract", "summary"]


def summary(user: Any = "u1", session: Any = "s1", **changes: Any) -> SessionSummary:
    """A summary with every field set (CJK and emoji text, microsecond time), changed by ``changes``."""
    base = SessionSummary(
        user_id=user,
        session_id=session,
        text="User: I'm Ada, I fly to Oslo on 2 June 2025.\n用户：我对花生过敏 🥜。",
        covers_until="m10",
        folded_count=10,
        method="extractive",
        updated_at=datetime(2025, 5, 1, 12, 30, 15, 123456, tzinfo=UTC),
        tokens=31,
    )
    return replace(base, **changes)


BAD_IDS: list[Any] = ["", "   ", " padded", "tab\there", "new\nline", "x" * 300, "\ud800", None, 42, b"u1"]
BAD_SUMMARIES: dict[str, dict[str, Any]] = {
    "text not a string": {"text": None},
    "text invalid utf-8": {"text": "bad \udc80 byte"},
    "text oversized": {"text": "x" * 1_000_001},
    "empty watermark": {"covers_until": ""},
    "watermark not a string": {"covers_until": 10},
    "folded but no watermark": {"covers_until": None, "folded_count": 3},
    "negative folded_count": {"folded_count": -1},
    "bool folded_count": {"folded_count": True},
    "float tokens": {"tokens": 3.5},
    "negative tokens": {"tokens": -2},
    "unknown method": {"method": "magic"},
    "naive updated_at": {"updated_at": datetime(2025, 1, 1)},
    "updated_at not a datetime": {"updated_at": "2025-01-01"},
}


class SummaryStoreContract:
    """Behaviour every :class:`~hmem.protocols.SummaryStore` must show: lossless round
    trips, overwrite and delete, the ``put_if`` compare-and-set (one winner under a
    race), isolation, and bad input rejected with nothing changed."""

    @pytest.fixture
    def store(self) -> SummaryStore:
        raise NotImplementedError("override the `store` fixture to yield a fresh, empty SummaryStore")

    def test_store_implements_the_port(self, store: SummaryStore) -> None:
        assert isinstance(store, SummaryStore)

    def test_missing_summary_is_none(self, store: SummaryStore) -> None:
        assert store.get("u1", "nope") is None
        assert store.delete("u1", "nope") is False

    @pytest.mark.parametrize("method", ["llm", "extractive", "raw"])
    def test_round_trip_keeps_every_field(self, store: SummaryStore, method: str) -> None:
        original = summary(method=method)
        store.put(original)
        assert store.get("u1", "s1") == original

    def test_round_trip_of_an_empty_summary_without_watermark(self, store: SummaryStore) -> None:
        empty = summary(text="", covers_until=None, folded_count=0, tokens=0)
        store.put(empty)
        assert store.get("u1", "s1") == empty

    def test_put_overwrites_and_delete_removes(self, store: SummaryStore) -> None:
        store.put(summary())
        newer = summary(text="User: moved to Bergen.", covers_until="m20", folded_count=20, method="llm")
        store.put(newer)
        assert store.get("u1", "s1") == newer
        assert store.delete("u1", "s1") is True
        assert store.get("u1", "s1") is None
        assert store.delete("u1", "s1") is False

    def test_users_and_sessions_are_isolated(self, store: SummaryStore) -> None:
        a = summary("alice", "shared-session-id", text="alice's secret")
        b = summary("bob", "shared-session-id", text="bob's secret")
        other = summary("alice", "other", text="alice other")
        for s in (a, b, other):
            store.put(s)
        assert store.get("alice", "shared-session-id") == a
        assert store.get("bob", "shared-session-id") == b
        assert store.delete("bob", "shared-session-id") is True
        assert store.get("alice", "shared-session-id") == a
        assert store.get("alice", "other") == other
        assert store.get("bob", "other") is None

    def test_put_if_writes_only_on_the_expected_watermark(self, store: SummaryStore) -> None:
        first = summary(covers_until="m5", folded_count=5)
        assert store.put_if(first, None) is True
        assert store.put_if(summary(covers_until="m9", folded_count=9), None) is False  # not empty any more
        assert store.put_if(summary(covers_until="m9", folded_count=9), "m4") is False  # stale expectation
        assert store.get("u1", "s1") == first
        second = summary(covers_until="m9", folded_count=9, text="newer")
        assert store.put_if(second, "m5") is True
        assert store.get("u1", "s1") == second

    def test_put_if_is_scoped_to_the_user(self, store: SummaryStore) -> None:
        store.put(summary("alice", "s1", covers_until="m5"))
        # Bob's session with the same id has no summary: his put_if expects None, not alice's m5.
        assert store.put_if(summary("bob", "s1", covers_until="m7"), "m5") is False
        assert store.put_if(summary("bob", "s1", covers_until="m7"), None) is True
        got = store.get("alice", "s1")
        assert got is not None and got.covers_until == "m5"

    def test_concurrent_put_if_has_exactly_one_winner(self, store: SummaryStore) -> None:
        wins: list[int] = []
        barrier = threading.Barrier(8)

        def racer(i: int) -> None:
            barrier.wait()
            if store.put_if(summary(covers_until=f"m{i}", text=f"writer {i}"), None):
                wins.append(i)

        threads = [threading.Thread(target=racer, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        got = store.get("u1", "s1")
        assert got is not None and got.text == f"writer {wins[0]}"

    @pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
    def test_bad_ids_are_rejected_and_change_nothing(self, store: SummaryStore, bad: Any) -> None:
        kept = summary()
        store.put(kept)
        with pytest.raises(InvalidInput) as e1:
            store.get(bad, "s1")
        with pytest.raises(InvalidInput) as e2:
            store.delete("u1", bad)
        with pytest.raises(InvalidInput):
            store.put(summary(user=bad))
        with pytest.raises(InvalidInput):
            store.put_if(summary(session=bad), "m10")
        assert e1.value.field == "user_id" and e2.value.field == "session_id"
        assert store.get("u1", "s1") == kept

    @pytest.mark.parametrize("changes", BAD_SUMMARIES.values(), ids=list(BAD_SUMMARIES))
    def test_bad_summaries_are_rejected_and_change_nothing(self, store: SummaryStore, changes: dict[str, Any]) -> None:
        kept = summary()
        store.put(kept)
        bad = summary(**changes)
        with pytest.raises(InvalidInput):
            store.put(bad)
        with pytest.raises(InvalidInput):
            store.put_if(bad, "m10")
        assert store.get("u1", "s1") == kept

    @pytest.mark.parametrize("not_a_summary", [None, {"user_id": "u1"}, "text"], ids=repr)
    def test_put_needs_a_session_summary(self, store: SummaryStore, not_a_summary: Any) -> None:
        with pytest.raises(InvalidInput):
            store.put(not_a_summary)
        assert store.get("u1", "s1") is None

    @pytest.mark.parametrize("bad_expected", ["", " m1", 7], ids=repr)
    def test_put_if_rejects_a_bad_expected_watermark(self, store: SummaryStore, bad_expected: Any) -> None:
        kept = summary()
        store.put(kept)
        with pytest.raises(InvalidInput):
            store.put_if(summary(covers_until="m99"), bad_expected)
        assert store.get("u1", "s1") == kept

    def test_updated_at_keeps_its_instant_across_timezones(self, store: SummaryStore) -> None:
        shanghai = timezone(timedelta(hours=8))
        local = summary(updated_at=datetime(2025, 3, 1, 17, 0, tzinfo=shanghai))
        store.put(local)
        got = store.get("u1", "s1")
        assert got is not None and got.updated_at == local.updated_at
