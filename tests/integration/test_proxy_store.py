"""The proxy's deferred reply writes (:class:`hmem.server._proxy_store.ReplyWriter`) on a
real Memory: in order per session, the session's next turn after the pending reply,
flushed on close, and a reply that cannot be stored is retried and then logged at
ERROR, never raised into the request nor dropped without a word."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hmem.aio import AsyncMemory
from hmem.memory import Memory
from hmem.server._proxy_store import ReplyWriter, store_once

pytestmark = pytest.mark.integration


def _reply(n: int) -> dict[str, str]:
    return {"role": "assistant", "content": f"answer {n}", "id": f"a{n}"}


def test_replies_are_stored_in_order_per_session_and_flushed_on_close(mem: Memory) -> None:
    async def main() -> None:
        writer = ReplyWriter(AsyncMemory(mem))
        for n in range(3):
            writer.schedule("alice", "s1", _reply(n))
        writer.schedule("alice", "s2", _reply(9))
        await writer.aclose()

    asyncio.run(main())
    assert [m.id for m in mem.history("alice", "s1")] == ["a0", "a1", "a2"]
    assert [m.id for m in mem.history("alice", "s2")] == ["a9"]


def test_the_sessions_next_turn_is_stored_after_the_pending_reply(mem: Memory) -> None:
    async def main() -> None:
        amem = AsyncMemory(mem)
        writer = ReplyWriter(amem)
        await store_once(amem, "alice", "s1", [{"role": "user", "content": "first", "id": "u1"}])
        writer.schedule("alice", "s1", _reply(1))
        await writer.settled("alice", "s1")  # what the proxy does before storing the next turn
        await store_once(amem, "alice", "s1", [{"role": "user", "content": "second", "id": "u2"}])
        await writer.settled("bob", "s1")  # nothing pending: returns at once

    asyncio.run(main())
    assert [m.id for m in mem.history("alice", "s1")] == ["u1", "a1", "u2"]


def test_a_retried_reply_is_stored_once(mem: Memory) -> None:
    """A client's retry carries the same reply id: the second write is skipped."""
    async def main() -> None:
        writer = ReplyWriter(AsyncMemory(mem))
        writer.schedule("alice", "s1", _reply(1))
        writer.schedule("alice", "s1", _reply(1))
        await writer.aclose()
        assert writer.failed == 0

    asyncio.run(main())
    assert [m.id for m in mem.history("alice", "s1")] == ["a1"]


def test_a_reply_that_cannot_be_stored_is_retried_then_logged(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    """Tried: a reply hmem refuses (role "robot": not retried) and a closed store (every
    attempt fails: retried, then given up). Neither raises; each leaves an ERROR line
    with the reply's id."""
    async def main() -> ReplyWriter:
        writer = ReplyWriter(AsyncMemory(mem), attempts=3, backoff_s=0.001)
        writer.schedule("alice", "s1", {"role": "robot", "content": "beep", "id": "bad-role"})
        await writer.aclose()
        mem.close()
        writer.schedule("alice", "s1", _reply(1))
        await writer.aclose()
        return writer

    with caplog.at_level(logging.WARNING, logger="hmem.server.proxy"):
        writer = asyncio.run(main())
    assert writer.failed == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "'bad-role'" in errors[0] and "after 1 attempt(s)" in errors[0] and "InvalidInput" in errors[0]
    assert "'a1'" in errors[1] and "after 3 attempt(s)" in errors[1] and "NOT stored" in errors[1]
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2
