"""How the chat-completions proxy writes to memory: the user turn before the upstream
is called (awaited), the assistant reply after the answer went out (in the background,
in order per session, retried, never dropped silently).

Storing the reply is a full ``Memory.add`` (with the default settings it embeds and
archives the turn: tens of milliseconds); the caller should not wait for it. What must
hold instead: the next request of the same session sees the reply before it stores its
own turn (:meth:`ReplyWriter.settled`), and a shutdown waits for every pending write
(:meth:`ReplyWriter.aclose`). The order holds within one process; see
:class:`~hmem.server.proxy.ProxyOptions` ``defer_reply_store`` for several instances.

Example::

    writer = ReplyWriter(AsyncMemory(memory))
    await writer.settled("alice", "s1")          # before storing alice's next turn
    writer.schedule("alice", "s1", reply)        # returns at once
    await writer.aclose()                        # on shutdown
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from hmem.aio import AsyncMemory
from hmem.errors import DuplicateId, InvalidInput

__all__ = ["ReplyWriter", "store_once"]

log = logging.getLogger("hmem.server.proxy")


async def store_once(amem: AsyncMemory, user: str, session: str, messages: list[dict[str, Any]]) -> None:
    """Append ``messages``; ids already stored (a retry) are skipped one by one."""
    try:
        await amem.add(user, session, messages)
    except DuplicateId:
        for m in messages:
            try:
                await amem.add(user, session, [m])
            except DuplicateId:
                continue


class ReplyWriter:
    """Stores assistant replies in the background, one session's writes in order."""

    def __init__(self, amem: AsyncMemory, *, attempts: int = 4, backoff_s: float = 0.25) -> None:
        self.amem = amem
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._pending: dict[tuple[str, str], asyncio.Task[None]] = {}
        self.failed = 0  # replies given up on (each logged at ERROR with its ids)

    async def settled(self, user: str, session: str) -> None:
        """Wait until the session's scheduled writes are done (or given up on).
        Never raises their errors, and a cancelled caller does not cancel them."""
        task = self._pending.get((user, session))
        if task is not None:
            await asyncio.wait({task})

    def schedule(self, user: str, session: str, message: Mapping[str, Any]) -> None:
        """Store ``message`` after the session's earlier scheduled writes; returns at once."""
        slot = (user, session)
        task = asyncio.create_task(self._write(self._pending.get(slot), user, session, dict(message)))
        self._pending[slot] = task
        task.add_done_callback(lambda done: self._pending.pop(slot, None) if self._pending.get(slot) is done else None)

    async def _write(self, before: asyncio.Task[None] | None, user: str, session: str,
                     message: dict[str, Any]) -> None:
        if before is not None:
            await asyncio.wait({before})
        for attempt in range(1, self.attempts + 1):
            try:
                await store_once(self.amem, user, session, [message])
                return
            except InvalidInput as exc:  # the same message fails the same way again
                self._give_up(user, session, message, exc, attempt)
                return
            except Exception as exc:  # a backend hiccup: wait and retry
                if attempt == self.attempts:
                    self._give_up(user, session, message, exc, attempt)
                    return
                log.warning("storing reply %r of user %r session %r failed (attempt %d of %d), retrying: %s: %s",
                            message.get("id"), user, session, attempt, self.attempts, type(exc).__name__, exc)
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))

    def _give_up(self, user: str, session: str, message: Mapping[str, Any], exc: Exception, attempts: int) -> None:
        self.failed += 1
        log.error("the assistant reply %r of user %r session %r was NOT stored after %d attempt(s): %s: %s; "
                  "the caller got the answer, the session's history lacks it", message.get("id"), user, session,
                  attempts, type(exc).__name__, exc)

    async def aclose(self) -> None:
        """Wait for every pending write (call on server shutdown)."""
        while self._pending:
            await asyncio.wait(set(self._pending.values()))
