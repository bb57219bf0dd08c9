"""hmem's value types: plain frozen dataclasses and the checks they are built with,
shared by every layer. Imports nothing from hmem but :mod:`hmem.errors`, so every other
module may depend on this one.

* the primitives: size limits, ids, the clock; checks of ids, text and timestamps;
  :func:`renamed` (an error's field as the caller named it);
* chat messages in the OpenAI shape: :class:`Message`, :class:`ToolCall`, and the
  trusted fast decoding of messages hmem stored itself;
* the stored records: sessions, summaries, profile entries, memory items, hits;
* prompt assembly's values: tiers, drop reasons, the report of what was kept and cut,
  and the assembled context.

Example::

    >>> check_id("user-1", "user_id")
    'user-1'
    >>> as_datetime("2024-05-01T12:00:00Z").isoformat()
    '2024-05-01T12:00:00+00:00'
    >>> m = Message.from_openai({"role": "user", "content": "hi"})
    >>> m.to_openai()
    {'role': 'user', 'content': 'hi'}
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeAlias, get_args

from hmem.errors import InvalidInput

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "MAX_CLOCK_SKEW",
    "MAX_CONTENT_CHARS",
    "MAX_ID_CHARS",
    "RELEVANCE_CUTOFF",
    "ROLES",
    "STOP_REASONS",
    "TIERS",
    "AssembledContext",
    "AssemblyReport",
    "DropReason",
    "Hit",
    "JSONScalar",
    "Job",
    "JobCounts",
    "JobSpec",
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
    "check_utf8",
    "coerce_messages",
    "message_ids",
    "new_id",
    "renamed",
    "utcnow",
]


# -- primitives --------------------------------------------------------------------------

#: Largest accepted message content / memory text, in characters (about 1 MB of
#: ASCII). Bigger payloads are almost always a bug (a file pasted by accident).
MAX_CONTENT_CHARS = 1_000_000
#: Longest accepted id (user, session, message, item), in characters.
MAX_ID_CHARS = 256

#: How far ahead of hmem's clock a caller-given time (a message's or an item's
#: ``created_at``) may be: clocks of different machines drift by seconds, not
#: minutes. A time further ahead would outrank everything in recency until it passes.
MAX_CLOCK_SKEW = timedelta(minutes=5)

#: Default relevance cut-off of a prompt's recalled tier: a hit scoring below this
#: share of the best hit's score is left out (reason ``"relevance"``). Chosen with
#: ``bench/bench_context_depth.py`` (docs/assembly.md, "How deep recall goes").
RELEVANCE_CUTOFF = 0.1

#: What a prompt's memory tiers may take without a ``budget`` argument: enough for the
#: evidence the calibrated stop keeps, not what a 128k window allows (docs/assembly.md,
#: "Stopping"; measured with bench/bench_context_depth.py).
DEFAULT_MEMORY_BUDGET = 1500

JSONScalar: TypeAlias = str | int | float | bool | None


def utcnow() -> datetime:
    """The current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


def new_id() -> str:
    """A fresh random id (32 hex characters)."""
    return uuid.uuid4().hex


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # ids are checked many times per add: one scan in C


def check_id(value: object, field_name: str) -> str:
    """Return ``value`` if it is a usable id, else raise :class:`InvalidInput`.

    An id is a non-empty string of at most :data:`MAX_ID_CHARS` characters without
    control characters or surrounding whitespace.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{field_name} must be a string, got {type(value).__name__}", field=field_name)
    if not value or not value.strip():
        raise InvalidInput(f"{field_name} must not be empty", field=field_name)
    if value != value.strip():
        raise InvalidInput(f"{field_name} must not start or end with whitespace: {value!r}", field=field_name)
    if len(value) > MAX_ID_CHARS:
        raise InvalidInput(f"{field_name} is longer than {MAX_ID_CHARS} characters", field=field_name)
    if _CONTROL.search(value):
        raise InvalidInput(f"{field_name} must not contain control characters: {value!r}", field=field_name)
    check_utf8(value, field_name)
    return value


def check_text(value: object, field_name: str, *, allow_empty: bool = True) -> str:
    """Return ``value`` if it is acceptable text content, else raise :class:`InvalidInput`."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field_name} must be a string, got {type(value).__name__}", field=field_name)
    if not allow_empty and not value.strip():
        raise InvalidInput(f"{field_name} must not be empty", field=field_name)
    if len(value) > MAX_CONTENT_CHARS:
        raise InvalidInput(
            f"{field_name} has {len(value):,} characters; the limit is {MAX_CONTENT_CHARS:,}",
            field=field_name,
        )
    check_utf8(value, field_name)
    return value


def check_utf8(value: str, field_name: str) -> None:
    """Raise :class:`InvalidInput` when ``value`` cannot be encoded as UTF-8."""
    # Lone surrogates (e.g. from bytes decoded with 'surrogateescape') cannot be
    # stored as UTF-8 by any backend; reject them up front.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field_name} is not valid UTF-8 (lone surrogate)", field=field_name) from None


def as_datetime(value: object, field_name: str = "created_at") -> datetime:
    """Coerce a datetime, ISO-8601 string or epoch seconds to an aware UTC datetime."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, bool):
        raise InvalidInput(f"{field_name} must be a datetime, ISO string or epoch seconds", field=field_name)
    elif isinstance(value, int | float):
        try:  # float() of a huge int overflows too
            seconds = float(value)
        except OverflowError:
            raise InvalidInput(f"{field_name} is out of range (epoch seconds)", field=field_name) from None
        if not math.isfinite(seconds):
            raise InvalidInput(f"{field_name} must be finite", field=field_name)
        try:
            dt = datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            raise InvalidInput(f"{field_name} is out of range: {value!r}", field=field_name) from None
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"{field_name} is not an ISO-8601 timestamp: {value!r}", field=field_name) from None
    else:
        raise InvalidInput(
            f"{field_name} must be a datetime, ISO string or epoch seconds, got {type(value).__name__}",
            field=field_name,
        )
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    try:
        return dt.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+05:00 is before year 1 in UTC
        raise InvalidInput(
            f"{field_name} is out of range: {value!r} (it must fall within years 1-9999 in UTC)", field=field_name
        ) from None


def check_not_future(moment: datetime, field_name: str, now: datetime) -> datetime:
    """``moment`` unless it is more than :data:`MAX_CLOCK_SKEW` after ``now``.

    >>> now = datetime(2024, 5, 1, tzinfo=UTC)
    >>> check_not_future(now + timedelta(minutes=4), "created_at", now) > now
    True
    >>> check_not_future(now + timedelta(days=1), "created_at", now)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    hmem.errors.InvalidInput: created_at 2024-05-02T00:00:00+00:00 is in the future ...
    """
    if moment - now > MAX_CLOCK_SKEW:
        raise InvalidInput(
            f"{field_name} {moment.isoformat()} is in the future (now is {now.isoformat()}; at most "
            f"{MAX_CLOCK_SKEW.total_seconds():.0f} s ahead is accepted as clock skew); omit it to use the current time",
            field=field_name,
        )
    return moment


def renamed(exc: InvalidInput, names: Mapping[str, str]) -> InvalidInput:
    """``exc`` with an internal field name replaced by the one the caller used.

    ``names`` maps an internal name to the caller's; paths below it follow
    (``entries[0]`` → ``""`` turns ``entries[0].text`` into ``text``). The name is
    also replaced where the message states it as a field (``"<name> must …"``,
    ``"<name>: …"``). Without a match, ``exc`` itself is returned.

    >>> str(renamed(InvalidInput("explicit must be >= 0, got -1", field="explicit"), {"explicit": "budget"}))
    'budget must be >= 0, got -1'
    >>> renamed(InvalidInput("entries[0].text must not be empty", field="entries[0].text"), {"entries[0]": ""}).field
    'text'
    """
    field = exc.field
    for old, new in names.items():
        if field is None or not (field == old or field.startswith((old + ".", old + "["))):
            continue
        new_field = (new + field[len(old):]) if new else field[len(old):].lstrip(".")
        as_field = re.compile(
            r"(?<![\w.\[\]])" + re.escape(field) + r"(?=\s+(?:must|is|has|contains)\b|:|$)"
        )
        message = as_field.sub(new_field.replace("\\", "\\\\"), str(exc))
        out = type(exc)(message, field=new_field or None)
        out.__cause__ = exc.__cause__
        return out
    return exc

# -- messages ----------------------------------------------------------------------------

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
    more than :data:`MAX_CLOCK_SKEW` after ``now`` is refused too.

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

# -- stored records ----------------------------------------------------------------------

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

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON-ready values (the shape of the CLI's ``--json``, the HTTP API and MCP)."""
        return {
            "key": self.key,
            "value": list(self.value) if isinstance(self.value, tuple) else self.value,
            "valid_from": self.valid_from.isoformat(),
            "valid_to": self.valid_to.isoformat() if self.valid_to else None,
            "confirmed_at": self.confirmed_at.isoformat() if self.confirmed_at else None,
            "confidence": self.confidence,
            "current": self.is_current,
            "provenance": {"source": self.provenance.source, "session_id": self.provenance.session_id,
                           "message_id": self.provenance.message_id},
        }


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

    def to_dict(self) -> dict[str, Any]:
        """The item as JSON-ready values (the shape of the CLI's ``--json``, the HTTP API and MCP)."""
        return {
            "id": self.id, "text": self.text, "kind": self.kind, "importance": self.importance,
            "session_id": self.session_id, "source_message_id": self.source_message_id, "speaker": self.speaker,
            "created_at": self.created_at.isoformat(), "updated_at": self.updated_at.isoformat(),
            "metadata": dict(self.metadata),
        }


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
    #: For a turn found through its sentence keys: the number of its key sentence nearest
    #: the question (:func:`hmem.longterm.index_text.sentence_keys` order), the passage an
    #: excerpt of it is built around; None otherwise.
    passage: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The item's :meth:`MemoryItem.to_dict` with how it ranked."""
        return {
            **self.item.to_dict(), "score": self.score, "fused_score": self.fused_score,
            "lexical_rank": self.lexical_rank, "lexical_score": self.lexical_score, "dense_rank": self.dense_rank,
            "dense_score": self.dense_score, "boosts": dict(self.boosts), "round": self.round,
            "passage": self.passage,
        }


# -- background jobs ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobSpec:
    """Work derived from an acknowledged write, to be done after it returns (a
    :class:`~hmem.protocols.JobQueue` stores it durably first).

    ``kind`` picks the handler; ``payload`` is JSON (it must be enough to do the work
    after a restart); ``key`` names what the job is about (an item id, a session), so
    jobs can be coalesced and dropped by it.
    """

    kind: str
    user_id: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """A queued :class:`JobSpec`, with its queue id (ordered: a later put has a larger
    ``seq``), the runs that failed so far and the last error."""

    id: str
    seq: int
    kind: str
    user_id: str
    payload: Mapping[str, Any]
    key: str | None
    attempts: int = 0
    error: str | None = None
    created_at: float = 0.0  # epoch seconds


@dataclass(frozen=True, slots=True)
class JobCounts:
    """Jobs of one kind: ``waiting`` (due or in back-off, not running), ``running``
    (taken, not finished) and ``quarantined`` (failed too often; set aside)."""

    waiting: int = 0
    running: int = 0
    quarantined: int = 0

    def __add__(self, other: JobCounts) -> JobCounts:
        return JobCounts(self.waiting + other.waiting, self.running + other.running,
                         self.quarantined + other.quarantined)


# -- prompt assembly ---------------------------------------------------------------------

#: The assembler's tiers, highest priority first ("pinned" = system/developer
#: messages found inside the session buffer, kept like the system prompt).
Tier: TypeAlias = Literal["system", "current_turn", "history", "summary", "profile", "recalled"]
TIERS: tuple[Tier, ...] = get_args(Tier)

#: Why an item was left out of an assembled context (see docs/assembly.md).
DropReason: TypeAlias = Literal[
    "budget",  # no room left in the token budget
    "tier cap",  # its tier reached its share of the budget
    "history cut",  # an older history group than one that did not fit (history stays contiguous)
    "orphan tool",  # a tool result without the assistant call it answers
    "unanswered tool call",  # an assistant tool call whose results are missing
    "not current",  # a profile entry that is superseded or deleted
    "duplicate",  # a recalled item whose source message is already in the prompt
    "empty",  # nothing to render (blank summary)
    "relevance",  # a recalled item scored below the relevance cut-off (a share of the best hit's score)
    "recall limit",  # a recalled item past the caller's explicit ``k``
    "threshold",  # a recalled item whose estimated chance of holding the answer is not worth its tokens
    "memory budget",  # the memory tiers (summary, profile, recalled) used the default memory budget
]

#: The reasons that can stop a tier from growing (see :attr:`TierReport.stopped_by`).
STOP_REASONS: tuple[DropReason, ...] = (
    "budget", "tier cap", "relevance", "recall limit", "threshold", "memory budget",
)


_STOP_WORDS: dict[str, str] = {
    "budget": "the budget was used",
    "tier cap": "the tier's share of the budget was used",
    "relevance": "next item below the relevance cut-off",
    "recall limit": "the caller's k was reached",
    "memory budget": "the default memory budget was used",
}


@dataclass(frozen=True, slots=True)
class ReportItem:
    """One candidate of the assembler and its fate.

    ``ref`` names it: a message id, ``"system_prompt"``, ``"summary"``, a profile key,
    or a memory item id. ``tokens`` is its own cost (``count_message`` for a message,
    ``count`` of its rendered line for a memory entry). ``reason`` is None when kept.
    A recalled item also has ``chance``: its estimated chance of holding the answer
    when the calibrated stop judged it (:mod:`hmem.assembly.stopping`), and
    ``whole_tokens``: the whole item's tokens when only an excerpt of it was rendered
    (:mod:`hmem.assembly.excerpt`; ``ref`` points to the whole item).
    """

    tier: Tier
    ref: str
    kept: bool
    tokens: int
    reason: DropReason | None = None
    chance: float | None = None
    whole_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class TierReport:
    """Totals of one tier: kept tokens, counts and its cap in tokens (None = uncapped).

    ``cap`` is the cap the tier was held to: its share of the budget, plus what other
    tiers left unused (see :class:`~hmem.assembly.assemble.TierCaps`). ``stopped_by``
    says what stopped the tier from taking more: ``"budget"``, ``"tier cap"``,
    ``"relevance"`` (recalled: the next hit fell below the cut-off), ``"recall
    limit"`` (recalled: the caller's ``k``), ``"threshold"`` (recalled: the next hit's
    estimated chance of holding the answer, ``estimate``, was not worth its tokens) or
    ``"memory budget"`` (the default memory budget was used); None when every
    candidate was kept or the tier had none.
    """

    tier: Tier
    tokens: int
    kept: int
    dropped: int
    cap: int | None = None
    stopped_by: DropReason | None = None
    estimate: float | None = None

    @property
    def stop_note(self) -> str | None:
        """``stopped_by`` in words, for people (the inspector, ``hmem window``).

        >>> TierReport("recalled", 300, 5, 9, stopped_by="threshold", estimate=0.031).stop_note
        'stopped: next item below the calibrated threshold (estimated chance 3.1%)'
        """
        if self.stopped_by is None:
            return None
        if self.stopped_by == "threshold":
            shown = "" if self.estimate is None else f" (estimated chance {100 * self.estimate:.1f}%)"
            return f"stopped: next item below the calibrated threshold{shown}"
        return f"stopped: {_STOP_WORDS.get(self.stopped_by, self.stopped_by)}"


@dataclass(frozen=True, slots=True)
class AssemblyReport:
    """What the assembler kept, what it dropped and why.

    ``total`` is the exact token count of the assembled messages (``<= budget``);
    ``overhead`` is the part not attributed to any item (reply primer, headers,
    separators): ``total == sum(t.tokens for t in tiers) + overhead``.
    ``truncated_tokens`` > 0 when the current turn's user text was cut (opt-in).
    """

    budget: int
    total: int
    overhead: int
    tiers: tuple[TierReport, ...]
    items: tuple[ReportItem, ...]
    truncated_tokens: int = 0

    def tier(self, name: Tier) -> TierReport:
        for report in self.tiers:
            if report.tier == name:
                return report
        raise KeyError(name)

    @property
    def dropped(self) -> tuple[ReportItem, ...]:
        return tuple(item for item in self.items if not item.kept)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (for logs, the CLI and the HTTP API)."""
        return {
            "budget": self.budget,
            "total": self.total,
            "overhead": self.overhead,
            "truncated_tokens": self.truncated_tokens,
            "tiers": [
                {"tier": t.tier, "tokens": t.tokens, "kept": t.kept, "dropped": t.dropped, "cap": t.cap,
                 "stopped_by": t.stopped_by, "estimate": t.estimate, "stop_note": t.stop_note}
                for t in self.tiers
            ],
            "items": [
                {"tier": i.tier, "ref": i.ref, "kept": i.kept, "tokens": i.tokens, "reason": i.reason,
                 "chance": i.chance, "whole_tokens": i.whole_tokens}
                for i in self.items
            ],
        }


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """A prompt ready for ``client.chat.completions.create(messages=ctx.messages)``.

    ``tokens`` is ``tokenizer.count_messages`` of exactly these messages. ``recalled``
    are the recall candidates the assembler weighed, best first, with their ranks and
    scores (the report's ``"recalled"`` items name them by ``item.id``).
    """

    messages: list[dict[str, Any]]
    tokens: int
    report: AssemblyReport
    recalled: tuple[Hit, ...] = ()
