"""Property: nothing of user A is ever returned for user B, in any filter combination
(hypothesis), on both backend stacks; and every hit satisfies the filters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from longterm_fixtures import Stack, make_stack

from hmem.longterm.options import RecallOptions
from hmem.protocols import ItemFilter

pytestmark = pytest.mark.slow

SHARED = [
    ("I live in Porto near the river", "fact", "s1", {"topic": "home"}),
    ("My daughter plays the violin", "fact", "s1", {"topic": "family"}),
    ("We visited Tokyo last spring", "event", "s2", {"topic": "travel"}),
    ("I prefer window seats on flights", "preference", "s2", {"topic": "travel"}),
    ("I am allergic to shellfish", "fact", "s3", {}),
    ("我喜欢喝绿茶", "preference", "s3", {"topic": "food"}),
]
ALICE_ONLY = ["Alice's bank PIN is 4711", "Alice secretly plans to quit her job at Initech"]
QUERIES = ["Porto river", "violin", "Tokyo trip", "seats", "allergy", "绿茶", "bank PIN", "quit job Initech",
           "where do I live", "travel"]


@pytest.fixture(scope="module", params=["memory", "sqlite+chroma"])
def populated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Stack, Any]:
    stack = make_stack(request.param, tmp_path_factory.mktemp("iso"))
    start = stack.clock.now
    for user in ("alice", "bob"):
        stack.clock.now = start
        for text, kind, session, meta in SHARED:
            stack.store.remember(user, text, kind=kind, session_id=session, metadata=meta)
            stack.clock.advance(days=1)
        stack.store.archive_turns(user, "s1", [{"role": "user", "content": f"{user} says the Tokyo trip was great",
                                                "id": f"{user}-m1"}])
    for text in ALICE_ONLY:
        stack.store.remember("alice", text, kind="fact", session_id="s1", metadata={"topic": "family"})
    return stack, start


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.sampled_from(QUERIES),
    kinds=st.none() | st.sets(st.sampled_from(["fact", "event", "preference", "turn", "other"]), min_size=1),
    session=st.none() | st.sampled_from(["s1", "s2", "s3", "s9"]),
    since_days=st.none() | st.integers(-1, 7),
    span_days=st.none() | st.integers(0, 7),
    metadata=st.none() | st.sampled_from([{"topic": "travel"}, {"topic": "family"}, {"topic": "home"}]),
    fusion=st.sampled_from(["rrf", "weighted"]),
    mmr=st.none() | st.floats(0, 1),
    recency=st.none() | st.integers(1, 30),
    k=st.integers(1, 20),
)
def test_user_b_never_sees_user_a(
    populated: tuple[Stack, Any], query: str, kinds: set[str] | None, session: str | None, since_days: int | None,
    span_days: int | None, metadata: dict[str, str] | None, fusion: str, mmr: float | None, recency: int | None,
    k: int,
) -> None:
    stack, start = populated
    since = None if since_days is None else start + timedelta(days=since_days)
    until = None if span_days is None else (since or start) + timedelta(days=span_days)
    hits = stack.store.recall("bob", query, k=k, options=RecallOptions(
        kinds=kinds, session_id=session, since=since, until=until, metadata=metadata,
        fusion=fusion,  # type: ignore[arg-type]
        mmr_lambda=mmr, recency_half_life=None if recency is None else timedelta(days=recency)))
    bob_ids = stack.store.items.find_ids("bob")
    flt = ItemFilter(kinds=None if kinds is None else frozenset(kinds), session_id=session, since=since,
                     until=until, metadata=metadata)
    assert len(hits) <= k
    assert len({h.item.id for h in hits}) == len(hits)
    for h in hits:
        assert h.item.user_id == "bob" and h.item.id in bob_ids
        assert "alice" not in h.item.text.lower() and "Initech" not in h.item.text
        assert flt.matches(h.item)
    if flt.is_empty and k >= 7:
        assert len(hits) == 7  # bob has 7 items; recall finds them all when unfiltered
