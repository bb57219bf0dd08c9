"""``Memory.context`` spends the budget it is given, and stops where relevance stops.

Real write and read path: ``Memory.open`` (SQLite items and BM25, in-process vectors)
with the packaged MiniLM model; facts go in through ``remember``. Asked in a new
session, so the recalled tier may take the room history and summary leave unused.

Bad inputs tried (each raises InvalidInput, nothing changes): relevance_cutoff 1.0,
-0.2, "0.3", True; k -1 and 2.5; relevance_cutoff=1.5 and recall_k=-3 in
settings (ConfigError).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hmem.assembly.assemble import RELEVANCE_CUTOFF
from hmem.build import build_parts
from hmem.config import Settings
from hmem.errors import ConfigError, InvalidInput
from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder

pytestmark = pytest.mark.slow

PLACES = ["Kyoto", "Osaka", "Nara", "Hakone", "Nikko", "Kanazawa", "Hiroshima", "Sapporo", "Sendai", "Fukuoka"]
DOINGS = ["visited a quiet temple", "ate ramen at a tiny counter", "hiked up to a shrine", "took the bullet train",
          "bought a ceramic teapot", "watched the sunset from a tower", "soaked in a hot spring",
          "tried a matcha ceremony", "rented a bicycle", "saw a kabuki play", "walked through bamboo groves",
          "visited the castle grounds"]
UNRELATED = [
    "The plumber replaced the leaking kitchen tap.", "My sister adopted a grey rabbit called Pixel.",
    "Tax forms are due at the end of April.", "The car needs new winter tyres.",
    "Our book club is reading a novel about lighthouse keepers.", "The dentist moved my cleaning to Thursday.",
    "Basil grows badly on the north balcony.", "The office printer jams on thick paper.",
    "Grandpa's birthday dinner is at the Lebanese place.", "The gym changed its yoga timetable.",
    "My laptop battery barely lasts two hours now.", "The neighbours are renovating their attic.",
]
QUERY = "What did I do in Japan on my trip?"


def _trip_facts(n: int) -> list[str]:
    return [f"On day {i + 1} of my Japan trip I {DOINGS[i % len(DOINGS)]} in {PLACES[(i // 3) % len(PLACES)]}."
            for i in range(n)]


def _recalled(ctx: object) -> tuple[int, int, str | None]:
    tier = ctx.report.tier("recalled")  # type: ignore[attr-defined]
    return tier.kept, tier.tokens, tier.stopped_by


def test_recalled_tier_grows_with_the_budget_on_a_store_with_many_relevant_items(mem: Memory) -> None:
    for text in _trip_facts(120):
        mem.remember("u1", text)
    seen = []
    for budget in (500, 1000, 2000, 4000):
        ctx = mem.context("u1", "new-session", query=QUERY, budget=budget)
        kept, tokens, stopped = _recalled(ctx)
        assert ctx.tokens <= budget
        seen.append((budget, kept, tokens, stopped))
    kept_counts = [kept for _, kept, _, _ in seen]
    assert kept_counts[0] < kept_counts[1] < kept_counts[2] <= kept_counts[3], seen
    # It stops growing only where relevance stops it.
    assert seen[3][1] > seen[2][1] or seen[2][3] == seen[3][3] == "relevance", seen
    # The small budgets are stopped by room (the recalled share, flexed to what the empty
    # history leaves), not by relevance: every fact is about the trip.
    for budget, _, tokens, stopped in seen[:2]:
        assert stopped in ("tier cap", "budget"), seen
        assert tokens > 0.6 * budget, f"recalled items should use the room history leaves unused: {seen}"


def test_recalled_tier_stops_at_the_cut_off_on_a_store_with_few(mem: Memory) -> None:
    trip = _trip_facts(3)
    for text in [*trip, *UNRELATED]:
        mem.remember("u1", text)
    ctx = mem.context("u1", "new-session", query=QUERY, budget=4000)
    kept, _, stopped = _recalled(ctx)
    assert stopped == "relevance"
    assert ctx.tokens < 1000, "few relevant items: the prompt stays small however large the budget"
    text = ctx.messages[0]["content"]
    assert all(fact in text for fact in trip)
    cut = [i for i in ctx.report.items if i.tier == "recalled" and i.reason == "relevance"]
    assert cut, "the weak hits are in the report, with their reason"
    # Without a cut-off the weak hits fill in: the prompt grows, nothing stops the tier.
    off = mem.context("u1", "new-session", query=QUERY, budget=4000, relevance_cutoff=None)
    assert _recalled(off)[0] > kept and _recalled(off)[2] is None


def test_k_is_an_upper_bound_and_the_report_names_it(mem: Memory) -> None:
    for text in _trip_facts(30):
        mem.remember("u1", text)
    ctx = mem.context("u1", "new-session", query=QUERY, budget=4000, k=2)
    assert _recalled(ctx)[0] == 2 and _recalled(ctx)[2] == "recall limit"


def test_recall_k_setting_bounds_every_context(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    with Memory.open(tmp_path / "bounded", embedder=embedder, vectors="memory", recall_k=3) as bounded:
        for text in _trip_facts(30):
            bounded.remember("u1", text)
        ctx = bounded.context("u1", "new-session", query=QUERY, budget=4000)
        assert _recalled(ctx)[0] == 3 and _recalled(ctx)[2] == "recall limit"


@pytest.mark.parametrize("cutoff", [1.0, -0.2, "0.3", True])
def test_bad_relevance_cutoff_is_refused(mem: Memory, cutoff: object) -> None:
    mem.remember("u1", "On day 1 of my Japan trip I visited a quiet temple in Kyoto.")
    with pytest.raises(InvalidInput) as info:
        mem.context("u1", "s", query=QUERY, budget=1000, relevance_cutoff=cutoff)  # type: ignore[arg-type]
    assert info.value.field == "relevance_cutoff"
    assert mem.history("u1", "s") == []


@pytest.mark.parametrize("k", [-1, 2.5])
def test_bad_k_is_refused(mem: Memory, k: object) -> None:
    with pytest.raises(InvalidInput) as info:
        mem.context("u1", "s", query=QUERY, budget=1000, k=k)  # type: ignore[arg-type]
    assert info.value.field == "k"


def test_settings_carry_the_knobs_and_refuse_bad_values() -> None:
    s = Settings.from_env({}, relevance_cutoff="none", recall_k="25")
    assert s.relevance_cutoff is None and s.recall_k == 25
    assert Settings.from_env({}).relevance_cutoff == RELEVANCE_CUTOFF and Settings.from_env({}).recall_k is None
    for bad in ({"relevance_cutoff": "1.5"}, {"recall_k": "-3"}):
        with pytest.raises(ConfigError, match=f"^{next(iter(bad))} must be"):
            Settings.from_env({}, **bad)


def test_a_fact_and_its_own_source_turn_are_never_both_in_the_prompt(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "I'm allergic to peanuts and I live in Lisbon now.", "id": "t1"},
                         {"role": "assistant", "content": "Noted, no peanuts then.", "id": "t2"}])
    items = mem.items("u1", source_message_id="t1")
    assert {i.kind for i in items} >= {"turn"} and len(items) >= 2, "the turn is archived and a fact extracted"
    ctx = mem.context("u1", "s2", query="Which food am I allergic to?", budget=4000)
    kept = [r.ref for r in ctx.report.items if r.tier == "recalled" and r.kept]
    sources = [i.source_message_id for i in mem.items("u1", ids=kept)]
    assert sources.count("t1") == 1


def test_reply_reserve_sizes_the_default_budget_and_is_checked(mem: Memory) -> None:
    """Tried: reply_reserve -1, 128000 (the whole gpt-4o-mini window), "100"."""
    mem.add("u1", "s1", [{"role": "user", "content": "hello"}])
    assert mem.context("u1", "s1", reply_reserve=100).report.budget == 128_000 - 100
    assert mem.context("u1", "s1").report.budget == 128_000 - mem.options.reply_reserve
    for bad in (-1, 128_000, "100"):
        with pytest.raises(InvalidInput) as info:
            mem.context("u1", "s1", reply_reserve=bad)  # type: ignore[arg-type]
        assert info.value.field == "reply_reserve"


def test_without_a_budget_memory_does_not_grow_with_the_window(mem: Memory) -> None:
    """gpt-4o-mini's window is 128k: the default prompt stays near what the evidence needs."""
    for text in [*_trip_facts(150), *UNRELATED]:
        mem.remember("u1", text)
    ctx = mem.context("u1", "new-session", query=QUERY)
    assert ctx.report.budget == 128_000 - mem.options.reply_reserve
    memory = sum(t.tokens for t in ctx.report.tiers if t.tier in ("summary", "profile", "recalled"))
    assert 0 < memory <= mem.options.memory_budget  # type: ignore[operator]
    recalled = ctx.report.tier("recalled")
    assert recalled.stopped_by in ("threshold", "memory budget"), recalled
    assert recalled.stop_note is not None and recalled.stop_note.startswith("stopped: ")
    if recalled.stopped_by == "threshold":
        assert recalled.estimate is not None and 0 < recalled.estimate < 1
    # An explicit budget is still spent.
    spent = mem.context("u1", "new-session", query=QUERY, budget=6000).report.tier("recalled")
    assert spent.kept > recalled.kept and spent.tokens > recalled.tokens and spent.stopped_by != "threshold"


def _with_excerpts(path: Path, embedder: SentenceTransformerEmbedder, tokens: int) -> Memory:
    """A Memory whose options render recalled items past ``tokens`` as excerpts (off by default)."""
    parts = build_parts(Settings.from_env({}, data_dir=str(path), vectors="memory"), embedder=embedder)
    return Memory(replace(parts, options=replace(parts.options, excerpt_tokens=tokens)))


def test_excerpts_are_off_by_default(mem: Memory) -> None:
    assert mem.options.excerpt_tokens is None


def test_a_long_reply_is_recalled_as_its_passage(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    with _with_excerpts(tmp_path / "excerpts", embedder, 80) as mem:
        _long_reply_is_recalled_as_its_passage(mem)


def _long_reply_is_recalled_as_its_passage(mem: Memory) -> None:
    chatter = " ".join(f"Step {i}: keep stirring the sauce slowly and taste it as you go along." for i in range(30))
    reply = f"{chatter} Since you told me basil tastes like soap to you, leave the basil out of your pesto. {chatter}"
    mem.add("u1", "s1", [{"role": "user", "content": "Can you walk me through making pesto?", "id": "q1"},
                         {"role": "assistant", "content": reply, "id": "r1"}])
    for text in UNRELATED:  # a few more memories, so that scores have a spread
        mem.remember("u1", text)
    ctx = mem.context("u1", "s2", query="Which herb should I leave out of the pesto?", budget=4000)
    text = ctx.messages[0]["content"]
    assert "leave the basil out of your pesto" in text
    assert text.count("keep stirring") < 10, "the reply is excerpted, not whole"
    line = next(r for r in ctx.report.items if r.tier == "recalled" and r.kept and r.whole_tokens)
    assert line.whole_tokens is not None and line.whole_tokens > 3 * line.tokens
    assert mem.items("u1", ids=[line.ref])[0].text == reply, "the report points to the whole turn"


def test_memory_budget_setting_is_read_and_checked() -> None:
    """Tried: memory_budget "-5" and "lots" (ConfigError); "none" means the window."""
    assert Settings.from_env({}, memory_budget="none").memory_budget is None
    assert Settings.from_env({}, memory_budget="800").memory_budget == 800
    for bad in ("-5", "lots"):
        with pytest.raises(ConfigError, match="memory_budget"):
            Settings.from_env({}, memory_budget=bad)
