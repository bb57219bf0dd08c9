"""Supersession on every item store (memory, SQLite + Chroma, Redis): a new version of a
claim marks the older one superseded (kept, linked both ways), recall ranks the newer
first, and bad claim metadata is refused without a write. Real embedding model, real
Redis on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from longterm_fixtures import Clock, Stack, make_stack, real_model
from redis_helpers import REDIS_URL, delete_prefix, new_prefix

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.redis.items import RedisItemStore
from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.longterm.store import LongTermConfig, LongTermStore
from hmem.longterm.supersede import CLAIM_KEY, SUPERSEDED_AT, SUPERSEDED_BY, SUPERSEDES
from hmem.providers.embed import CachedEmbedder, MemoryEmbeddingCache

pytestmark = pytest.mark.slow


@pytest.fixture(params=["memory", "sqlite+chroma", "redis"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stack]:
    if request.param != "redis":
        yield make_stack(request.param, tmp_path)
        return
    client = redis.Redis.from_url(REDIS_URL)
    prefix = new_prefix()
    clock = Clock()
    emb = CachedEmbedder(real_model(), MemoryEmbeddingCache())
    store = LongTermStore(RedisItemStore(client, prefix=prefix), MemoryVectorIndex(), MemoryLexicalIndex(), emb,
                          clock=clock)
    try:
        yield Stack(store, emb, clock)
    finally:
        delete_prefix(client, prefix)
        client.close()


def _claim(text: str, key: str) -> dict[str, object]:
    return {"text": text, "kind": "profile", "metadata": {CLAIM_KEY: key}}


def test_a_new_version_supersedes_the_old_which_is_kept_and_linked(stack: Stack) -> None:
    lt, clock = stack.store, stack.clock
    leeds = lt.remember_many("u1", [_claim("Maya lives in Leeds.", "location")])[0].item
    clock.advance(days=30)
    york = lt.remember_many("u1", [_claim("Maya lives in York.", "location")])[0].item
    assert york.metadata[SUPERSEDES] == leeds.id
    old = lt.items.get("u1", [leeds.id])[leeds.id]  # kept, not deleted
    assert old.metadata[SUPERSEDED_BY] == york.id and old.metadata[SUPERSEDED_AT].startswith("2025-07-01")
    assert old.text == "Maya lives in Leeds." and SUPERSEDED_BY not in lt.items.get("u1", [york.id])[york.id].metadata
    hits = lt.recall("u1", "Where does Maya live?", k=2)
    assert [h.item.id for h in hits] == [york.id, leeds.id]
    assert hits[1].boosts["superseded"] == 0.5 and "superseded" not in hits[0].boosts
    # The link survives in the metadata filter of both retrievers (the old item was re-indexed).
    found = lt.recall("u1", "Leeds", k=5, options=RecallOptions(metadata={SUPERSEDED_BY: york.id}))
    assert [h.item.id for h in found] == [leeds.id]


def test_other_claims_other_users_and_unkeyed_facts_are_untouched(stack: Stack) -> None:
    lt = stack.store
    job = lt.remember_many("u1", [_claim("Maya works as a nurse.", "occupation")])[0].item
    plain = lt.remember("u1", "Maya lives in Leeds.").item  # no claim key: never superseded
    theirs = lt.remember_many("u2", [_claim("Tom lives in Bath.", "location")])[0].item
    lt.remember_many("u1", [_claim("Maya lives in York.", "location")])
    for user, item in (("u1", job), ("u1", plain), ("u2", theirs)):
        assert SUPERSEDED_BY not in lt.items.get(user, [item.id])[item.id].metadata


def test_versions_in_one_batch_chain_in_order(stack: Stack) -> None:
    lt = stack.store
    a, b, c = (r.item for r in lt.remember_many("u1", [
        _claim("Maya likes jazz.", "likes=jazz"), _claim("Maya no longer likes jazz.", "likes=jazz"),
        _claim("Maya likes jazz again.", "likes=jazz")]))
    stored = lt.items.get("u1", [a.id, b.id, c.id])
    assert stored[a.id].metadata[SUPERSEDED_BY] == b.id and stored[b.id].metadata[SUPERSEDED_BY] == c.id
    assert stored[c.id].metadata[SUPERSEDES] == b.id and SUPERSEDED_BY not in stored[c.id].metadata


def test_a_version_is_never_merged_into_a_near_duplicate(stack: Stack) -> None:
    lt = stack.store
    first = lt.remember_many("u1", [_claim("Maya lives in Leeds (as of 1 May 2025).", "location")])[0]
    again = lt.remember_many("u1", [_claim("Maya lives in Leeds (as of 2 May 2025).", "location")])[0]
    assert again.status == "stored" and again.item.id != first.item.id  # a restatement: the newer one wins
    assert lt.items.get("u1", [first.item.id])[first.item.id].metadata[SUPERSEDED_BY] == again.item.id


@pytest.mark.parametrize("metadata", [
    {CLAIM_KEY: ""}, {CLAIM_KEY: "   "}, {CLAIM_KEY: 7}, {CLAIM_KEY: "x" * 501}, {SUPERSEDED_BY: "abc"},
    {SUPERSEDES: "abc"}, {SUPERSEDED_AT: "2025-01-01"},
])
def test_bad_claim_metadata_is_refused_and_changes_nothing(stack: Stack, metadata: dict[str, object]) -> None:
    lt = stack.store
    lt.remember_many("u1", [_claim("Maya lives in Leeds.", "location")])
    before = {it.id: it for it in lt.items.find("u1")}
    with pytest.raises(InvalidInput, match="metadata"):
        lt.remember_many("u1", [_claim("Maya lives in York.", "location"),
                                {"text": "Maya lives in Bath.", "metadata": metadata}])
    assert {it.id: it for it in lt.items.find("u1")} == before


def test_superseded_weight_one_turns_the_demotion_off(tmp_path: Path) -> None:
    lt = make_stack("memory", tmp_path, LongTermConfig(superseded_weight=1.0)).store
    lt.remember_many("u1", [_claim("Maya lives in Leeds.", "location")])
    lt.remember_many("u1", [_claim("Maya lives in York.", "location")])
    assert all("superseded" not in h.boosts for h in lt.recall("u1", "Where does Maya live?", k=2))


@pytest.mark.parametrize(("first", "then", "question", "old_place", "new_place"), [
    ("I live in Leeds.", "Big news: we just moved to York!", "Where does the user live?", "Leeds", "York"),
    ("我住在上海。", "我上个月搬到杭州了。", "用户住在哪里？", "上海", "杭州"),
])
def test_memory_add_keeps_the_moved_from_city_as_history_and_recalls_the_new_one_first(
    tmp_path: Path, first: str, then: str, question: str, old_place: str, new_place: str,
) -> None:
    from hmem.memory import Memory

    with Memory.open(tmp_path, embedder=real_model()) as mem:
        mem.add("u1", "s1", [{"role": "user", "content": first, "id": "m1"}])
        added = mem.add("u1", "s2", [{"role": "user", "content": then, "id": "m2"}])
        new = next(f.item for f in added.facts if f.item.metadata.get(CLAIM_KEY) == "profile:user:location")
        assert new_place in new.text and new.source_message_id == "m2" and new.session_id == "s2"
        old = mem.items("u1", ids=[str(new.metadata[SUPERSEDES])])[0]
        assert old_place in old.text and old.metadata[SUPERSEDED_BY] == new.id and old.source_message_id == "m1"
        ranked = [h.item.id for h in mem.recall("u1", question, k=10) if h.item.kind == "profile"]
        assert ranked.index(new.id) < ranked.index(old.id)
        profile = mem.profile.get("u1", "location")
        assert profile is not None and profile.value == new_place


def test_an_imported_conversation_dates_profile_values_and_statements_when_they_were_said(tmp_path: Path) -> None:
    from hmem.memory import Memory

    said = "2023-05-08T10:00:00+00:00"
    with Memory.open(tmp_path, embedder=real_model()) as mem:
        added = mem.add("u1", "s1", [{"role": "user", "content": "I'm Maya and I live in Leeds. I went hiking yesterday.",
                                      "id": "m1", "created_at": said}])
        entry = mem.profile.get("u1", "location")
        assert entry is not None and entry.valid_from.isoformat() == said  # not the time of the import
        texts = sorted(f.item.text for f in added.facts)
        assert "Maya lives in Leeds (as of 8 May 2023)." in texts
        assert "Maya went hiking yesterday (7 May 2023)" in texts


def test_forgetting_the_newest_version_makes_the_one_before_current_again(stack: Stack) -> None:
    lt = stack.store
    leeds = lt.remember_many("u1", [_claim("Maya lives in Leeds.", "location")])[0].item
    york = lt.remember_many("u1", [_claim("Maya lives in York.", "location")])[0].item
    assert lt.forget("u1", [york.id]) == 1
    back = lt.items.get("u1", [leeds.id])[leeds.id]
    assert SUPERSEDED_BY not in back.metadata and SUPERSEDED_AT not in back.metadata
    hit = lt.recall("u1", "Where does Maya live?", k=1)[0]
    assert hit.item.id == leeds.id and "superseded" not in hit.boosts
    assert lt.recall("u1", "Leeds", k=5, options=RecallOptions(metadata={SUPERSEDED_BY: york.id})) == []  # the indexes forgot the mark


def test_forgetting_a_middle_version_links_its_neighbours(stack: Stack) -> None:
    lt = stack.store
    a, b, c = (lt.remember_many("u1", [_claim(f"Maya lives in {city}.", "location")])[0].item
               for city in ("Leeds", "York", "Bath"))
    lt.forget("u1", [b.id])
    stored = lt.items.get("u1", [a.id, c.id])
    assert stored[a.id].metadata[SUPERSEDED_BY] == c.id and stored[c.id].metadata[SUPERSEDES] == a.id
    assert SUPERSEDED_BY not in stored[c.id].metadata  # still the current one
    lt.forget("u1", [c.id])  # then the newest: the first is current again
    assert SUPERSEDED_BY not in lt.items.get("u1", [a.id])[a.id].metadata


def test_forgetting_the_two_newest_at_once_makes_the_first_current(stack: Stack) -> None:
    lt = stack.store
    a, b, c = (lt.remember_many("u1", [_claim(f"Maya lives in {city}.", "location")])[0].item
               for city in ("Leeds", "York", "Bath"))
    assert lt.forget("u1", [c.id, b.id]) == 2
    assert SUPERSEDED_BY not in lt.items.get("u1", [a.id])[a.id].metadata
