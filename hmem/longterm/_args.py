"""Validation of the long-term store's inputs (pure: values in, values or
:class:`~hmem.errors.InvalidInput` out). Everything is checked before any write,
so a bad argument changes nothing.

Example::

    >>> check_entries(["I like tea"])[0].kind
    'fact'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from hmem._checks import is_finite
from hmem.errors import InvalidInput
from hmem.longterm.supersede import check_claim_metadata
from hmem.protocols import ItemFilter
from hmem.types import (
    JSONScalar,
    MemoryItem,
    Message,
    as_datetime,
    check_id,
    check_not_future,
    check_text,
    check_utf8,
    coerce_messages,
)

__all__ = [
    "MAX_METADATA_BYTES",
    "MAX_METADATA_KEYS",
    "MAX_METADATA_KEY_CHARS",
    "Entry",
    "check_entries",
    "check_entry",
    "check_forget_filter",
    "check_kinds",
    "check_metadata",
    "dense_where",
    "half_life",
    "index_metadata",
    "prepare_turns",
]

#: Bounds of an item's metadata where it enters (``remember``, ``remember_many``, the HTTP
#: API): metadata is a few tags to filter by; more belongs in the text. Beyond them a
#: single item can hurt a whole user: the vector index stores the metadata beside the
#: vector, and embedded Chroma, handed a record of ~5,000 keys, logs it and then fails
#: every later read and write of that user's collection.
MAX_METADATA_KEYS = 128
MAX_METADATA_KEY_CHARS = 256
#: The whole metadata object as compact UTF-8 JSON.
MAX_METADATA_BYTES = 64 * 1024

_ENTRY_KEYS = frozenset({"text", "kind", "importance", "metadata", "session_id", "source_message_id", "created_at"})


@dataclass(frozen=True, slots=True)
class Entry:
    """One validated item to write."""

    text: str
    kind: str = "fact"
    importance: float = 0.5
    metadata: Mapping[str, JSONScalar] = field(default_factory=dict)
    session_id: str | None = None
    source_message_id: str | None = None
    created_at: datetime | None = None
    speaker: str | None = None


def check_metadata(metadata: object, field_name: str = "metadata") -> dict[str, JSONScalar]:
    """A metadata mapping of string keys to JSON scalars (finite numbers), copied."""
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{field_name} must be an object", field=field_name)
    out: dict[str, JSONScalar] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key:
            raise InvalidInput(f"{field_name} keys must be non-empty strings", field=field_name)
        try:
            check_utf8(key, f"{field_name} key {key[:40]!r}")
        except InvalidInput as exc:
            raise InvalidInput(str(exc), field=field_name) from None
        if value is not None and not isinstance(value, str | int | float | bool):
            nested = " (nested objects and lists are not stored: flatten them into keys like 'a.b', or put "
            "them in the text)" if isinstance(value, Mapping | list | tuple) else ""
            raise InvalidInput(f"{field_name}[{key!r}] must be a string, number, bool or null{nested}",
                               field=field_name)
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"{field_name}[{key!r}] must be finite", field=field_name)
        if isinstance(value, str):
            try:
                check_text(value, f"{field_name}[{key!r}]")
            except InvalidInput as exc:  # like every metadata error: the message names the key
                raise InvalidInput(str(exc), field=field_name) from None
        out[key] = value
    return out


def check_metadata_bounds(metadata: Mapping[str, JSONScalar], field_name: str = "metadata") -> None:
    """Refuse checked metadata (:func:`check_metadata`) past :data:`MAX_METADATA_KEYS`,
    :data:`MAX_METADATA_KEY_CHARS` or :data:`MAX_METADATA_BYTES`.

    >>> check_metadata_bounds({f"k{i}": i for i in range(8000)})
    Traceback (most recent call last):
    hmem.errors.InvalidInput: metadata has 8,000 keys; the limit is 128 (a few tags to filter by; the rest in the text)
    """
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInput(f"{field_name} has {len(metadata):,} keys; the limit is {MAX_METADATA_KEYS} (a few tags to "
                           "filter by; the rest in the text)", field=field_name)
    for key in metadata:
        if len(key) > MAX_METADATA_KEY_CHARS:
            raise InvalidInput(f"{field_name} key {key[:40]!r}... is longer than {MAX_METADATA_KEY_CHARS} characters",
                               field=field_name)
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise InvalidInput(f"{field_name} takes {size:,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,} (put long "
                           "values in the text)", field=field_name)


def check_importance(value: object, field_name: str = "importance") -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not is_finite(value) or not (
        0.0 <= value <= 1.0
    ):
        raise InvalidInput(f"{field_name} must be a number in [0, 1], got {value!r}", field=field_name)
    return float(value)


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def check_entry(raw: Mapping[str, Any] | str, where: str = "", *, now: datetime | None = None) -> Entry:
    """One validated entry; errors name ``<where>.<field>`` (just ``<field>`` without
    ``where``: the arguments of ``remember``). With ``now``, a ``created_at`` more than
    :data:`~hmem.types.MAX_CLOCK_SKEW` ahead of it is refused.

    >>> check_entry({"text": "  "}).text
    Traceback (most recent call last):
    hmem.errors.InvalidInput: text must not be empty
    """
    if isinstance(raw, str):
        raw = {"text": raw}
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where or 'entry'} must be a text or an object", field=where or None)
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise InvalidInput(f"{where or 'entry'}: unknown field(s) {sorted(unknown)}",
                           field=_at(where, sorted(unknown)[0]))
    text = check_text(raw.get("text"), _at(where, "text"), allow_empty=False)
    kind = check_id(raw.get("kind", "fact"), _at(where, "kind"))
    importance = check_importance(raw.get("importance", 0.5), _at(where, "importance"))
    meta = raw.get("metadata")
    metadata = {} if meta is None else check_metadata(meta, _at(where, "metadata"))
    check_metadata_bounds(metadata, _at(where, "metadata"))
    check_claim_metadata(metadata, _at(where, "metadata"))
    opt: dict[str, str | None] = {}
    for name in ("session_id", "source_message_id"):
        value = raw.get(name)
        opt[name] = None if value is None else check_id(value, _at(where, name))
    created = None if raw.get("created_at") is None else as_datetime(raw["created_at"], _at(where, "created_at"))
    if created is not None and now is not None:
        check_not_future(created, _at(where, "created_at"), now)
    return Entry(text=text, kind=kind, importance=importance, metadata=metadata, session_id=opt["session_id"],
                 source_message_id=opt["source_message_id"], created_at=created)


def check_entries(entries: Iterable[Mapping[str, Any] | str], *, now: datetime | None = None) -> list[Entry]:
    """Validate every entry of a ``remember_many`` batch; name ``entries[i].field``."""
    if isinstance(entries, str | bytes | Mapping):
        raise InvalidInput("entries must be a list of texts or objects", field="entries")
    return [check_entry(raw, f"entries[{i}]", now=now) for i, raw in enumerate(entries)]


def prepare_turns(
    messages: Iterable[Message | Mapping[str, Any]], session_id: str, roles: frozenset[str], importance: float
) -> tuple[list[Entry], list[str]]:
    """Turn entries for the archivable messages, and ids of the skipped ones
    (role not archived, empty content, tool-call-only assistant messages)."""
    entries: list[Entry] = []
    skipped: list[str] = []
    for m in coerce_messages(messages):
        if m.role not in roles or m.content is None or not m.content.strip():
            skipped.append(m.id)
            continue
        entries.append(Entry(
            text=m.content, kind="turn", importance=importance, metadata={"role": m.role},
            session_id=session_id, source_message_id=m.id, created_at=m.created_at, speaker=m.name or m.role,
        ))
    return entries, skipped


def check_kinds(kinds: Iterable[str] | str | None) -> frozenset[str] | None:
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    if isinstance(kinds, Mapping | bytes):
        raise InvalidInput("kinds must be a list of kind names", field="kinds")
    out = frozenset(check_id(k, f"kinds[{i}]") for i, k in enumerate(kinds))
    if not out:
        raise InvalidInput("kinds must not be empty (omit it to allow every kind)", field="kinds")
    return out


def half_life(value: object) -> timedelta:
    """A positive timedelta from a timedelta or seconds; huge or non-finite numbers are
    InvalidInput (``timedelta`` itself would raise OverflowError past ~2.7 million years)."""
    half_life: timedelta | None = None
    if isinstance(value, timedelta):
        half_life = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            half_life = timedelta(seconds=float(value))  # NaN -> ValueError; inf, 1e300, 10**400 -> OverflowError
        except (OverflowError, ValueError):
            raise InvalidInput(
                f"recency_half_life must be a positive, finite number of seconds below {_MAX_SECONDS:.3g}, "
                f"got {value!r}",
                field="recency_half_life",
            ) from None
    if half_life is None or half_life.total_seconds() <= 0:
        raise InvalidInput(
            f"recency_half_life must be a positive duration (a timedelta or seconds) of at least one microsecond, "
            f"got {value!r}",
            field="recency_half_life",
        )
    return half_life


_MAX_SECONDS = timedelta.max.total_seconds()


def check_forget_filter(
    ids: Sequence[str] | None, kinds: Iterable[str] | str | None, session_id: object, before: object, all: bool
) -> ItemFilter | None:
    """The filter selecting what :meth:`LongTermStore.forget` deletes; ``None`` = everything."""
    if not isinstance(all, bool):
        raise InvalidInput("all must be a bool", field="all")
    given = ids is not None or kinds is not None or session_id is not None or before is not None
    if all:
        if given:
            raise InvalidInput("all=True deletes everything; do not combine it with ids or filters", field="all")
        return None
    if not given:
        raise InvalidInput("forget needs ids, a filter (kinds, session_id, before) or all=True", field="ids")
    id_set = None
    if ids is not None:
        if isinstance(ids, str | bytes | Mapping):
            raise InvalidInput("ids must be a list of item ids", field="ids")
        id_set = frozenset(check_id(item_id, f"ids[{i}]") for i, item_id in enumerate(ids))
    until = None
    if before is not None:
        moment = as_datetime(before, "before")
        if moment == datetime.min.replace(tzinfo=UTC):  # nothing is older; one µs less would overflow
            raise InvalidInput("before must be later than 0001-01-01T00:00:00Z", field="before")
        until = moment - timedelta(microseconds=1)  # before is exclusive
    return ItemFilter(
        ids=id_set, kinds=check_kinds(kinds), session_id=None if session_id is None else check_id(session_id, "session_id"),
        until=until,
    )


def index_metadata(item: MemoryItem) -> dict[str, Any]:
    """What the vector index stores beside an item's vector (for ``where`` filters)."""
    meta: dict[str, Any] = {"kind": item.kind, "created_at": item.created_at.timestamp()}
    if item.session_id is not None:
        meta["session_id"] = item.session_id
    for key, value in item.metadata.items():
        if value is not None:
            meta[f"m:{key}"] = value
    return meta


def dense_where(flt: ItemFilter) -> dict[str, Any]:
    """The vector-index ``where`` equivalent of ``flt`` (a superset: callers re-check)."""
    where: dict[str, Any] = {}
    if flt.kinds is not None:
        where["kind"] = {"$in": sorted(flt.kinds)}
    if flt.session_id is not None:
        where["session_id"] = flt.session_id
    # Chroma takes one operator per key: bound by the tighter side, the item check does the rest.
    if flt.since is not None:
        where["created_at"] = {"$gte": flt.since.timestamp() - 1e-3}
    elif flt.until is not None:
        where["created_at"] = {"$lte": flt.until.timestamp() + 1e-3}
    for key, value in (flt.metadata or {}).items():
        if value is not None:
            where[f"m:{key}"] = value
    return where
