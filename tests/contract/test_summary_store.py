"""Contract suite of the SummaryStore port: every backend must pass all of it.

Adding a backend = one entry in ``BACKENDS`` plus its factory in ``FACTORIES``
(a context manager that yields a fresh, empty store and cleans up after it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from hmem.backends.memory.summaries import MemorySummaryStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.summaries import SqliteSummaryStore
from hmem.errors import InvalidInput
from hmem.protocols import SummaryStore
from hmem.types import SessionSummary


@contextmanager
def _memory(tmp_path: Path) -> Iterator[SummaryStore]:
    yield MemorySummaryStore()


@contextmanager
def _sqlite(tmp_path: Path) -> Iterator[SummaryStore]:
    db = SqliteDatabase(tmp_path / "summaries.db")
    try:
        yield SqliteSummaryStore(db)
    finally:
        db.close()


@contextmanager
def _redis(tmp_path: Path) -> Iterator[SummaryStore]:  # the real Redis on 127.0.0.1:6379, fresh key prefix
    from redis_helpers import redis_client_prefix

    from hmem.backends.redis.summaries import RedisSummaryStore

    with redis_client_prefix() as (client, prefix):
        yield RedisSummaryStore(client, prefix=prefix)


FACTORIES: dict[str, Callable[[Path], AbstractContextManager[SummaryStore]]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "redis": _redis,
}
BACKENDS = ["memory", "sqlite", "redis"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SummaryStore]:
    with FACTORIES[request.param](tmp_path) as backend:
        yield backend


def summary(user: str = "u1", session: str = "s1", **changes: object) -> SessionSummary:
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
    return replace(base, **changes)  # type: ignore[arg-type]


def test_store_implements_the_port(store: SummaryStore) -> None:
    assert isinstance(store, SummaryStore)


def test_missing_summary_is_none(store: SummaryStore) -> None:
    assert store.get("u1", "nope") is None
    assert store.delete("u1", "nope") is False


@pytest.mark.parametrize("method", ["llm", "extractive", "raw"])
def test_round_trip_keeps_every_field(store: SummaryStore, method: str) -> None:
    original = summary(method=method)
    store.put(original)
    assert store.get("u1", "s1") == original


def test_round_trip_of_an_empty_summary_without_watermark(store: SummaryStore) -> None:
    empty = summary(text="", covers_until=None, folded_count=0, tokens=0)
    store.put(empty)
    assert store.get("u1", "s1") == empty


def test_put_overwrites_and_delete_removes(store: SummaryStore) -> None:
    store.put(summary())
    newer = summary(text="User: moved to Bergen.", covers_until="m20", folded_count=20, method="llm")
    store.put(newer)
    assert store.get("u1", "s1") == newer
    assert store.delete("u1", "s1") is True
    assert store.get("u1", "s1") is None
    assert store.delete("u1", "s1") is False


def test_users_and_sessions_are_isolated(store: SummaryStore) -> None:
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


def test_put_if_writes_only_on_the_expected_watermark(store: SummaryStore) -> None:
    first = summary(covers_until="m5", folded_count=5)
    assert store.put_if(first, None) is True
    assert store.put_if(summary(covers_until="m9", folded_count=9), None) is False  # not empty any more
    assert store.put_if(summary(covers_until="m9", folded_count=9), "m4") is False  # stale expectation
    assert store.get("u1", "s1") == first
    second = summary(covers_until="m9", folded_count=9, text="newer")
    assert store.put_if(second, "m5") is True
    assert store.get("u1", "s1") == second


def test_put_if_is_scoped_to_the_user(store: SummaryStore) -> None:
    store.put(summary("alice", "s1", covers_until="m5"))
    # Bob's session with the same id has no summary: his put_if expects None, not alice's m5.
    assert store.put_if(summary("bob", "s1", covers_until="m7"), "m5") is False
    assert store.put_if(summary("bob", "s1", covers_until="m7"), None) is True
    assert store.get("alice", "s1").covers_until == "m5"  # type: ignore[union-attr]


def test_concurrent_put_if_has_exactly_one_winner(store: SummaryStore) -> None:
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
    assert store.get("u1", "s1").text == f"writer {wins[0]}"  # type: ignore[union-attr]


BAD_IDS: list[object] = ["", "   ", " padded", "tab\there", "new\nline", "x" * 300, "\ud800", None, 42, b"u1"]


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_bad_ids_are_rejected_and_change_nothing(store: SummaryStore, bad: object) -> None:
    kept = summary()
    store.put(kept)
    with pytest.raises(InvalidInput) as e1:
        store.get(bad, "s1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as e2:
        store.delete("u1", bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.put(summary(user=bad))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        store.put_if(summary(session=bad), "m10")  # type: ignore[arg-type]
    assert e1.value.field == "user_id" and e2.value.field == "session_id"
    assert store.get("u1", "s1") == kept


BAD_SUMMARIES: dict[str, dict[str, object]] = {
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


@pytest.mark.parametrize("changes", BAD_SUMMARIES.values(), ids=list(BAD_SUMMARIES))
def test_bad_summaries_are_rejected_and_change_nothing(store: SummaryStore, changes: dict[str, object]) -> None:
    kept = summary()
    store.put(kept)
    bad = summary(**changes)
    with pytest.raises(InvalidInput):
        store.put(bad)
    with pytest.raises(InvalidInput):
        store.put_if(bad, "m10")
    assert store.get("u1", "s1") == kept


@pytest.mark.parametrize("not_a_summary", [None, {"user_id": "u1"}, "text"], ids=repr)
def test_put_needs_a_session_summary(store: SummaryStore, not_a_summary: object) -> None:
    with pytest.raises(InvalidInput):
        store.put(not_a_summary)  # type: ignore[arg-type]
    assert store.get("u1", "s1") is None


@pytest.mark.parametrize("bad_expected", ["", " m1", 7], ids=repr)
def test_put_if_rejects_a_bad_expected_watermark(store: SummaryStore, bad_expected: object) -> None:
    kept = summary()
    store.put(kept)
    with pytest.raises(InvalidInput):
        store.put_if(summary(covers_until="m99"), bad_expected)  # type: ignore[arg-type]
    assert store.get("u1", "s1") == kept


def test_updated_at_keeps_its_instant_across_timezones(store: SummaryStore) -> None:
    shanghai = timezone(timedelta(hours=8))
    local = summary(updated_at=datetime(2025, 3, 1, 17, 0, tzinfo=shanghai))
    store.put(local)
    got = store.get("u1", "s1")
    assert got is not None and got.updated_at == local.updated_at


def test_sqlite_summaries_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "durable.db"
    db = SqliteDatabase(path)
    SqliteSummaryStore(db).put(summary())
    db.close()
    db2 = SqliteDatabase(path)
    try:
        assert SqliteSummaryStore(db2).get("u1", "s1") == summary()
    finally:
        db2.close()
