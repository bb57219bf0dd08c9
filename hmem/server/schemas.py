"""HTTP models of the hmem API and their mapping to and from :mod:`hmem.types`.

The models only shape JSON (types, required fields, examples for the OpenAPI
schema); every rule about *values* (roles, id syntax, text limits, UTF-8 …) stays in
hmem's own validation, which the handlers reach through :class:`~hmem.memory.Memory`.
Both kinds of failure come back as the same 422 body (see :mod:`hmem.server.errors`).

Example::

    >>> AppendRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]}).to_domain()[0]["role"]
    'user'
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from hmem.types import (
    Hit,
    JSONScalar,
    MemoryItem,
    Message,
    ProfileEntry,
    ProfileValue,
    SessionInfo,
    ToolCall,
)

if TYPE_CHECKING:
    from hmem.longterm.store import RememberResult
    from hmem.memory import AddResult

__all__ = [
    "AppendRequest",
    "AppendResponse",
    "ContextRequest",
    "ContextResponse",
    "DeletedResponse",
    "ErrorBody",
    "ErrorInfo",
    "ForgetRequest",
    "HistoryResponse",
    "HitOut",
    "ItemList",
    "ItemOut",
    "MessageIn",
    "MessageOut",
    "ProfileEntryOut",
    "ProfileList",
    "ProfileSetRequest",
    "ReadinessResponse",
    "RecallRequest",
    "RecallResponse",
    "RememberRequest",
    "RememberResponse",
    "SessionList",
    "SessionOut",
    "SystemPromptRequest",
    "UserForgotten",
]

Metadata = dict[str, JSONScalar]
#: ISO-8601 text or epoch seconds (hmem's ``as_datetime`` takes both; naive means UTC).
Timestamp = datetime | StrictFloat


class _In(BaseModel):
    # Numbers and booleans are strict (no "1" -> 1, no false -> 0.0): a client sending the
    # wrong JSON type has a bug worth hearing about. Unknown fields are a typo on the client's side: say so instead of ignoring them.
    # NaN/Infinity are valid in Python's JSON reader but never a meaningful input.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Out(BaseModel):
    model_config = ConfigDict(allow_inf_nan=True)


# -- messages ---------------------------------------------------------------------


class FunctionCall(_In):
    name: str = Field(examples=["get_weather"])
    arguments: str | dict[str, Any] = Field(
        default="{}", description="JSON text as the model produced it (an object is accepted and re-encoded)",
        examples=['{"city": "Berlin"}'],
    )


class ToolCallIn(_In):
    id: str = Field(examples=["call_1"])
    type: Literal["function"] = "function"
    function: FunctionCall


class MessageIn(_In):
    """One chat message in the OpenAI shape, plus optional hmem ``id``/``created_at``/``metadata``."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={"examples": [{"role": "user", "content": "I'm allergic to peanuts.", "id": "m1"}]},
    )

    role: Literal["system", "developer", "user", "assistant", "tool"] = Field(examples=["user"])
    content: str | None = Field(default=None, examples=["I'm allergic to peanuts."])
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    id: str | None = Field(default=None, description="client-chosen id (unique per session); generated if omitted")
    created_at: Timestamp | None = None
    metadata: Metadata | None = None

    def to_domain(self) -> dict[str, Any]:
        """The OpenAI dict :meth:`hmem.types.Message.from_openai` takes (hmem validates it)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [tc.model_dump() for tc in self.tool_calls]
        for name in ("name", "tool_call_id", "id", "created_at", "metadata"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


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


class AppendRequest(_In):
    messages: list[MessageIn] = Field(
        min_length=1, max_length=1000,
        examples=[[{"role": "user", "content": "I moved to Berlin last month.", "id": "m1"},
                   {"role": "assistant", "content": "Welcome to Berlin!", "id": "m2"}]],
    )

    def to_domain(self) -> list[dict[str, Any]]:
        return [m.to_domain() for m in self.messages]


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


class SystemPromptRequest(_In):
    prompt: str | None = Field(description="null removes the stored prompt", examples=["You are a concise assistant."])


class DeletedResponse(_Out):
    deleted: int = Field(description="how many records were deleted")


class UserForgotten(_Out):
    sessions: int
    profile_keys: int
    items: int


# -- context ------------------------------------------------------------------------


class ContextRequest(_In):
    """What to assemble; every field is optional."""

    query: str | None = Field(default=None, description="recall query (default: the last user message)",
                              examples=["what should I cook tonight?"])
    model: str | None = Field(default=None, description="chat model whose tokenizer and window apply",
                              examples=["gpt-4o-mini"])
    budget: StrictInt | None = Field(default=None, ge=1, description="token budget (default: window - reply reserve)",
                               examples=[4000])
    system_prompt: str | None = Field(default=None, description="overrides the session's stored prompt",
                                      examples=["You are a helpful assistant."])
    k: StrictInt | None = Field(default=None, ge=0, le=1000, description="recalled items to consider", examples=[10])
    truncate_current_turn: StrictBool = Field(default=False, description="cut an oversized current turn instead of 409")


class ContextResponse(_Out):
    messages: list[dict[str, Any]] = Field(description="OpenAI chat messages, ready to send",
                                           examples=[[{"role": "system", "content": "You are a helpful assistant."},
                                                      {"role": "user", "content": "what should I cook tonight?"}]])
    tokens: int
    report: dict[str, Any] = Field(description="what was kept, cut and why (see docs/assembly.md)")


# -- long-term items ------------------------------------------------------------------


class RememberRequest(_In):
    text: str = Field(examples=["Allergic to peanuts"])
    kind: str = Field(default="fact", examples=["preference"])
    importance: StrictFloat = Field(default=0.5, ge=0.0, le=1.0, examples=[0.8])
    metadata: Metadata | None = Field(default=None, examples=[{"source": "onboarding"}])
    session_id: str | None = None
    created_at: Timestamp | None = None

    def to_domain(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "kind": self.kind, "importance": self.importance,
                               "metadata": self.metadata}
        if self.session_id is not None:
            out["session_id"] = self.session_id
        if self.created_at is not None:
            out["created_at"] = self.created_at
        return out


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


class RecallRequest(_In):
    query: str = Field(examples=["food allergies"])
    k: StrictInt = Field(default=10, ge=1, le=1000)
    kinds: list[str] | None = Field(default=None, examples=[["fact", "preference"]])
    session_id: str | None = None
    since: Timestamp | None = None
    until: Timestamp | None = None
    metadata: Metadata | None = None
    fusion: Literal["rrf", "weighted"] | None = Field(
        default=None, description="score fusion; null = the store's tuned default (weighted, lexical 0.6)")
    recency_half_life_s: StrictFloat | None = Field(default=None, gt=0, le=1e9, description="recency boost half-life, seconds")
    importance_weight: StrictFloat = Field(default=0.0, ge=0.0, le=1e6)
    mmr_lambda: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)

    def filters(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`hmem.memory.Memory.recall` besides user, query and k."""
        return {"kinds": self.kinds, "session_id": self.session_id, "since": self.since, "until": self.until,
                "metadata": self.metadata, "fusion": self.fusion, "recency_half_life": self.recency_half_life_s,
                "importance_weight": self.importance_weight, "mmr_lambda": self.mmr_lambda}


class HitOut(_Out):
    item: ItemOut
    score: float
    fused_score: float | None = None
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_score: float | None = None
    boosts: dict[str, float] = Field(default_factory=dict)

    @classmethod
    def of(cls, h: Hit) -> HitOut:
        return cls(item=ItemOut.of(h.item), score=h.score, fused_score=h.fused_score, lexical_rank=h.lexical_rank,
                   lexical_score=h.lexical_score, dense_rank=h.dense_rank, dense_score=h.dense_score,
                   boosts=dict(h.boosts))


class RecallResponse(_Out):
    hits: list[HitOut]


class ForgetRequest(_In):
    """Delete by ids and/or filters (ANDed), or everything with ``all``."""

    ids: list[str] | None = Field(default=None, examples=[["4f1c…"]])
    kinds: list[str] | None = None
    session_id: str | None = None
    before: Timestamp | None = Field(default=None, description="items created strictly before this time")
    all: StrictBool = False

    def filters(self) -> dict[str, Any]:
        return {"kinds": self.kinds, "session_id": self.session_id, "before": self.before, "all": self.all}


# -- profile --------------------------------------------------------------------------


class ProfileSetRequest(_In):
    value: StrictStr | StrictInt | StrictFloat | StrictBool | list[StrictStr] = Field(examples=["Berlin"])
    confidence: StrictFloat = Field(default=1.0, ge=0.0, le=1.0)

    def domain_value(self) -> ProfileValue:
        return tuple(self.value) if isinstance(self.value, list) else self.value


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


# -- health and errors ------------------------------------------------------------------


class BackendStatus(_Out):
    ok: bool
    backend: str = Field(description="implementation class (no URLs or credentials)")
    latency_ms: float | None = None
    error: str | None = None


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
