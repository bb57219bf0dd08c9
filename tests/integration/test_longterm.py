"""LongTermStore end to end with the real embedding model, on the all-memory stack and
on SQLite + Chroma embedded + SQLite BM25."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from longterm_fixtures import Stack, make_stack

from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.longterm.store import LongTermConfig
from hmem.types import Message, ToolCall

pytestmark = pytest.mark.slow

STACKS = ["memory", "sqlite+chroma"]


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    return make_stack(request.param, tmp_path)


PARAPHRASES = [
    ["I live in Berlin.", "i live in berlin", "I live in Berlin, Germany."],
    ["My favorite food is sushi.", "My favourite food is sushi.", "my favorite food is sushi!"],
    ["I am allergic to peanuts.", "I'm allergic to peanuts.", "I am allergic to peanuts"],
    ["My sister's name is Anna.", "My sister is named Anna.", "My sister's name is Anna"],
    ["I work as a nurse at the city hospital.", "I work as a nurse in the city hospital.",
     "I'm working as a nurse at the city hospital."],
]


def test_fifteen_paraphrases_of_five_facts_leave_five_to_seven_items(stack: Stack) -> None:
    results = [stack.store.remember("u1", text) for group in PARAPHRASES for text in group]
    n = stack.store.count("u1")
    assert 5 <= n <= 7, [(r.status, r.item.text) for r in results]
    assert stack.counts("u1") == (n, n, n)
    assert {r.status for r in results} == {"stored", "updated", "skipped"}
    # every fact is still recallable
    for group in PARAPHRASES:
        assert stack.store.recall("u1", group[0], k=1)[0].dense_score > 0.9  # type: ignore[operator]


def test_remember_many_dedups_within_the_batch_too(stack: Stack) -> None:
    texts = [t for group in PARAPHRASES for t in group]
    results = stack.store.remember_many("u1", texts)
    assert [r.status for r in results].count("stored") == stack.store.count("u1") <= 7
    assert stack.counts("u1")[0] == stack.counts("u1")[1] == stack.counts("u1")[2]
    # a skipped in-batch twin reports the item it duplicates
    assert results[1].status == "skipped" and results[1].item.id == results[0].item.id


def test_exact_and_near_duplicates(stack: Stack) -> None:
    lt = stack.store
    first = lt.remember("u1", "I'm allergic to peanuts.", importance=0.4, metadata={"a": 1})
    again = lt.remember("u1", "i'm ALLERGIC to peanuts")
    assert (first.status, again.status, again.item.id) == ("stored", "skipped", first.item.id)
    near = lt.remember("u1", "I am allergic to peanuts.", importance=0.8, metadata={"b": 2})
    assert near.status == "updated" and near.item.id == first.item.id
    assert near.similarity is not None and near.similarity >= 0.95
    stored = lt.items.get("u1", [first.item.id])[first.item.id]
    # the first wording stays (policy "keep"); importance is the max, metadata merged
    assert stored.text == "I'm allergic to peanuts." and stored.importance == 0.8
    assert dict(stored.metadata) == {"a": 1, "b": 2} and stored.updated_at >= stored.created_at
    assert stack.counts("u1") == (1, 1, 1)
    assert [h.item.id for h in lt.recall("u1", "peanuts", k=5, options=RecallOptions(metadata={"b": 2}))] == [first.item.id]
    # other kinds and other users are never merged
    assert lt.remember("u1", "I am allergic to peanuts.", kind="preference").status == "stored"
    assert lt.remember("u2", "I am allergic to peanuts.").status == "stored"
    assert stack.store.count("u1") == 2


def test_near_duplicate_policy_replace_takes_the_new_wording(tmp_path: Path) -> None:
    stack = make_stack("memory", tmp_path, LongTermConfig(near_duplicate_policy="replace"))
    first = stack.store.remember("u1", "I'm allergic to peanuts.").item
    stack.store.remember("u1", "I am allergic to peanuts.")
    assert stack.store.items.get("u1", [first.id])[first.id].text == "I am allergic to peanuts."
    assert stack.store.recall("u1", "allergic", k=1)[0].item.text == "I am allergic to peanuts."


def test_near_duplicate_threshold_is_configurable(tmp_path: Path) -> None:
    stack = make_stack("memory", tmp_path, LongTermConfig(near_duplicate_threshold=None))
    stack.store.remember("u1", "I'm allergic to peanuts.")
    assert stack.store.remember("u1", "I am allergic to peanuts.").status == "stored"
    strict = make_stack("memory", tmp_path / "strict", LongTermConfig(near_duplicate_threshold=0.999))
    strict.store.remember("u1", "I'm allergic to peanuts.")
    assert strict.store.remember("u1", "I am allergic to peanuts.").status == "stored"
    # However low the threshold, a fact in other words is not merged: "Germany" would be lost.
    loose = make_stack("memory", tmp_path / "loose", LongTermConfig(near_duplicate_threshold=0.5))
    loose.store.remember("u1", "I live in Berlin.")
    assert loose.store.remember("u1", "I live in Berlin, Germany.").status == "stored"
    assert loose.store.remember("u1", "I LIVE IN BERLIN!!").status in ("updated", "skipped")


def test_archive_turns_verbatim_idempotent_and_traceable(stack: Stack) -> None:
    lt = stack.store
    msgs = [
        Message(role="system", content="You are helpful", id="sys"),
        Message(role="user", content="We adopted a ginger cat called Mochi!", id="m1", name="ann"),
        Message(role="assistant", content=None, id="m2", tool_calls=(ToolCall(id="c1", name="lookup"),)),
        Message(role="tool", content="{\"ok\": true}", tool_call_id="c1", id="m3"),
        Message(role="assistant", content="ok", id="m4"),
        Message(role="user", content="   ", id="m5"),
        Message(role="user", content="ok", id="m6"),
    ]
    res = lt.archive_turns("u1", "s1", msgs)
    assert [it.source_message_id for it in res.stored] == ["m1", "m4", "m6"]
    assert set(res.skipped) == {"sys", "m2", "m3", "m5"}
    turn = res.stored[0]
    assert (turn.kind, turn.text, turn.speaker, turn.session_id) == (
        "turn", "We adopted a ginger cat called Mochi!", "ann", "s1")
    assert turn.created_at == msgs[1].created_at
    # identical texts of different turns are both kept (no dedup on turns) …
    assert {it.text for it in res.stored[1:]} == {"ok"}
    # … and archiving the same messages again stores nothing
    again = lt.archive_turns("u1", "s1", msgs)
    assert again.stored == () and {"m1", "m4", "m6"} <= set(again.skipped)
    assert stack.counts("u1") == (3, 3, 3)
    hit = lt.recall("u1", "what is the name of our cat?", k=1)[0]
    assert hit.item.source_message_id == "m1"


def test_every_hit_explains_itself(stack: Stack) -> None:
    lt = stack.store
    lt.remember_many("u1", ["I play the cello in an orchestra", "My cat is named Mochi",
                            "I moved to Lisbon in 2021", "I prefer tea over coffee", "Mochi likes tuna"])
    hits = lt.recall("u1", "cat Mochi", k=5, options=RecallOptions(fusion="rrf"))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].item.text in {"My cat is named Mochi", "Mochi likes tuna"}
    for h in hits:
        expected = sum(1 / (60 + r) for r in (h.lexical_rank, h.dense_rank) if r is not None)
        assert h.fused_score == pytest.approx(expected) == pytest.approx(h.score)
        assert (h.lexical_rank is None) == (h.lexical_score is None)
        assert (h.dense_rank is None) == (h.dense_score is None)
    lex_ranked = sorted((h for h in hits if h.lexical_rank), key=lambda h: h.lexical_rank or 0)
    assert [h.lexical_score for h in lex_ranked] == sorted((h.lexical_score or 0 for h in lex_ranked), reverse=True)
    weighted = lt.recall("u1", "cat Mochi", k=5, options=RecallOptions(fusion="weighted"))
    assert all(0.0 <= (h.fused_score or 0) <= 1.0 for h in weighted)


def test_filters_apply_to_both_retrievers(stack: Stack) -> None:
    lt, clock = stack.store, stack.clock
    lt.remember("u1", "Our trip to Kyoto was in April", kind="event", session_id="s1", metadata={"topic": "travel"})
    clock.advance(days=10)
    lt.remember("u1", "I want to visit Kyoto again", kind="fact", session_id="s2", metadata={"topic": "travel"})
    clock.advance(days=10)
    lt.remember("u1", "Kyoto temples are my favourite", kind="preference", session_id="s2")
    t_mid = clock.now - timedelta(days=15)

    def texts(**kw: Any) -> set[str]:
        return {h.item.text for h in lt.recall("u1", "Kyoto", k=10, options=RecallOptions(**kw))}

    assert len(texts()) == 3
    assert texts(kinds=["event"]) == {"Our trip to Kyoto was in April"}
    assert texts(kinds="preference") == {"Kyoto temples are my favourite"}
    assert texts(session_id="s2") == {"I want to visit Kyoto again", "Kyoto temples are my favourite"}
    assert texts(since=t_mid) == {"I want to visit Kyoto again", "Kyoto temples are my favourite"}
    assert texts(until=t_mid) == {"Our trip to Kyoto was in April"}
    assert texts(since=t_mid, until=t_mid + timedelta(days=6)) == {"I want to visit Kyoto again"}
    assert texts(metadata={"topic": "travel"}, session_id="s2") == {"I want to visit Kyoto again"}
    assert texts(kinds=["turn"]) == set()


def test_recency_and_importance_boosts(stack: Stack) -> None:
    lt, clock = stack.store, stack.clock
    old = lt.remember("u1", "I like jazz music", importance=0.9).item
    clock.advance(days=60)
    new = lt.remember("u1", "I enjoy listening to jazz", importance=0.1).item
    plain = lt.recall("u1", "jazz", k=2, options=RecallOptions(recency_half_life=timedelta(days=7)))
    assert plain[0].item.id == new.id
    assert plain[1].boosts["recency"] == pytest.approx(0.5 ** (60 / 7), rel=1e-3)
    assert plain[1].score == pytest.approx(plain[1].fused_score * plain[1].boosts["recency"])  # type: ignore[operator]
    important = lt.recall("u1", "jazz", k=2, options=RecallOptions(importance_weight=50.0))
    assert important[0].item.id == old.id
    assert important[0].boosts["importance"] == pytest.approx(1 + 50 * 0.9)


def test_mmr_trades_relevance_for_diversity(stack: Stack) -> None:
    lt = stack.store
    lt.remember_many("u1", [
        {"text": "My dog Rex loves long walks in the park", "importance": 0.5},
        {"text": "Rex my dog loves long walks in parks", "kind": "event"},
        {"text": "Every day my dog Rex loves a long walk in the park", "kind": "plan"},
        {"text": "My parrot Kiwi can say hello"},
    ])
    plain = lt.recall("u1", "my dog Rex and his walks", k=3)
    assert "My parrot Kiwi can say hello" not in {h.item.text for h in plain}
    diverse = lt.recall("u1", "my dog Rex and his walks", k=3, options=RecallOptions(mmr_lambda=0.3))
    assert "My parrot Kiwi can say hello" in {h.item.text for h in diverse}
    assert all("mmr" in h.boosts for h in diverse)


def test_forget(stack: Stack) -> None:
    lt, clock = stack.store, stack.clock
    a = lt.remember("u1", "I have a red bicycle", session_id="s1").item
    clock.advance(days=1)
    lt.archive_turns("u1", "s2", [Message(role="user", content="my bike got a flat tyre", id="t1")])
    clock.advance(days=1)
    c = lt.remember("u1", "I bought a helmet", kind="event", session_id="s2").item
    lt.remember("u2", "I have a red bicycle")
    assert lt.forget("u1", [a.id, "unknown"]) == 1
    assert lt.forget("u1", kinds=["turn"]) == 1
    assert [h.item.id for h in lt.recall("u1", "bicycle bike helmet", k=10)] == [c.id]
    assert lt.forget("u1", session_id="s2", before=c.created_at) == 0  # before is exclusive
    assert lt.forget("u1", session_id="s2", before=c.created_at + timedelta(seconds=1)) == 1
    assert stack.counts("u1") == (0, 0, 0)
    lt.remember("u1", "I have a blue car")
    assert lt.forget("u1", all=True) == 1
    assert stack.counts("u1") == (0, 0, 0) and stack.counts("u2") == (1, 1, 1)


def test_retention_cap_removes_lowest_value_and_reports_it(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    stack = make_stack("memory", tmp_path, LongTermConfig(max_items_per_user=3))
    lt = stack.store
    lt.remember("u1", "I speak Portuguese", importance=0.9)
    lt.remember("u1", "The weather was grey", importance=0.1)
    lt.remember("u1", "My passport expires in 2027", importance=0.8)
    with caplog.at_level(logging.WARNING, logger="hmem.longterm.store"):
        res = lt.remember("u1", "I enjoy bouldering", importance=0.5)
    assert res.status == "stored"
    assert [it.text for it in res.evicted] == ["The weather was grey"]
    assert "retention cap 3" in caplog.text
    assert stack.counts("u1") == (3, 3, 3)
    assert all(h.item.text != "The weather was grey" for h in lt.recall("u1", "weather grey", k=5))
    archived = lt.archive_turns("u1", "s1", [Message(role="user", content="hello there, friend", id="x1")])
    assert len(archived.evicted) == 1 and stack.counts("u1") == (3, 3, 3)


def test_write_order_makes_crashes_harmless_and_reindex_repairs(stack: Stack) -> None:
    from hmem.types import MemoryItem

    lt = stack.store
    lt.remember("u1", "I collect vintage stamps")
    # crash after the item store, before the indexes: item exists but is not recallable yet
    lost = MemoryItem(id="lost", user_id="u1", text="I collect old coins", created_at=stack.clock.now)
    lt.items.put([lost])
    # crash after the item store deleted an item, before the indexes did: orphans in both indexes
    vec = stack.embedder.embed(["I collect rare coins"])[0]
    lt.vectors.upsert("u1", ["ghost"], [vec], [{"kind": "fact"}])
    lt.lexical.add("u1", "ghost", "I collect rare coins")
    hits = lt.recall("u1", "coins collection", k=10)
    assert "ghost" not in {h.item.id for h in hits} and "lost" not in {h.item.id for h in hits}
    computed = stack.embedder.computed
    assert lt.reindex("u1") == 2
    # only the never-embedded text was computed; the cache served the other one
    assert stack.embedder.computed == computed + 1
    assert lt.reindex("u1") == 2 and stack.embedder.computed == computed + 1
    assert stack.counts("u1") == (2, 2, 2)
    assert "lost" in {h.item.id for h in lt.recall("u1", "coins collection", k=10)}


def test_a_failed_index_write_rolls_the_item_store_back(tmp_path: Path) -> None:
    # no near-dup lookup, so the first index call of remember_many is the upsert itself
    stack = make_stack("memory", tmp_path, LongTermConfig(near_duplicate_threshold=None))
    lt = stack.store
    kept = lt.remember("u1", "I grow tomatoes on the balcony").item
    # the vector index now holds 2-d vectors for u1: a 384-d upsert fails after the item store write
    lt.vectors.delete_user("u1")
    lt.vectors.upsert("u1", ["old-model"], [[1.0, 0.0]])
    with pytest.raises(InvalidInput, match="dimension"):
        lt.remember_many("u1", ["I speak Finnish", "I grow tomatoes on the balcony!!", "I own a kayak"])
    assert [it.id for it in lt.items.find("u1")] == [kept.id]
    assert lt.lexical.count("u1") == 1
    lt.vectors.delete_user("u1")
    assert lt.reindex("u1") == 1
    assert lt.remember("u1", "I speak Finnish").status == "stored"  # the retry is not a "duplicate"


BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("remember empty user", lambda lt: lt.remember("", "text")),
    ("remember user with newline", lambda lt: lt.remember("u\n1", "text")),
    ("remember empty text", lambda lt: lt.remember("u1", "   ")),
    ("remember bytes text", lambda lt: lt.remember("u1", b"text")),
    ("remember oversized text", lambda lt: lt.remember("u1", "x" * 1_000_001)),
    ("remember lone surrogate", lambda lt: lt.remember("u1", "bad \udcff")),
    ("remember importance 2", lambda lt: lt.remember("u1", "text", importance=2)),
    ("remember importance NaN", lambda lt: lt.remember("u1", "text", importance=float("nan"))),
    ("remember importance bool", lambda lt: lt.remember("u1", "text", importance=True)),
    ("remember empty kind", lambda lt: lt.remember("u1", "text", kind="")),
    ("remember nested metadata", lambda lt: lt.remember("u1", "text", metadata={"a": {"b": 1}})),
    ("remember NaN metadata", lambda lt: lt.remember("u1", "text", metadata={"a": float("inf")})),
    ("remember bad created_at", lambda lt: lt.remember("u1", "text", created_at="yesterday")),
    ("remember_many one bad entry", lambda lt: lt.remember_many("u1", ["good one", {"text": ""}, "good two"])),
    ("remember_many unknown field", lambda lt: lt.remember_many("u1", [{"text": "x", "colour": "red"}])),
    ("remember_many a string", lambda lt: lt.remember_many("u1", "just text")),
    ("archive bad role", lambda lt: lt.archive_turns("u1", "s1", [{"role": "robot", "content": "hi", "id": "r1"}])),
    ("archive empty session", lambda lt: lt.archive_turns("u1", "", [{"role": "user", "content": "hi"}])),
    ("archive duplicate ids", lambda lt: lt.archive_turns("u1", "s1", [{"role": "user", "content": "a", "id": "d"},
                                                                       {"role": "user", "content": "b", "id": "d"}])),
    ("recall k=0", lambda lt: lt.recall("u1", "q", k=0)),
    ("recall k huge", lambda lt: lt.recall("u1", "q", k=10**6)),
    ("recall empty query", lambda lt: lt.recall("u1", "")),
    ("recall bad fusion", lambda lt: lt.recall("u1", "q", options=RecallOptions(fusion="max"))),
    ("recall since after until", lambda lt: lt.recall("u1", "q", options=RecallOptions(since=2_000_000_000, until=1_000_000_000))),
    ("recall negative half-life", lambda lt: lt.recall("u1", "q", options=RecallOptions(recency_half_life=-5))),
    ("recall mmr 1.5", lambda lt: lt.recall("u1", "q", options=RecallOptions(mmr_lambda=1.5))),
    ("recall negative importance weight", lambda lt: lt.recall("u1", "q", options=RecallOptions(importance_weight=-1))),
    ("recall empty kinds", lambda lt: lt.recall("u1", "q", options=RecallOptions(kinds=[]))),
    ("forget without selector", lambda lt: lt.forget("u1")),
    ("forget all plus ids", lambda lt: lt.forget("u1", ["x"], all=True)),
    ("forget ids as string", lambda lt: lt.forget("u1", "abc")),
    ("forget bad before", lambda lt: lt.forget("u1", before="not a date")),
]


@pytest.mark.parametrize(("label", "call"), BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
def test_bad_input_raises_invalid_input_and_changes_nothing(
    tmp_path: Path, label: str, call: Callable[[Any], object]
) -> None:
    stack = make_stack("memory", tmp_path)
    stack.store.remember("u1", "I keep bees on my roof")
    stack.store.archive_turns("u1", "s1", [Message(role="user", content="the bees are fine", id="b1")])
    before = stack.snapshot("u1")
    with pytest.raises(InvalidInput):
        call(stack.store)
    assert stack.snapshot("u1") == before
