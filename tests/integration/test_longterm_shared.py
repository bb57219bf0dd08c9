"""Two app instances on two "hosts" share one user's long-term memory.

Each instance's parts are built by :func:`hmem.build.build_parts` from its own settings,
as a deployment would: its own local data dir (SQLite: sessions, embedding cache), items in
the shared Redis (``items = "redis://…"``), and one shared vector index (a single
MemoryVectorIndex object standing in for a Chroma server). The real embedding model.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis_helpers import REDIS_URL, delete_prefix, new_prefix

from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.lexical import SharedLexicalIndex
from hmem.build import MemoryParts, build_parts
from hmem.config import Settings
from hmem.longterm.options import RecallOptions
from hmem.longterm.store import LongTermStore
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.types import Message

pytestmark = pytest.mark.slow

USER = "ingrid"


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()  # the packaged MiniLM, loaded once for the module


@pytest.fixture
def apps(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[tuple[MemoryParts, MemoryParts]]:
    prefix = new_prefix()
    vectors = MemoryVectorIndex()  # one object = one vector server both hosts talk to
    built: list[MemoryParts] = []
    try:
        for host in ("host-a", "host-b"):
            settings = Settings.from_env({
                "HMEM_DATA_DIR": str(tmp_path / host), "HMEM_REDIS_PREFIX": prefix, "HMEM_VECTORS": "memory",
            }, items=REDIS_URL, sessions="sqlite")  # tuning settings: keywords, not variables
            built.append(build_parts(settings, embedder=embedder, vectors=vectors))
        yield built[0], built[1]
    finally:
        for parts in built:
            for close in parts.on_close:
                close()
        client = redis.Redis.from_url(REDIS_URL)
        delete_prefix(client, prefix)
        client.close()


def lt(parts: MemoryParts) -> LongTermStore:
    return parts.longterm


def test_the_stack_is_shared_items_and_a_shared_lexical_cache(apps: tuple[MemoryParts, MemoryParts]) -> None:
    a, b = apps
    assert isinstance(lt(a).items, RedisItemStore) and isinstance(lt(a).lexical, SharedLexicalIndex)
    assert lt(a).lexical is not lt(b).lexical  # each host has its own BM25 cache


def test_facts_and_turns_written_through_a_are_recalled_through_b(apps: tuple[MemoryParts, MemoryParts]) -> None:
    a, b = apps
    # B has already served this user, so its caches exist before A writes.
    lt(a).remember(USER, "My sister Anna lives in Berlin.")
    assert lt(b).recall(USER, "Where does my sister live?", k=1)[0].item.text == "My sister Anna lives in Berlin."
    lt(a).remember(USER, "I am allergic to peanuts.", kind="preference")
    archived = lt(a).archive_turns(USER, "trip", [
        Message(role="user", content="We booked the flight to Lisbon for the 12th of May.", id="m1"),
        Message(role="assistant", content="Great, I noted the Lisbon flight.", id="m2"),
    ])
    assert len(archived.stored) == 2

    hits = lt(b).recall(USER, "peanut allergy", k=3)
    assert hits[0].item.text == "I am allergic to peanuts."
    assert hits[0].lexical_rank == 1 and hits[0].dense_rank == 1
    turn = lt(b).recall(USER, "When is the flight to Lisbon?", k=2, options=RecallOptions(kinds="turn"))
    assert turn[0].item.source_message_id == "m1"
    assert turn[0].lexical_rank is not None and turn[0].dense_rank is not None
    # Exact dedup sees the other host's facts too.
    assert lt(b).remember(USER, "i am allergic to peanuts", kind="preference").status == "skipped"
    assert lt(a).count(USER) == lt(b).count(USER) == 4


def test_forget_through_b_disappears_from_a_at_once(apps: tuple[MemoryParts, MemoryParts]) -> None:
    a, b = apps
    kept = lt(a).remember(USER, "My favourite food is sushi.").item
    doomed = lt(a).remember(USER, "My favourite drink is sake with sushi.").item
    assert {h.item.id for h in lt(a).recall(USER, "sushi", k=5)} == {kept.id, doomed.id}  # A caches both
    assert lt(b).forget(USER, [doomed.id]) == 1
    after = lt(a).recall(USER, "sushi", k=5)
    assert [h.item.id for h in after] == [kept.id]
    # Not merely filtered out by the item store: A's own BM25 cache dropped it.
    assert [h.id for h in lt(a).lexical.search(USER, "sake sushi", k=5)] == [kept.id]
    assert lt(b).forget(USER, all=True) == 1
    assert lt(a).recall(USER, "sushi", k=5) == []
    assert lt(a).lexical.count(USER) == 0


def test_concurrent_archive_of_the_same_turns_stores_each_once(apps: tuple[MemoryParts, MemoryParts]) -> None:
    a, b = apps
    turns = [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"Turn {i}: the Lisbon trip, day {i}.",
                id=f"t{i}")
        for i in range(12)
    ]
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def archive(parts: MemoryParts) -> None:
        try:
            start.wait()
            lt(parts).archive_turns(USER, "trip", turns)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=archive, args=(m,)) for m in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    stored = lt(a).items.find(USER)
    assert sorted(it.source_message_id or "" for it in stored) == sorted(m.id for m in turns)
    assert lt(a).count(USER) == lt(a).vectors.count(USER) == 12
    assert lt(a).lexical.count(USER) == lt(b).lexical.count(USER) == 12
    assert lt(b).recall(USER, "Lisbon trip day 7", k=1)[0].item.source_message_id == "t7"
