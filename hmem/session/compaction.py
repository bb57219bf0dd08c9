"""When and how a session buffer is compacted into its rolling summary.

:class:`Compactor` runs one compaction (:meth:`Compactor.compact`) on the calling
thread. It owns no thread or queue: background compaction is a ``compact`` call
submitted as a ``compact`` job to the Memory's background engine (:mod:`hmem.jobs`).

One compaction, in this order (crash points are discussed in ``docs/summary.md``):

1. load the session *with its version* and the stored summary;
2. messages the stored watermark already covers (left by a crash or a lost race)
   are dropped from the plan — never summarized twice;
3. plan with the window ``policy`` → the oldest block to evict;
4. fold that block into the summary and store it with ``put_if`` (compare-and-set on
   the watermark, so a slower compactor can never overwrite a newer summary);
5. hand the evicted turns, verbatim, to the ``archive`` hook;
6. ``replace`` the buffer with what is left, compare-and-set on the loaded version.
   On :class:`~hmem.errors.ConflictError` (an append came in) reload and retry:
   step 2 removes what step 4 already covered, without a second LLM call.

Messages leave the buffer only in step 6, after the summary covering them is stored
(4) and archived (5): a crash or failure anywhere before loses nothing.

Example::

    >>> from hmem.backends.memory.sessions import MemorySessionStore
    >>> from hmem.backends.memory.summaries import MemorySummaryStore
    >>> from hmem.session.window import WindowResult
    >>> from hmem.session.summarizer import Summarizer
    >>> from hmem.types import Message
    >>> class Words:
    ...     name = "words"
    ...     def count(self, text): return len(text.split())
    ...     def truncate(self, text, n): return " ".join(text.split()[:n])
    >>> sessions, summaries = MemorySessionStore(), MemorySummaryStore()
    >>> _ = sessions.append("u1", "s1", [Message(role="user", content=f"I paid {i} euros.", id=f"m{i}")
    ...                                  for i in range(6)])
    >>> keep_last_2 = lambda msgs: WindowResult(kept=msgs[-2:], evicted=msgs[:-2])
    >>> c = Compactor(sessions, summaries, Summarizer(None, Words()), keep_last_2)
    >>> r = c.compact("u1", "s1")
    >>> r.evicted, [m.id for m in sessions.load("u1", "s1").messages], summaries.get("u1", "s1").covers_until
    (4, ['m4', 'm5'], 'm3')
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hmem.errors import ConflictError
from hmem.protocols import SessionStore, SummaryStore
from hmem.session.summarizer import Summarizer
from hmem.types import Message, SessionSummary, check_id

__all__ = ["ArchiveHook", "CompactionResult", "Compactor", "Policy", "split_covered"]

log = logging.getLogger(__name__)

#: ``policy(messages) -> WindowResult`` (``.kept``, ``.evicted``), e.g.
#: ``lambda msgs: hybrid_window(msgs, tokenizer, budget)``.
Policy = Callable[[list[Message]], Any]
#: ``archive(user_id, session_id, evicted_messages)``; must be idempotent by message id
#: (after a crash between steps 5 and 6 the same messages are handed over again).
ArchiveHook = Callable[[str, str, list[Message]], None]

_PINNED = frozenset({"system", "developer"})


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one compaction did. ``evicted`` counts messages removed from the buffer
    (``covered`` of them were already in the stored summary); ``completed`` is False
    when every attempt lost a race (nothing lost; the next compaction finishes)."""

    user_id: str
    session_id: str
    evicted: int
    kept: int
    summary: SessionSummary | None
    version: int
    attempts: int
    covered: int = 0
    completed: bool = True

    @property
    def changed(self) -> bool:
        return self.evicted > 0


def split_covered(messages: Sequence[Message], summary: SessionSummary | None) -> tuple[list[Message], list[Message]]:
    """``(covered, rest)``: the non-pinned messages up to and including the summary's
    watermark (already folded into it), and everything else, in order.

    >>> from hmem.types import Message, SessionSummary
    >>> msgs = [Message(role="system", content="sys", id="s"), Message(role="user", content="a", id="a"),
    ...         Message(role="user", content="b", id="b")]
    >>> covered, rest = split_covered(msgs, SessionSummary("u", "s", "..", "a", 1, "raw"))
    >>> [m.id for m in covered], [m.id for m in rest]
    (['a'], ['s', 'b'])
    """
    if summary is None or summary.covers_until is None:
        return [], list(messages)
    ids = [m.id for m in messages]
    if summary.covers_until not in ids:
        return [], list(messages)
    cut = ids.index(summary.covers_until)
    covered = [m for m in messages[: cut + 1] if m.role not in _PINNED]
    rest = [m for m in messages[: cut + 1] if m.role in _PINNED] + list(messages[cut + 1 :])
    return covered, rest


def _oldest_block(rest: Sequence[Message], evicted: Sequence[Message]) -> list[Message]:
    """The longest run of evicted messages at the start of the non-pinned messages.

    The watermark can only describe a prefix, so anything a policy evicts out of
    order (an orphan tool result late in the buffer) stays until it becomes the oldest.
    """
    chosen = {m.id for m in evicted}
    block: list[Message] = []
    for m in rest:
        if m.role in _PINNED:
            continue
        if m.id not in chosen:
            break
        block.append(m)
    return block


class Compactor:
    """Compacts session buffers into rolling summaries (see the module doc).

    ``max_attempts`` bounds the reload-and-retry loop when appends keep winning the
    compare-and-set; giving up loses nothing. Safe to call from several threads (one
    compaction per session at a time in this process).
    """

    def __init__(
        self,
        sessions: SessionStore,
        summaries: SummaryStore,
        summarizer: Summarizer,
        policy: Policy,
        *,
        archive: ArchiveHook | None = None,
        max_attempts: int = 8,
    ) -> None:
        self.sessions = sessions
        self.summaries = summaries
        self.summarizer = summarizer
        self.policy = policy
        self.archive = archive
        self.max_attempts = max_attempts
        self._stripes = [threading.Lock() for _ in range(64)]
        # Ids handed to the archive whose removal from the buffer is not yet confirmed.
        self._handed_over: dict[tuple[str, str], set[str]] = {}
        self._handed_lock = threading.Lock()

    def compact(self, user_id: str, session_id: str) -> CompactionResult:
        """Compact one session now, if its policy evicts anything (see module doc)."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with self._lock_for(user, session):
            return self._compact(user, session)

    def _lock_for(self, user: str, session: str) -> threading.Lock:
        # One compaction per session at a time inside this process; across processes
        # the two compare-and-sets (put_if, replace) keep it safe.
        # Striped, so the lock table stays small however many sessions pass through.
        return self._stripes[hash((user, session)) % len(self._stripes)]

    def _compact(self, user: str, session: str) -> CompactionResult:
        key = (user, session)
        summary: SessionSummary | None = None
        state_version = 0
        kept_count = 0
        folded = False  # once this call stored a fold, retries only trim (no second fold)
        for attempt in range(1, self.max_attempts + 1):
            state = self.sessions.load(user, session)
            state_version, kept_count = state.version, len(state.messages)
            stored = self.summaries.get(user, session)
            summary = stored
            covered, rest = split_covered(state.messages, stored)
            block = [] if folded else _oldest_block(rest, self.policy(list(rest)).evicted)
            if block:
                summary = self.summarizer.fold(stored, block, user_id=user, session_id=session)
                expected = stored.covers_until if stored else None
                if not self.summaries.put_if(summary, expected):
                    continue  # another compactor folded first: reload, nothing was written
                folded = True
            gone = covered + block
            if not gone:
                return CompactionResult(user, session, 0, kept_count, summary, state_version, attempt)
            self._archive(key, gone)
            gone_ids = {m.id for m in gone}
            kept = [m for m in state.messages if m.id not in gone_ids]
            try:
                version = self.sessions.replace(user, session, kept, state.version)
            except ConflictError:
                continue  # an append came first; the stored watermark lets the retry skip re-summarizing
            with self._handed_lock:
                self._handed_over.pop(key, None)  # every id handed over so far is out of the buffer now
            return CompactionResult(
                user, session, len(gone), len(kept), summary, version, attempt, covered=len(covered)
            )
        log.info("compaction of %s/%s gave up after %d lost races", user, session, self.max_attempts)
        return CompactionResult(
            user, session, 0, kept_count, summary, state_version, self.max_attempts, completed=False
        )

    def _archive(self, key: tuple[str, str], gone: list[Message]) -> None:
        """Hand ``gone`` to the archive hook, minus what this process already handed over
        (a retry after a lost race, or an earlier call that gave up): only a real crash
        between archive and trim makes the hook see a message twice."""
        with self._handed_lock:
            seen = self._handed_over.setdefault(key, set())
            fresh = [m for m in gone if m.id not in seen]
        if self.archive is not None and fresh:
            self.archive(key[0], key[1], fresh)
        with self._handed_lock:
            self._handed_over.setdefault(key, set()).update(m.id for m in fresh)
