"""hmem's value types: plain frozen dataclasses shared by every layer.

This module defines the stored records (sessions, summaries, profile entries, memory
items, hits) and re-exports the rest, so ``from hmem.types import X`` works for every
name in ``__all__``:

* :mod:`hmem._primitives` — limits, ids, clock; checks of ids, text and timestamps;
  :func:`renamed` (an error's field as the caller named it);
* :mod:`hmem._message` — :class:`Message` and :class:`ToolCall` (OpenAI shape);
* :mod:`hmem._assembly_types` — the assembler's tiers, report and result.

None of them imports anything from hmem but :mod:`hmem.errors` (and each other, in
that order), so every other module may depend on this one.

Example::

    >>> from hmem.types import Message
    >>> m = Message.from_openai({"role": "user", "content": "hi"})
    >>> m.to_openai()
    {'role': 'user', 'content': 'hi'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypeAlias

from hmem._assembly_types import (
    STOP_REASONS,
    TIERS,
    AssembledContext,
    AssemblyReport,
    DropReason,
    ReportItem,
    Tier,
    TierReport,
)
from hmem._message import ROLES, Message, Role, ToolCall, coerce_messages, message_ids
from hmem._primitives import (
    MAX_CLOCK_SKEW,
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    JSONScalar,
    as_datetime,
    check_id,
    check_not_future,
    check_text,
    new_id,
    renamed,
    utcnow,
)

__all__ = [
    "MAX_CLOCK_SKEW",
    "MAX_CONTENT_CHARS",
    "MAX_ID_CHARS",
    "ROLES",
    "STOP_REASONS",
    "TIERS",
    "AssembledContext",
    "AssemblyReport",
    "DropReason",
    "Hit",
    "JSONScalar",
    "MemoryItem",
    "Message",
    "ProfileEntry",
    "ProfileValue",
    "Provenance",
    "ReportItem",
    "Role",
    "SessionInfo",
    "SessionState",
    "SessionSummary",
    "Tier",
    "TierReport",
    "ToolCall",
    "Usage",
    "as_datetime",
    "check_id",
    "check_not_future",
    "check_text",
    "coerce_messages",
    "message_ids",
    "new_id",
    "renamed",
    "utcnow",
]

ProfileValue: TypeAlias = str | int | float | bool | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SessionState:
    """A session's messages (oldest first) and its version for compare-and-set."""

    messages: tuple[Message, ...]
    version: int


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session of a user, as listed by a session store."""

    session_id: str
    message_count: int
    version: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one provider call (LLM or embeddings)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


SummaryMethod: TypeAlias = Literal["llm", "extractive", "raw"]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """The rolling summary of one session.

    ``covers_until`` is the watermark: the id of the last message folded in.
    ``method`` says which path of the fallback chain produced the text.
    """

    user_id: str
    session_id: str
    text: str
    covers_until: str | None
    folded_count: int
    method: SummaryMethod
    updated_at: datetime = field(default_factory=utcnow)
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a profile value or memory item came from: a message, or the API."""

    source: Literal["message", "api", "import", "extractor"] = "api"
    session_id: str | None = None
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """One version of one profile key. ``value is None`` marks a deletion in history.

    ``valid_to is None`` means the entry is current.
    """

    user_id: str
    key: str
    value: ProfileValue | None
    valid_from: datetime
    valid_to: datetime | None = None
    provenance: Provenance = field(default_factory=Provenance)
    confidence: float = 1.0
    #: When the value was last stated again (setting the same value refreshes this
    #: instead of adding a history row); ``None`` means "never since ``valid_from``".
    confirmed_at: datetime | None = None

    @property
    def is_current(self) -> bool:
        return self.valid_to is None and self.value is not None

    @property
    def last_confirmed(self) -> datetime:
        """``confirmed_at`` if set, else ``valid_from`` (what profile rendering sorts by)."""
        return self.confirmed_at or self.valid_from


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One long-term record of a user: an extracted fact or an archived turn.

    ``kind`` is e.g. ``"fact"``, ``"preference"``, ``"event"`` or ``"turn"``
    (a verbatim archived message). ``source_message_id`` traces a turn or a fact
    back to the message it came from.
    """

    id: str
    user_id: str
    text: str
    kind: str = "fact"
    importance: float = 0.5
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)
    session_id: str | None = None
    source_message_id: str | None = None
    speaker: str | None = None
    metadata: Mapping[str, JSONScalar] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Hit:
    """One recalled item with the evidence of how it ranked.

    Ranks are 1-based; ``None`` means that retriever did not return the item.
    """

    item: MemoryItem
    score: float
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    boosts: Mapping[str, float] = field(default_factory=dict)
    #: The fusion score before boosts (RRF or weighted); ``score`` is after boosts.
    fused_score: float | None = None
    #: Which recall round found it: 1, or the pseudo-relevance feedback round (2 …) that
    #: first brought it among the best ``rerank_depth`` hits
    #: (``LongTermConfig.feedback_rounds``; :func:`hmem.longterm.feedback.rounds_of`).
    round: int = 1
