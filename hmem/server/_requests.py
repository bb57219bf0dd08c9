"""Request bodies of the hmem HTTP API and their mapping to hmem's arguments.

The models only shape JSON (types, required fields, examples for the OpenAPI
schema); every rule about *values* (roles, id syntax, text limits, UTF-8 …) stays in
hmem's own validation, which the handlers reach through :class:`~hmem.memory.Memory`.
Both kinds of failure come back as the same 422 body (see :mod:`hmem.server.errors`),
with ``field`` naming the body field: :data:`HTTP_FIELD_NAMES` maps the few Python
argument names that differ from their body field.

Example::

    >>> AppendRequest.model_validate({"messages": [{"role": "user", "content": "hi"}]}).to_domain()[0]["role"]
    'user'
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from pydantic_core import PydanticCustomError

from hmem.longterm.options import RecallOptions
from hmem.types import JSONScalar, ProfileValue

__all__ = [
    "HTTP_FIELD_NAMES",
    "AppendRequest",
    "ContextRequest",
    "ForgetRequest",
    "FunctionCall",
    "MessageIn",
    "Metadata",
    "ProfileSetRequest",
    "RecallRequest",
    "RememberRequest",
    "SystemPromptRequest",
    "Timestamp",
    "ToolCallIn",
]


def _flat(value: object) -> object:
    """Refuse a nested metadata value with what to do instead (pydantic would list every
    scalar type it is not); every other rule on metadata is hmem's own validation."""
    if isinstance(value, Mapping | list):
        raise PydanticCustomError("metadata_nested", "must be a string, number, bool or null (nested objects and lists "
                                  "are not stored: flatten them into keys like 'a.b', or put them in the text)")
    return value


Metadata = dict[str, Annotated[JSONScalar, BeforeValidator(_flat)]]

#: ISO-8601 text or epoch seconds (hmem's ``as_datetime`` takes both; naive means UTC).
Timestamp = datetime | StrictFloat

#: hmem argument name → the request body field that carries it, where the two differ
#: (an error about the argument must name what the HTTP client sent).
HTTP_FIELD_NAMES: dict[str, str] = {"recency_half_life": "recency_half_life_s"}


class _In(BaseModel):
    # Numbers and booleans are strict (no "1" -> 1, no false -> 0.0): a client sending the
    # wrong JSON type has a bug worth hearing about. Unknown fields are a typo on the client's side: say so instead of ignoring them.
    # NaN/Infinity are valid in Python's JSON reader but never a meaningful input.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


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


class AppendRequest(_In):
    messages: list[MessageIn] = Field(
        min_length=1, max_length=1000,
        examples=[[{"role": "user", "content": "I moved to Berlin last month.", "id": "m1"},
                   {"role": "assistant", "content": "Welcome to Berlin!", "id": "m2"}]],
    )

    def to_domain(self) -> list[dict[str, Any]]:
        return [m.to_domain() for m in self.messages]


class SystemPromptRequest(_In):
    prompt: str | None = Field(description="null removes the stored prompt", examples=["You are a concise assistant."])


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


class RecallRequest(_In):
    query: str = Field(examples=["food allergies"])
    k: StrictInt = Field(default=10, ge=1, le=1000)
    kinds: list[str] | None = Field(default=None, examples=[["fact", "preference"]])
    session_id: str | None = None
    since: Timestamp | None = None
    until: Timestamp | None = None
    metadata: Metadata | None = None
    fusion: Literal["rrf", "weighted", "lexical", "dense"] | None = Field(
        default=None, description="score fusion; null = the store's tuned default (weighted, lexical 0.6); "
                                  "'lexical' or 'dense' = that retriever alone, unfused, no ranking stages")
    recency_half_life_s: StrictFloat | None = Field(default=None, gt=0, le=1e9, description="recency boost half-life, seconds")
    importance_weight: StrictFloat = Field(default=0.0, ge=0.0, le=1e6)
    mmr_lambda: StrictFloat | None = Field(default=None, ge=0.0, le=1.0)

    def options(self) -> RecallOptions:
        """The request's filters and ranking (checked: a bad one is InvalidInput, a 422)."""
        return RecallOptions(kinds=self.kinds, session_id=self.session_id, since=self.since, until=self.until,
                             metadata=self.metadata, fusion=self.fusion, recency_half_life=self.recency_half_life_s,
                             importance_weight=self.importance_weight, mmr_lambda=self.mmr_lambda)


class ForgetRequest(_In):
    """Delete by ids and/or filters (ANDed), or everything with ``all``."""

    ids: list[str] | None = Field(default=None, examples=[["4f1c…"]])
    kinds: list[str] | None = None
    session_id: str | None = None
    before: Timestamp | None = Field(default=None, description="items created strictly before this time")
    all: StrictBool = False

    def filters(self) -> dict[str, Any]:
        return {"kinds": self.kinds, "session_id": self.session_id, "before": self.before, "all": self.all}


class ProfileSetRequest(_In):
    value: StrictStr | StrictInt | StrictFloat | StrictBool | list[StrictStr] = Field(examples=["Berlin"])
    confidence: StrictFloat = Field(default=1.0, ge=0.0, le=1.0)

    def domain_value(self) -> ProfileValue:
        return tuple(self.value) if isinstance(self.value, list) else self.value
