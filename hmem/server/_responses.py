"""Response bodies of the hmem HTTP API, built from :mod:`hmem.types` values.

Example::

    >>> from hmem.types import Message
    >>> MessageOut.of(Message(role="user", content="hi", id="m1")).id
    'm1'
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hmem.server._requests import Metadata
from hmem.types import Hit, MemoryItem, Message, ProfileEntry, SessionInfo, ToolCall

if TYPE_CHECKING:
    from hmem.longterm.store import RememberResult
    from hmem.memory import AddResult

__all__ = [
    "AppendResponse",
    "BackendStatus",
    "CompactionOut",
    "ContextResponse",
    "DeletedResponse",
    "ErrorBody",
    "ErrorInfo",
    "FactOut",
    "HistoryResponse",
    "HitOut",
    "ItemList",
    "ItemOut",
    "MessageOut",
    "ProfileChanges",
    "ProfileEntryOut",
    "ProfileList",
    "ReadinessResponse",
    "RecallResponse",
    "RememberResponse",
    "SessionList",
    "SessionOut",
    "ToolCallOut",
    "UserForgotten",
]


class _Out(BaseModel):
    model_config = ConfigDict(allow_inf_nan=True)


class ToolCallOut(_Out):
    id: str
    type: str = "function"
    function: dict[str, str]

    @classmethod
    def of(cls, tc: ToolCall) -> ToolCallOut:
        return cls(id=tc.id, type=tc.type, function={"name": tc.name, "arguments": tc.arguments})


class MessageOut(_Out):
    role: str
    content: str | None
    name: str | None = None
    tool_calls: list[ToolCallOut] = Field(default_factory=list)
    tool_call_id: str | None = None
    id: str
    created_at: datetime
    metadata: Metadata = Field(default_factory=dict)

    @classmethod
    def of(cls, m: Message) -> MessageOut:
        return cls(
            role=m.role, content=m.content, name=m.name, tool_calls=[ToolCallOut.of(tc) for tc in m.tool_calls],
            tool_call_id=m.tool_call_id, id=m.id, created_at=m.created_at, metadata=dict(m.metadata),
        )


class ProfileChanges(_Out):
    changed: list[str]
    confirmed: list[str]
    deleted: list[str]


class FactOut(_Out):
    status: str
    item_id: str
    kind: str
    text: str


class CompactionOut(_Out):
    evicted: int
    kept: int
    summarized: bool
    completed: bool


class AppendResponse(_Out):
    version: int = Field(description="the session's version after the append")
    message_ids: list[str]
    profile: ProfileChanges | None = None
    facts: list[FactOut] = Field(default_factory=list)
    compaction: CompactionOut | None = None

    @classmethod
    def of(cls, r: AddResult) -> AppendResponse:
        profile = None
        if r.profile is not None:
            profile = ProfileChanges(
                changed=list(r.profile.changed), confirmed=list(r.profile.confirmed), deleted=list(r.profile.deleted)
            )
        compaction = None
        if r.compaction is not None:
            c = r.compaction
            compaction = CompactionOut(evicted=c.evicted, kept=c.kept, summarized=c.summary is not None,
                                       completed=c.completed)
        return cls(
            version=r.version, message_ids=list(r.message_ids), profile=profile,
            facts=[FactOut(status=f.status, item_id=f.item.id, kind=f.item.kind, text=f.item.text) for f in r.facts],
            compaction=compaction,
        )


class HistoryResponse(_Out):
    messages: list[MessageOut]


class SessionOut(_Out):
    session_id: str
    message_count: int
    version: int
    updated_at: datetime

    @classmethod
    def of(cls, s: SessionInfo) -> SessionOut:
        return cls(session_id=s.session_id, message_count=s.message_count, version=s.version, updated_at=s.updated_at)


class SessionList(_Out):
    sessions: list[SessionOut]


class DeletedResponse(_Out):
    deleted: int = Field(description="how many records were deleted")


class UserForgotten(_Out):
    sessions: int
    profile_keys: int
    items: int
    jobs: int = Field(default=0, description="background jobs of the user dropped (queued or quarantined)")


class ContextResponse(_Out):
    messages: list[dict[str, Any]] = Field(description="OpenAI chat messages, ready to send",
                                           examples=[[{"role": "system", "content": "You are a helpful assistant."},
                                                      {"role": "user", "content": "what should I cook tonight?"}]])
    tokens: int
    report: dict[str, Any] = Field(description="what was kept, cut and why (see docs/assembly.md)")


class ItemOut(_Out):
    id: str
    text: str
    kind: str
    importance: float
    created_at: datetime
    updated_at: datetime
    session_id: str | None = None
    source_message_id: str | None = None
    speaker: str | None = None
    metadata: Metadata = Field(default_factory=dict)

    @classmethod
    def of(cls, it: MemoryItem) -> ItemOut:
        return cls(id=it.id, text=it.text, kind=it.kind, importance=it.importance, created_at=it.created_at,
                   updated_at=it.updated_at, session_id=it.session_id, source_message_id=it.source_message_id,
                   speaker=it.speaker, metadata=dict(it.metadata))


class RememberResponse(_Out):
    status: Literal["stored", "updated", "skipped"] = Field(
        description="stored a new item, updated a near duplicate, or skipped an exact duplicate")
    item: ItemOut
    similarity: float | None = None
    evicted: list[str] = Field(default_factory=list, description="ids removed by the retention cap")

    @classmethod
    def of(cls, r: RememberResult) -> RememberResponse:
        return cls(status=r.status, item=ItemOut.of(r.item), similarity=r.similarity, evicted=[e.id for e in r.evicted])


class ItemList(_Out):
    items: list[ItemOut]


class HitOut(_Out):
    item: ItemOut
    score: float
    fused_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    boosts: dict[str, float] = Field(default_factory=dict)
    round: int = Field(default=1, description="recall round that found it: 1, or 2+ for pseudo-relevance feedback")

    @classmethod
    def of(cls, h: Hit) -> HitOut:
        return cls(item=ItemOut.of(h.item), score=h.score, fused_score=h.fused_score, lexical_rank=h.lexical_rank,
                   lexical_score=h.lexical_score, dense_rank=h.dense_rank, dense_score=h.dense_score,
                   boosts=dict(h.boosts), round=h.round)


class RecallResponse(_Out):
    hits: list[HitOut]


class ProfileEntryOut(_Out):
    key: str
    value: str | int | float | bool | list[str] | None = Field(description="null marks a deletion in history")
    valid_from: datetime
    valid_to: datetime | None = None
    confirmed_at: datetime | None = None
    confidence: float
    source: str
    session_id: str | None = None
    message_id: str | None = None

    @classmethod
    def of(cls, e: ProfileEntry) -> ProfileEntryOut:
        value: Any = list(e.value) if isinstance(e.value, tuple) else e.value
        return cls(key=e.key, value=value, valid_from=e.valid_from, valid_to=e.valid_to, confirmed_at=e.confirmed_at,
                   confidence=e.confidence, source=e.provenance.source, session_id=e.provenance.session_id,
                   message_id=e.provenance.message_id)


class ProfileList(_Out):
    entries: list[ProfileEntryOut]


class BackendStatus(_Out):
    ok: bool
    backend: str = Field(description="implementation class (no URLs or credentials)")
    latency_ms: float | None = None
    error: str | None = None
    detail: str | None = Field(default=None, description="what an operator should look at while it serves "
                                                          "(e.g. vectors the index refused); counts only")


class ReadinessResponse(_Out):
    ready: bool
    backends: dict[str, BackendStatus]


class ErrorInfo(_Out):
    type: str = Field(description="stable machine-readable kind", examples=["invalid_input"])
    message: str = Field(examples=["messages[0].role: role must be one of [...], got 'robot'"])
    field: str | None = Field(default=None, examples=["messages[0].role"])
    details: dict[str, Any] = Field(default_factory=dict)


class ErrorBody(_Out):
    """Every non-2xx response has this shape."""

    error: ErrorInfo
