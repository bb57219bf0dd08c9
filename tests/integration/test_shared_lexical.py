"""RedisItemStore's change feed and SharedLexicalIndex on the real Redis: two "instances"
(separate clients and index objects, one key prefix) stay consistent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
from redis.crc import key_slot
from redis_helpers import REDIS_URL, redis_prefix  # noqa: F401  (fixture)

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.redis.client import connect_redis
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.lexical import SharedLexicalIndex
from hmem.errors import InvalidInput
from hmem.longterm.index_text import lexical_text
from hmem.types import MemoryItem

T0 = datetime(2024, 5, 1, tzinfo=UTC)
TEXTS = [
    "We booked a flight to Lisbon for May",
    "Lunch was ramen again, the spicy one",
    "My sister Anna lives in Berlin",
    "我每天早上喝咖啡",
    "The flight back from Lisbon was delayed",
    "Anna visited us in Lisbon last spring",
]


def item(i: int, text: str, user: str = "u1", **kw: object) -> MemoryItem:
    return MemoryItem(id=f"i{i}", user_id=user, text=text, created_at=T0 + timedelta(minutes=i), **kw)  # type: ignore[arg-type]


@pytest.fixture
def pair(redis_prefix: tuple[redis.Redis, str]) -> Iterator[tuple[RedisItemStore, RedisItemStore]]:  # noqa: F811
    """Two stores on separate connection pools: what two hosts would have."""
    client, prefix = redis_prefix
    other = connect_redis(REDIS_URL)
    try:
        yield RedisItemStore(client, prefix=prefix), RedisItemStore(other, prefix=prefix)
    finally:
        other.close()


def ids(hits: list[object]) -> list[str]:
    return [h.id for h in hits]  # type: ignore[attr-defined]


def test_generation_moves_on_every_change_and_only_then(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, b = pair
    assert a.generation("u1") == 0
    a.put([item(0, TEXTS[0])])
    g1 = b.generation("u1")
    assert g1 != 0
    a.put([item(0, TEXTS[1])])  # a replace is a change
    g2 = b.generation("u1")
    assert g2 == g1 + 1
    assert a.delete("u1", ["nope"]) == 0
    assert b.generation("u1") == g2  # nothing changed
    assert a.delete("u1", ["i0"]) == 1
    g3 = b.generation("u1")
    assert g3 == g2 + 1
    a.put([item(1, TEXTS[1])])
    assert a.delete_user("u1") == 1
    assert b.generation("u1") > g3 + 1  # never goes back, even after delete_user
    assert b.generation("u2") == 0  # users have their own counters


def test_changes_since_names_changed_ids_and_reports_a_pruned_log(redis_prefix: tuple[redis.Redis, str]) -> None:  # noqa: F811
    client, prefix = redis_prefix
    store = RedisItemStore(client, prefix=prefix, change_log_keep=3)
    store.put([item(0, TEXTS[0])])
    g0 = store.generation("u1")
    store.put([item(1, TEXTS[1]), item(2, TEXTS[2])])
    store.delete("u1", ["i0"])
    assert store.changes_since("u1", g0) == (g0 + 2, {"i0", "i1", "i2"})
    assert store.changes_since("u1", g0 + 2) == (g0 + 2, set())
    for n in range(3, 12):
        store.put([item(n, f"note {n}")])
    assert store.changes_since("u1", g0) is None  # older than the log: rebuild
    current = store.generation("u1")
    assert store.changes_since("u1", current - 2) == (current, {"i10", "i11"})


def test_snapshot_is_the_items_of_its_generation(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, _ = pair
    a.put([item(i, t) for i, t in enumerate(TEXTS)])
    gen, items = a.snapshot("u1")
    assert gen == a.generation("u1")
    assert sorted(it.id for it in items) == [f"i{i}" for i in range(len(TEXTS))]


def test_scores_equal_the_reference_index_on_the_same_texts(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, _ = pair
    items = [item(i, t, kind="turn", speaker="Mel", metadata={"previous_turn": "Caroline: any trips?"})
             for i, t in enumerate(TEXTS)]
    a.put(items)
    shared, reference = SharedLexicalIndex(a), MemoryLexicalIndex()
    reference.add_many("u1", [(it.id, lexical_text(it)) for it in items])
    for query in ("flight to Lisbon", "Anna", "咖啡", "Mel trips", "the"):
        assert shared.search("u1", query, k=10) == reference.search("u1", query, k=10)
    assert shared.count("u1") == reference.count("u1") == len(TEXTS)


def test_an_instance_sees_writes_of_another_on_its_next_query(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, b = pair
    lex_a, lex_b = SharedLexicalIndex(a), SharedLexicalIndex(b)
    a.put([item(0, TEXTS[0]), item(1, TEXTS[1])])
    assert ids(lex_b.search("u1", "Lisbon", k=5)) == ["i0"]  # built from the store
    assert lex_b.rebuilds == 1
    # Instance A writes through its store (and its own index, as LongTermStore does).
    a.put([item(4, TEXTS[4])])
    lex_a.add("u1", "i4", TEXTS[4])
    assert set(ids(lex_b.search("u1", "Lisbon", k=5))) == {"i0", "i4"}
    assert (lex_b.rebuilds, lex_b.catch_ups) == (1, 1)  # caught up with one item, no rebuild
    a.put([item(0, "Dinner at a Thai place")])  # replaced text: old terms must go
    a.delete("u1", ["i4"])
    assert ids(lex_b.search("u1", "Lisbon", k=5)) == []
    assert ids(lex_b.search("u1", "Thai dinner", k=5)) == ["i0"]
    assert lex_b.count("u1") == 2
    a.delete_user("u1")  # log emptied: B rebuilds (to nothing)
    assert lex_b.search("u1", "Thai", k=5) == []
    assert lex_b.count("u1") == 0


def test_a_pruned_change_log_falls_back_to_a_rebuild(redis_prefix: tuple[redis.Redis, str]) -> None:  # noqa: F811
    client, prefix = redis_prefix
    writer = RedisItemStore(client, prefix=prefix, change_log_keep=2)
    lex = SharedLexicalIndex(RedisItemStore(client, prefix=prefix, change_log_keep=2))
    writer.put([item(0, TEXTS[0])])
    assert ids(lex.search("u1", "Lisbon", k=5)) == ["i0"]
    for n in range(1, 9):
        writer.put([item(n, f"Lisbon note {n}")])
    writer.delete("u1", ["i0"])
    assert sorted(ids(lex.search("u1", "Lisbon", k=20))) == [f"i{n}" for n in range(1, 9)]
    assert (lex.rebuilds, lex.catch_ups) == (2, 0)


def test_users_stay_isolated(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, b = pair
    a.put([item(0, "alice flew to Lisbon", user="alice"), item(0, "bob flew to Oslo", user="bob")])
    lex = SharedLexicalIndex(b)
    assert ids(lex.search("bob", "Lisbon", k=5)) == []
    assert ids(lex.search("alice", "Lisbon", k=5)) == ["i0"]
    a.delete_user("alice")
    assert ids(lex.search("bob", "Oslo", k=5)) == ["i0"]


def test_multi_user_put_is_one_transaction_and_keys_share_the_user_slot(
    pair: tuple[RedisItemStore, RedisItemStore], redis_prefix: tuple[redis.Redis, str]  # noqa: F811
) -> None:
    a, _ = pair
    client, prefix = redis_prefix
    weird = "we}i{rd:user"
    a.put([item(0, "one", user=weird, source_message_id="m1"), item(1, "two", user="plain")])
    assert (a.count(weird), a.count("plain")) == (1, 1)
    keys = [k.decode() for k in client.scan_iter(match=f"{prefix}:*")]
    weird_keys = [k for k in keys if "we%7Di%7Brd%3Auser" in k]
    assert len(weird_keys) == 6  # items, index, dedup, sources, generation, log
    assert len({key_slot(k.encode()) for k in weird_keys}) == 1


def test_bad_input_is_rejected_and_changes_nothing(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, _ = pair
    a.put([item(0, TEXTS[0])])
    lex = SharedLexicalIndex(a)
    before = (a.generation("u1"), lex.search("u1", "Lisbon", k=5))
    for call in (
        lambda: lex.add("", "d", "text"),
        lambda: lex.add("u1", "d", 5),  # type: ignore[arg-type]
        lambda: lex.add_many("u1", [("d", "x"), ("d", "y")]),
        lambda: lex.search("u1", "Lisbon", k=0),
        lambda: lex.search("u1", "Lisbon", k=5, allowed_ids="i0"),  # type: ignore[arg-type]
        lambda: lex.remove("u1", ""),
        lambda: a.changes_since(" u1", 0),
        lambda: a.generation(""),
    ):
        with pytest.raises(InvalidInput):
            call()
    assert (a.generation("u1"), lex.search("u1", "Lisbon", k=5)) == before


def test_concurrent_writers_and_a_reader_converge(pair: tuple[RedisItemStore, RedisItemStore]) -> None:
    a, b = pair
    lex = SharedLexicalIndex(b)
    stop = threading.Event()

    def write(store: RedisItemStore, start: int) -> None:
        for n in range(start, start + 100):
            store.put([item(n, f"trip number {n} to Lisbon")])
            if n % 3 == 0:
                store.delete("u1", [f"i{n}"])

    def read() -> None:
        while not stop.is_set():
            lex.search("u1", "Lisbon", k=5)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(s, o)) for s, o in ((a, 0), (b, 100))]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    expected = {f"i{n}" for n in range(200) if n % 3}
    assert set(ids(lex.search("u1", "Lisbon", k=500))) == expected
    assert lex.count("u1") == len(expected) == b.count("u1")
