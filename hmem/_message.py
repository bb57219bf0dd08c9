"""Chat messages in the OpenAI shape: :class:`Message`, :class:`ToolCall`, and the
trusted fast decoding of messages hmem stored itself.

Imports nothing from hmem except :mod:`hmem.errors` and :mod:`hmem._primitives`;
:mod:`hmem.types` re-exports every public name.

Example::

    >>> m = Message.from_openai({"role": "user", "content": "hi"})
    >>> m.to_openai()
    {'role': 'user', 'content': 'hi'}
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, get_args

from hmem._primitives import (
    JSONScalar,
    as_datetime,
    check_id,
    check_not_future,
    check_text,
    new_id,
    renamed,
    utcnow,
)
from hmem.errors import InvalidInput

__all__ = ["ROLES", "Message", "Role", "ToolCall", "coerce_messages", "message_ids"]

Role: TypeAlias = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset(get_args(Role))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call requested by an assistant message (OpenAI shape).

    ``arguments`` is the JSON text exactly as the model produced it.
    """

    id: str
    name: str
    arguments: str = "{}"
    type: str = "function"

    def __post_init__(self) -> None:
        check_id(self.id, "tool_calls[].id")
        if not isinstance(self.name, str) or not self.name:
            raise InvalidInput("tool_calls[].function.name must be a non-empty string", field="tool_calls[].function.name")
        if not isinstance(self.arguments, str):
            raise InvalidInput(
                "tool_calls[].function.arguments must be a JSON string", field="tool_calls[].function.arguments"
            )
        if self.type != "function":
            raise InvalidInput(f"tool_calls[].type must be 'function', got {self.type!r}", field="tool_calls[].type")

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_openai(cls, data: object, index: int = 0) -> ToolCall:
        where = f"tool_calls[{index}]"
        if not isinstance(data, Mapping):
            raise InvalidInput(f"{where} must be an object", field=where)
        fn = data.get("function")
        if not isinstance(fn, Mapping):
            raise InvalidInput(f"{where}.function must be an object with name and arguments", field=f"{where}.function")
        arguments = fn.get("arguments", "{}")
        if isinstance(arguments, Mapping):  # some clients send a parsed object; keep it as JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        try:
            return cls(
                id=data.get("id"),  # type: ignore[arg-type]  # validated in __post_init__
                name=fn.get("name"),  # type: ignore[arg-type]
                arguments=arguments,  # type: ignore[arg-type]
                type=data.get("type", "function"),  # type: ignore[arg-type]
            )
        except InvalidInput as exc:  # __post_init__ cannot know the index: name it here
            raise renamed(exc, {"tool_calls[]": where}) from None


_OPENAI_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_HMEM_KEYS = frozenset({"id", "created_at", "metadata"})


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message in the OpenAI shape, plus hmem's ``id`` and ``created_at``.

    ``content`` is ``None`` only for an assistant message that just calls tools.
    Construction validates; bad data raises :class:`InvalidInput` naming the field.

    Example::

        >>> m = Message(role="user", content="I live in Berlin", id="t1")
        >>> Message.from_openai(m.to_openai(include_meta=True)) == m
        True
    """

    role: Role
    content: str | None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    id: str = field(default_factory=new_id)
    created_at: datetime = field(default_factory=utcnow)
    metadata: Mapping[str, JSONScalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidInput(f"role must be one of {sorted(ROLES)}, got {self.role!r}", field="role")
        check_id(self.id, "id")
        # Normalize to aware UTC so equality and ordering never depend on the caller's zone.
        if not isinstance(self.created_at, datetime) or self.created_at.tzinfo is not UTC:
            object.__setattr__(self, "created_at", as_datetime(self.created_at))
        if self.content is None:
            if not (self.role == "assistant" and self.tool_calls):
                raise InvalidInput(
                    "content may be None only for an assistant message with tool_calls", field="content"
                )
        else:
            check_text(self.content, "content")
        if self.name is not None:
            check_id(self.name, "name")
        if not isinstance(self.tool_calls, tuple):
            if isinstance(self.tool_calls, list):
                object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
            else:
                raise InvalidInput("tool_calls must be a list", field="tool_calls")
        if self.tool_calls:
            if self.role != "assistant":
                raise InvalidInput("only assistant messages may have tool_calls", field="tool_calls")
            for tc in self.tool_calls:
                if not isinstance(tc, ToolCall):
                    raise InvalidInput("tool_calls must hold ToolCall values", field="tool_calls")
            ids = [tc.id for tc in self.tool_calls]
            if len(set(ids)) != len(ids):
                raise InvalidInput("tool_calls ids must be unique within a message", field="tool_calls")
        if self.role == "tool":
            if self.tool_call_id is None:
                raise InvalidInput("a tool message needs tool_call_id", field="tool_call_id")
            check_id(self.tool_call_id, "tool_call_id")
        elif self.tool_call_id is not None:
            raise InvalidInput("only tool messages may have tool_call_id", field="tool_call_id")
        if not isinstance(self.metadata, Mapping):
            raise InvalidInput("metadata must be an object", field="metadata")
        for key, value in self.metadata.items():
            if not isinstance(key, str):
                raise InvalidInput("metadata keys must be strings", field="metadata")
            if value is not None and not isinstance(value, str | int | float | bool):
                raise InvalidInput(f"metadata[{key!r}] must be a string, number, bool or null", field="metadata")
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidInput(f"metadata[{key!r}] must be finite", field="metadata")

    # -- OpenAI dicts -------------------------------------------------------------

    @classmethod
    def from_openai(cls, data: object) -> Message:
        """Build a message from an OpenAI chat dict (extra hmem keys ``id``,
        ``created_at``, ``metadata`` are honoured; other unknown keys are rejected)."""
        if isinstance(data, Message):
            return data
        if not isinstance(data, Mapping):
            raise InvalidInput(f"a message must be an object, got {type(data).__name__}", field="message")
        unknown = set(data) - _OPENAI_KEYS - _HMEM_KEYS
        if unknown:
            raise InvalidInput(f"unknown message field(s): {sorted(unknown)}", field=sorted(unknown)[0])
        if "role" not in data:
            raise InvalidInput("a message needs a role", field="role")
        raw_calls = data.get("tool_calls") or ()
        if not isinstance(raw_calls, list | tuple):
            raise InvalidInput("tool_calls must be a list", field="tool_calls")
        calls = tuple(ToolCall.from_openai(tc, i) for i, tc in enumerate(raw_calls))
        kwargs: dict[str, Any] = {
            "role": data["role"],
            "content": data.get("content"),
            "name": data.get("name"),
            "tool_calls": calls,
            "tool_call_id": data.get("tool_call_id"),
        }
        if data.get("id") is not None:
            kwargs["id"] = data["id"]
        if data.get("created_at") is not None:
            kwargs["created_at"] = as_datetime(data["created_at"])
        if data.get("metadata") is not None:
            kwargs["metadata"] = data["metadata"]
        return cls(**kwargs)

    def to_openai(self, *, include_meta: bool = False) -> dict[str, Any]:
        """The OpenAI chat dict; with ``include_meta`` also ``id``, ``created_at``
        (ISO-8601) and ``metadata`` for lossless storage."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [tc.to_openai() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if include_meta:
            out["id"] = self.id
            out["created_at"] = self.created_at.isoformat()
            if self.metadata:
                out["metadata"] = dict(self.metadata)
        return out

    def to_json(self) -> str:
        """Compact JSON of :meth:`to_openai` with meta (the storage format)."""
        return json.dumps(self.to_openai(include_meta=True), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Message:
        return cls.from_openai(json.loads(text))

    @classmethod
    def _from_storage(cls, data: str | bytes | Mapping[str, Any]) -> Message:
        """Decode a message that hmem itself stored (:meth:`to_json`), without re-validating.

        For hmem's session stores only: the message was validated when it was written,
        and re-running every check on each load costs ~3x the decoding (10,000
        messages: ~0.3 s). The result equals :meth:`from_json` of the same text
        (property-tested). Anything not in the exact storage shape (a foreign or
        corrupted row) goes through the validating :meth:`from_openai`, so bad data
        still raises :class:`InvalidInput` rather than producing an invalid message.

        Example::

            >>> m = Message(role="user", content="hi")
            >>> Message._from_storage(m.to_json()) == m
            True
        """
        raw = json.loads(data) if isinstance(data, str | bytes) else data
        try:
            return _decode_stored(raw)
        except (KeyError, TypeError, ValueError, AttributeError):
            return cls.from_openai(raw)

    def with_id(self, new: str) -> Message:
        return replace(self, id=new)

    @property
    def text(self) -> str:
        """Content, or "" for a tool-calls-only assistant message."""
        return self.content or ""


_STORED_KEYS = _OPENAI_KEYS | _HMEM_KEYS
_set = object.__setattr__


def _decode_stored(raw: Any) -> Message:
    """The trusted fast path of :meth:`Message._from_storage`: shape checks that cost
    next to nothing (any failure raises and sends the row to the validating path), then
    the frozen dataclass is filled in directly. Not re-checked: text limits, UTF-8,
    id characters, metadata values — hmem checked them when it wrote the row."""
    role, content, message_id = raw["role"], raw["content"], raw["id"]
    if (
        not raw.keys() <= _STORED_KEYS
        or role not in ROLES
        or type(message_id) is not str
        or not message_id
        or not (type(content) is str or (content is None and raw.get("tool_calls")))
        or (role == "tool") is not (type(raw.get("tool_call_id")) is str)
    ):
        raise ValueError("not a stored message")
    created = datetime.fromisoformat(raw["created_at"])
    if created.tzinfo is not UTC:  # hmem writes UTC; anything else is normalized by the slow path
        raise ValueError("not UTC")
    calls: tuple[ToolCall, ...] = ()
    raw_calls = raw.get("tool_calls")
    if raw_calls:
        if role != "assistant":
            raise ValueError("tool calls on a non-assistant message")
        built = []
        for item in raw_calls:
            fn = item["function"]
            call = object.__new__(ToolCall)
            _set(call, "id", item["id"])
            _set(call, "name", fn["name"])
            _set(call, "arguments", fn["arguments"])
            _set(call, "type", item["type"])
            built.append(call)
        calls = tuple(built)
    message = object.__new__(Message)
    _set(message, "role", role)
    _set(message, "content", content)
    _set(message, "name", raw.get("name"))
    _set(message, "tool_calls", calls)
    _set(message, "tool_call_id", raw.get("tool_call_id"))
    _set(message, "id", message_id)
    _set(message, "created_at", created)
    metadata = raw.get("metadata")
    _set(message, "metadata", {} if metadata is None else metadata)
    return message


def coerce_messages(
    messages: Iterable[object], field_name: str = "messages", *, now: datetime | None = None
) -> list[Message]:
    """Accept Messages or OpenAI dicts; validate every one; name the index on error.

    With ``now`` (a write: the caller's times are about to be stored), a ``created_at``
    more than :data:`~hmem._primitives.MAX_CLOCK_SKEW` after ``now`` is refused too.

    >>> coerce_messages([{"role": "user", "content": "hi", "created_at": "2999-01-01"}], now=utcnow())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    hmem.errors.InvalidInput: messages[0].created_at 2999-01-01T00:00:00+00:00 is in the future ...
    """
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise InvalidInput(f"{field_name} must be a list of messages", field=field_name)
    out: list[Message] = []
    for i, raw in enumerate(messages):
        try:
            out.append(Message.from_openai(raw))
        except InvalidInput as exc:
            where = f"{field_name}[{i}]" + (f".{exc.field}" if exc.field else "")
            raise InvalidInput(f"{where}: {exc}", field=where) from None
        if now is not None:
            check_not_future(out[-1].created_at, f"{field_name}[{i}].created_at", now)
    ids = [m.id for m in out]
    if len(set(ids)) != len(ids):
        raise InvalidInput(f"{field_name} contains the same message id twice", field=field_name)
    return out


def message_ids(messages: Sequence[Message]) -> list[str]:
    return [m.id for m in messages]
