"""The primitive values every hmem type is built from: size limits, ids, the clock,
the checks of ids, text and timestamps, and the renaming of an error's field to the
caller's own name.

Imports nothing from hmem except :mod:`hmem.errors`; :mod:`hmem.types` re-exports
every public name, so ``from hmem.types import check_id`` keeps working.

Example::

    >>> check_id("user-1", "user_id")
    'user-1'
    >>> as_datetime("2024-05-01T12:00:00Z").isoformat()
    '2024-05-01T12:00:00+00:00'
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TypeAlias

from hmem.errors import InvalidInput

__all__ = [
    "MAX_CLOCK_SKEW",
    "MAX_CONTENT_CHARS",
    "MAX_ID_CHARS",
    "RELEVANCE_CUTOFF",
    "JSONScalar",
    "as_datetime",
    "check_id",
    "check_not_future",
    "check_text",
    "check_utf8",
    "new_id",
    "renamed",
    "utcnow",
]

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
