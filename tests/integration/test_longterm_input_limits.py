"""Input limits through :class:`~hmem.memory.Memory` on the embedded default (SQLite,
Chroma or in-process vectors, the real MiniLM model):

* a message of exactly the size limit (and one less) is stored, archived, recallable,
  and later appends to its session work (it used to be stored, then refused by the
  index because the indexed text adds speaker, date and previous turn);
* a ``created_at`` far in the future is refused before anything is written;
* errors name the caller's own argument (``text``, ``budget``), not an internal one.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.types import MAX_CLOCK_SKEW, MAX_CONTENT_CHARS

pytestmark = pytest.mark.integration


@functools.cache
def _model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture(params=["memory", "chroma"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """SQLite tiers with in-process vectors, or the full default (Chroma embedded)."""
    m = Memory.open(tmp_path, embedder=_model(), vectors=request.param)
    yield m
    m.close()


def big_text(size: int, marker: str) -> str:
    """``size`` characters of words, starting with ``marker`` (a word nothing else contains)."""
    body = (marker + " ") + "lorem ipsum dolor sit amet " * (size // 27 + 1)
    return body[:size]


def snapshot(mem: Memory, user: str, session: str) -> tuple[Any, ...]:
    return tuple(mem.history(user, session)), tuple(mem.items(user))


@pytest.mark.parametrize(("vectors", "size"), [("memory", MAX_CONTENT_CHARS), ("memory", MAX_CONTENT_CHARS - 1),
                                              ("chroma", MAX_CONTENT_CHARS)])
def test_a_max_size_message_is_stored_indexed_and_later_appends_work(tmp_path: Path, vectors: str, size: int) -> None:
    with Memory.open(tmp_path, embedder=_model(), vectors=vectors) as mem:
        _max_size_round_trip(mem, size)


def _max_size_round_trip(mem: Memory, size: int) -> None:
    user, session = "u1", "s1"
    mem.add(user, session, [{"role": "user", "content": "Do you remember the quokka story?", "id": "m0"}])
    text = big_text(size, "zanzibarquokka")
    assert len(text) == size
    result = mem.add(user, session, [{"role": "assistant", "content": text, "id": "m1"}])
    assert result.message_ids == ("m1",)
    stored = [m for m in mem.history(user, session) if m.id == "m1"]
    assert stored and stored[0].content == text  # verbatim, not cut
    turns = [it for it in mem.items(user) if it.source_message_id == "m1"]
    assert len(turns) == 1 and turns[0].text == text
    hits = mem.recall(user, "zanzibarquokka", k=3)
    assert hits and hits[0].item.source_message_id == "m1" and hits[0].lexical_rank == 1
    for i in range(2, 5):  # the big turn is now the previous turn of the next one, and in the buffer
        mem.add(user, session, [{"role": "user", "content": f"and then what happened, part {i}?", "id": f"m{i}"}])
    assert {"m2", "m3", "m4"} <= {it.source_message_id for it in mem.items(user)}
    assert mem.recall(user, "what happened part 4", k=1)[0].item.source_message_id == "m4"


def test_one_character_over_the_limit_is_refused_before_any_write(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "hello", "id": "m0"}])
    before = snapshot(mem, "u1", "s1")
    with pytest.raises(InvalidInput) as info:
        mem.add("u1", "s1", [{"role": "user", "content": big_text(MAX_CONTENT_CHARS + 1, "x"), "id": "m1"}])
    assert info.value.field == "messages[0].content"
    assert snapshot(mem, "u1", "s1") == before


def test_a_message_time_far_ahead_changes_nothing(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "I like green tea", "id": "m0"}])
    before = snapshot(mem, "u1", "s1")
    now = datetime.now(UTC)
    # Tried: 6 minutes, a day and 50 years ahead, as ISO text, datetime and epoch seconds.
    for when in [(now + timedelta(minutes=6)).isoformat(), now + timedelta(days=1), (now + timedelta(days=18262)).timestamp()]:
        batch = [{"role": "user", "content": "fine", "id": "ok"},
                 {"role": "user", "content": "from the future", "id": "m1", "created_at": when}]
        with pytest.raises(InvalidInput) as info:
            mem.add("u1", "s1", batch)
        assert info.value.field == "messages[1].created_at" and "future" in str(info.value)
        assert snapshot(mem, "u1", "s1") == before
    # Within the documented skew a client clock slightly ahead is fine.
    mem.add("u1", "s1", [{"role": "user", "content": "close enough", "id": "m2",
                          "created_at": now + MAX_CLOCK_SKEW - timedelta(seconds=30)}])
    assert [m.id for m in mem.history("u1", "s1")][-1] == "m2"


def test_a_remembered_time_far_ahead_changes_nothing(mem: Memory) -> None:
    mem.remember("u1", "I like green tea")
    before = snapshot(mem, "u1", "s1")
    for ahead in (timedelta(minutes=6), timedelta(days=3650)):
        with pytest.raises(InvalidInput) as info:
            mem.remember("u1", "I will have moved to Mars", created_at=datetime.now(UTC) + ahead)
        assert info.value.field == "created_at" and "future" in str(info.value)
        assert snapshot(mem, "u1", "s1") == before
    # A future item would have outranked everything in recency; one in the past does not.
    past = mem.remember("u1", "I moved to Berlin", created_at=datetime.now(UTC) - timedelta(days=1))
    assert past.status == "stored"


def test_errors_name_the_callers_own_argument(mem: Memory) -> None:
    mem.add("u1", "s1", [{"role": "user", "content": "hi", "id": "m0"}])
    before = snapshot(mem, "u1", "s1")
    cases: list[tuple[str, Any]] = [
        ("text", lambda: mem.remember("u1", "   ")),
        ("importance", lambda: mem.remember("u1", "x", importance=2.0)),
        ("budget", lambda: mem.context("u1", "s1", budget=-1)),
        ("budget", lambda: mem.context("u1", "s1", budget=10**9)),
        ("recency_half_life", lambda: mem.recall("u1", "hi", options=RecallOptions(recency_half_life=1e-7))),
    ]
    for field, call in cases:
        with pytest.raises(InvalidInput) as info:
            call()
        message = str(info.value)
        assert info.value.field == field, message
        assert "entries" not in message and "explicit must" not in message, message
        assert snapshot(mem, "u1", "s1") == before
