"""The Memory facade end to end on the embedded default (SQLite + Chroma
PersistentClient + the real MiniLM model), plus its error handling.

Bad inputs tried (each raises InvalidInput and leaves the session unchanged):
an unknown role, a non-string content, an empty user id, a reserved message id,
a duplicate id within the batch, a batch that is a dict / None / a number, a
non-string query, an empty system prompt; ``retrieve`` with an unknown retriever or k=0.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hmem.aio import AsyncMemory
from hmem.build import build_parts
from hmem.config import Settings
from hmem.errors import BudgetError, InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.memory import SYSTEM_PROMPT_ID, Memory
from hmem.providers.embed import SentenceTransformerEmbedder

pytestmark = pytest.mark.slow

FILLER_TOPICS = [
    "the weather this week", "a podcast about volcanoes", "my running shoes", "a new pasta recipe",
    "the train timetable", "a board game night", "fixing the bike chain", "a documentary on bees",
    "repainting the kitchen", "a chess opening", "the neighbour's garden", "a sci-fi novel",
]


@pytest.fixture(scope="module")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()  # the packaged model, loaded once for the module


@pytest.fixture
def mem(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[Memory]:
    # A small buffer so that session 1 is compacted: its early turns leave the buffer.
    memory = Memory.open(tmp_path / "data", embedder=embedder, buffer_tokens=400, summary_min_messages=6,
                         summary_cap_tokens=120)
    yield memory
    memory.close()


def _chat(mem: Memory, session: str, user_text: str, reply: str) -> None:
    mem.add("u1", session, [{"role": "user", "content": user_text}, {"role": "assistant", "content": reply}])


def _fill_session(mem: Memory, session: str, offset: int) -> None:
    for i, topic in enumerate(FILLER_TOPICS):
        _chat(mem, session, f"Let's talk about {topic} for a moment, item {offset + i}.",
              f"Sure, {topic} is a fine subject; here are some thoughts number {offset + i}.")


def test_fact_from_session_1_is_recalled_into_session_6(mem: Memory) -> None:
    _chat(mem, "s1", "My sister Ingrid works as a marine biologist in Tromsø.", "That sounds like fascinating work!")
    _fill_session(mem, "s1", 0)
    for n in range(2, 6):
        _fill_session(mem, f"s{n}", n * 100)

    s1_buffer = " ".join(m.text for m in mem.history("u1", "s1"))
    assert "Ingrid" not in s1_buffer, "the fact must have left session 1's buffer for this test to mean anything"
    summary = mem.summary("u1", "s1")
    assert summary is not None and summary.folded_count > 0

    mem.add("u1", "s6", [{"role": "user", "content": "What does my sister do for a living?"}])
    ctx = mem.context("u1", "s6", model="gpt-4o-mini")
    recalled = [i for i in ctx.report.items if i.tier == "recalled" and i.kept]
    assert recalled, ctx.report.to_dict()
    system_text = ctx.messages[0]["content"]
    assert "marine biologist" in system_text
    assert "s1" in system_text  # recalled items carry their session so the model can place them
    assert ctx.tokens <= ctx.report.budget


def test_export_import_gives_identical_context(mem: Memory, tmp_path: Path, embedder: Any) -> None:
    mem.set_system_prompt("u1", "s1", "You are a concise assistant.")
    _chat(mem, "s1", "I live in Berlin and I love rock climbing.", "Noted!")
    _fill_session(mem, "s1", 0)
    mem.remember("u1", "Allergic to peanuts", kind="fact", importance=0.9)
    mem.profile.set("u1", "favourite_colour", "green")
    mem.add("u1", "s1", [{"role": "user", "content": "Any ideas for a weekend trip with climbing?"}])
    before = mem.context("u1", "s1", model="gpt-4o-mini", budget=3000)

    path = tmp_path / "u1.jsonl"
    lines = mem.export_user("u1", path)
    assert lines > 10
    other = Memory.open(tmp_path / "fresh", embedder=embedder, buffer_tokens=400, summary_min_messages=6,
                        summary_cap_tokens=120)
    try:
        assert other.import_user(path) == "u1"
        after = other.context("u1", "s1", model="gpt-4o-mini", budget=3000)
        assert after.messages == before.messages
        assert after.report.to_dict() == before.report.to_dict()
        with pytest.raises(InvalidInput, match="already has data"):
            other.import_user(path)
    finally:
        other.close()


def test_system_prompt_is_stored_used_and_overridable(mem: Memory) -> None:
    mem.set_system_prompt("u1", "s1", "You are a pirate.")
    _fill_session(mem, "s1", 0)  # compaction runs; the stored prompt must survive it
    assert mem.history("u1", "s1")[0].id == SYSTEM_PROMPT_ID
    mem.add("u1", "s1", [{"role": "user", "content": "Hello?"}])
    assert mem.context("u1", "s1").messages[0]["content"].startswith("You are a pirate.")
    assert mem.context("u1", "s1", system_prompt="Be brief.").messages[0]["content"].startswith("Be brief.")
    mem.set_system_prompt("u1", "s1", None)
    assert all(m.id != SYSTEM_PROMPT_ID for m in mem.history("u1", "s1"))


def test_profile_is_extracted_and_isolated_between_users(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "I live in Berlin."}])
    mem.add("u1", "s2", [{"role": "user", "content": "I moved to Paris last month."}])
    assert mem.profile.get("u1", "location").value == "Paris"  # type: ignore[union-attr]
    assert [e.value for e in mem.profile.history("u1", "location")] == ["Berlin", "Paris"]
    mem.add("u2", "s1", [{"role": "user", "content": "What is a good book?"}])
    assert mem.profile.all("u2") == []
    ctx = mem.context("u2", "s1")
    assert "Paris" not in str(ctx.messages) and "Berlin" not in str(ctx.messages)
    hits = mem.recall("u2", "where do I live", k=5)
    assert hits and all(h.item.user_id == "u2" for h in hits)
    assert not any("Berlin" in h.item.text or "Paris" in h.item.text for h in hits)


def test_bad_input_changes_nothing(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "first"}])
    before = (mem.history("u1", "s1"), mem.session_infos("u1"))  # infos carry the version
    bad_batches: list[Any] = [
        [{"role": "wizard", "content": "x"}],
        [{"role": "user", "content": 3}],
        [{"role": "user", "content": "ok"}, {"role": "user", "content": ["not", "text"]}],
        [{"role": "user", "content": "x", "id": SYSTEM_PROMPT_ID}],
        [{"role": "user", "content": "a", "id": "dup"}, {"role": "user", "content": "b", "id": "dup"}],
        {"role": "user", "content": "not a list"},
        None,
        42,
    ]
    for batch in bad_batches:
        with pytest.raises(InvalidInput):
            mem.add("u1", "s1", batch)
    with pytest.raises(InvalidInput):
        mem.add("", "s1", [{"role": "user", "content": "x"}])
    with pytest.raises(InvalidInput):
        mem.context("u1", "s1", query=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        mem.set_system_prompt("u1", "s1", "   ")
    assert (mem.history("u1", "s1"), mem.session_infos("u1")) == before


def test_budget_error_when_turn_cannot_fit(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "word " * 400}])
    with pytest.raises(BudgetError) as info:
        mem.context("u1", "s1", budget=100)
    assert info.value.budget == 100 and info.value.required > 100
    cut = mem.context("u1", "s1", budget=100, truncate_current_turn=True)
    assert cut.tokens <= 100 and "truncated by hmem" in str(cut.messages)


def test_forget_user_erases_every_tier(mem: Memory) -> None:
    _chat(mem, "s1", "My name is Ann and I live in Oslo.", "Hi Ann!")
    mem.remember("u1", "Likes jazz")
    counts = mem.forget_user("u1")
    assert counts["sessions"] == 1 and counts["profile_keys"] >= 1 and counts["items"] >= 1
    assert mem.stats("u1")["items"] == 0 and [i.session_id for i in mem.session_infos("u1")] == [] and mem.profile.all("u1") == []


def test_background_compaction_loses_nothing(tmp_path: Path, embedder: Any) -> None:
    memory = Memory.open(tmp_path / "bg", embedder=embedder, buffer_tokens=300, summary_min_messages=4,
                         compaction="background", extract_facts=False, archive_turns="on_evict")
    try:
        ids = []
        for i in range(60):
            result = memory.add("u1", "s1", [{"role": "user", "content": f"note number {i} about topic {i % 7}"}])
            ids.extend(result.message_ids)
        assert memory.flush(60)
        buffered = {m.id for m in memory.history("u1", "s1")}
        archived = {it.source_message_id for it in memory.items("u1") if it.kind == "turn"}
        assert buffered | archived == set(ids)
        assert not buffered & archived or memory.summary("u1", "s1") is not None
    finally:
        memory.close()


def test_async_memory_wraps_the_same_logic(tmp_path: Path, embedder: Any) -> None:
    async def scenario() -> tuple[list[str], str]:
        amem = AsyncMemory.open(tmp_path / "async", embedder=embedder, vectors="memory")
        async with amem:
            await amem.add("u1", "s1", [{"role": "user", "content": "I live in Lisbon."}])
            await amem.profile.set("u1", "pet", "cat")
            ctx = await amem.context("u1", "s1")
            return [m["role"] for m in ctx.messages], str(ctx.messages)

    roles, text = asyncio.run(scenario())
    assert roles[-1] == "user" and "Lisbon" in text and "cat" in text


def test_an_expired_session_takes_its_summary_out_of_the_context(tmp_path: Path, embedder: Any) -> None:
    memory = Memory.open(tmp_path / "ttl", embedder=embedder, vectors="memory", buffer_tokens=200,
                         summary_min_messages=4, session_ttl_s=1.0)
    try:
        for i in range(12):
            _chat(memory, "s1", f"Tell me about the harbour of Bergen, detail {i}.", f"Detail {i} about Bergen.")
        assert memory.summary("u1", "s1") is not None  # compaction wrote a summary
        assert "Summary" in memory.context("u1", "s1", query="Bergen").messages[0]["content"]
        time.sleep(1.3)  # the session expires; the SQLite summary store has no TTL of its own
        assert memory.history("u1", "s1") == []
        assert "Summary" not in str(memory.context("u1", "s1", query="Bergen").messages)
    finally:
        memory.close()


def test_items_by_filter_and_by_id_and_one_retriever_alone(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "I adopted a grey cat named Pixel.", "id": "c1"},
                         {"role": "assistant", "content": "Pixel is a lovely name.", "id": "c2"}])
    mem.remember("u1", "Prefers window seats on trains", kind="preference")
    turns = mem.items("u1", kinds="turn")
    assert sorted(it.source_message_id or "" for it in turns) == ["c1", "c2"]
    assert [it.source_message_id for it in mem.items("u1", source_message_id="c1", kinds=["turn"])] == ["c1"]
    assert {it.session_id for it in mem.items("u1", session_id="s1")} == {"s1"}
    pref = mem.items("u1", kinds="preference")[0]
    wanted = [pref.id, "no-such-id", turns[0].id]
    assert [it.id for it in mem.items("u1", ids=wanted)] == [pref.id, turns[0].id]  # given order, unknown skipped
    assert mem.items("u2", ids=wanted) == []  # another user's ids reach nothing
    for one in ("lexical", "dense"):  # one retriever alone: its own ranking, no stage boosts
        hits = mem.recall("u1", "grey cat Pixel", 2, RecallOptions(fusion=one))  # type: ignore[arg-type]
        assert "c1" in {h.item.source_message_id for h in hits}, one
        assert all(not h.boosts for h in hits), one
        assert all((h.dense_rank is None) == (one == "lexical") for h in hits), one
    assert not hasattr(mem, "retrieve")  # an eval-only door is not on the facade
    before = mem.stats("u1")
    # Tried: an unknown fusion name, k=0 with a single retriever.
    with pytest.raises(InvalidInput) as info:
        RecallOptions(fusion="hybrid")  # type: ignore[arg-type]
    assert info.value.field == "fusion"
    with pytest.raises(InvalidInput) as info:
        mem.recall("u1", "cat", 0, RecallOptions(fusion="dense"))
    assert info.value.field == "k"
    assert mem.stats("u1") == before


class HangingProfile:
    """A profile store whose reads hang, like a backend that accepts a connection and never answers."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def get(self, user_id: str, key: str) -> Any:
        time.sleep(3)
        return self.inner.get(user_id, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_readiness_names_every_backend_and_gives_up_on_a_hung_one(tmp_path: Path, embedder: Any) -> None:
    parts = build_parts(Settings.from_env({}, data_dir=str(tmp_path), vectors="memory"), embedder=embedder)
    with Memory(replace(parts, profile=HangingProfile(parts.profile))) as memory:
        started = time.perf_counter()
        ready = memory.readiness(timeout_s=0.3)
        elapsed = time.perf_counter() - started
    assert elapsed < 2.0, f"readiness waited {elapsed:.1f} s for a hung backend"
    assert list(ready) == ["sessions", "summaries", "profile", "items", "vectors", "lexical", "jobs"]
    assert ready["jobs"].backend == "SqliteJobQueue" and ready["jobs"].detail is None  # nothing waits
    assert ready["profile"].ok is False and ready["profile"].error == "no answer within 0.3 s"
    assert ready["profile"].backend == "HangingProfile"
    assert all(r.ok for tier, r in ready.items() if tier != "profile"), ready
    assert ready["sessions"].backend == "SqliteSessionStore" and ready["vectors"].backend == "MemoryVectorIndex"
