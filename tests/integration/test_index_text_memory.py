"""Archived turns keep their previous turn through ``Memory.add`` (within a batch and
across adds), the stored text stays verbatim, and ``reindex`` reproduces the same
ranking. Real stack: SQLite + in-memory vectors + the real MiniLM model."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hmem.build import build_parts
from hmem.config import Settings
from hmem.longterm.index_text import PREVIOUS_TURN_KEY
from hmem.longterm.store import LongTermStore
from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.types import Message, ToolCall

AT = datetime(2023, 5, 8, tzinfo=UTC)


@functools.cache
def _model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Memory, LongTermStore]]:
    """``Memory.open(tmp_path, …)`` and its long-term store (for ``reindex``)."""
    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory", extract_facts=False,
                                 extract_profile=False)
    parts = build_parts(settings, embedder=_model())
    with Memory(parts) as m:
        yield m, parts.longterm


@pytest.fixture
def mem(stack: tuple[Memory, LongTermStore]) -> Memory:
    return stack[0]


def _turns(mem: Memory, user: str) -> dict[str, dict[str, object]]:
    return {it.source_message_id or "": dict(it.metadata) | {"text": it.text}
            for it in mem.items(user) if it.kind == "turn"}


def test_previous_turn_within_a_batch_across_adds_and_over_tool_messages(mem: Memory) -> None:
    mem.add("u", "s1", [
        Message(role="user", content="Do you still go swimming?", name="Caroline", id="t1", created_at=AT),
        Message(role="assistant", content="Yes, twice a week!", name="Mel", id="t2", created_at=AT),
    ])
    mem.add("u", "s1", [
        Message(role="assistant", content=None, id="t3", tool_calls=(ToolCall(id="c1", name="lookup"),)),
        Message(role="tool", content="{}", tool_call_id="c1", id="t4"),
        Message(role="user", content="Where?", name="Caroline", id="t5", created_at=AT),
    ])
    mem.add("u", "s2", [Message(role="user", content="New day, new topic.", name="Caroline", id="t6")])
    turns = _turns(mem, "u")
    assert PREVIOUS_TURN_KEY not in turns["t1"]
    assert turns["t2"][PREVIOUS_TURN_KEY] == "Caroline: Do you still go swimming?"
    assert turns["t5"][PREVIOUS_TURN_KEY] == "Mel: Yes, twice a week!"  # tool call and result skipped over
    assert PREVIOUS_TURN_KEY not in turns["t6"]  # another session starts fresh
    assert turns["t2"]["text"] == "Yes, twice a week!"  # stored verbatim


def test_the_answer_turn_is_found_through_its_question_and_reindex_keeps_it(
    stack: tuple[Memory, LongTermStore],
) -> None:
    mem, longterm = stack
    mem.add("u", "s1", [
        Message(role="user", content="How is the pottery class going?", name="Ana", id="q", created_at=AT),
        Message(role="assistant", content="Great, I finished my first bowl yesterday.", name="Ben", id="a"),
        Message(role="user", content="My brother moved to Oslo for work.", name="Ana", id="x"),
        Message(role="assistant", content="That is a long way from home.", name="Ben", id="y"),
    ])
    before = [h.item.source_message_id for h in mem.recall("u", "pottery class", k=4)]
    assert before[:2] == ["q", "a"] or before[:2] == ["a", "q"]
    assert longterm.reindex("u") == 4
    assert [h.item.source_message_id for h in mem.recall("u", "pottery class", k=4)] == before
