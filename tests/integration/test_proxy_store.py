"""How the proxy stores turns (:func:`hmem.server.proxy.store_once`) on a real Memory:
an append whose pipeline is queued, and a retried id stored once."""

from __future__ import annotations

import asyncio

import pytest

from hmem.aio import AsyncMemory
from hmem.memory import Memory
from hmem.server.proxy import store_once

pytestmark = pytest.mark.integration


def test_a_stored_turn_is_in_the_session_at_once_and_archived_by_the_worker(mem: Memory) -> None:
    asyncio.run(store_once(AsyncMemory(mem), "alice", "s1", [{"role": "user", "content": "I keep bees", "id": "u1"}]))
    assert [m.id for m in mem.history("alice", "s1")] == ["u1"]
    assert mem.flush(30)
    assert [item.source_message_id for item in mem.items("alice", kinds="turn")] == ["u1"]


def test_a_retried_message_is_stored_once_and_the_new_ones_beside_it_are_not_lost(mem: Memory) -> None:
    """A client's retry carries the same ids: what is stored is skipped, one by one."""
    async def main() -> None:
        amem = AsyncMemory(mem)
        await store_once(amem, "alice", "s1", [{"role": "assistant", "content": "answer 1", "id": "a1"}])
        await store_once(amem, "alice", "s1", [{"role": "assistant", "content": "answer 1", "id": "a1"},
                                               {"role": "user", "content": "and then?", "id": "u2"}])

    asyncio.run(main())
    assert [m.id for m in mem.history("alice", "s1")] == ["a1", "u2"]
    assert mem.flush(30)
    assert sorted(item.source_message_id or "" for item in mem.items("alice", kinds="turn")) == ["a1", "u2"]
