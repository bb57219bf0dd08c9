"""The profile versioning rule, decided once for every profile store: pure, no I/O.

A store reads a key's current version, asks :func:`plan_set` / :func:`plan_delete`
what the write does, and only persists the returned :class:`Plan` (inside its own
transaction: a lock, ``BEGIN IMMEDIATE``, or Redis ``WATCH``/``MULTI``). The rule:

* the same value again adds no version: ``confirmed_at`` moves forward and the
  higher confidence stays (:func:`confirm`);
* a new value closes the current version exactly where the new one starts, so the
  history is a chain (:func:`hmem.profile.model.history_problems`);
* the time is the explicit ``at`` (never before the current version: history is
  append-only) or "now" clamped to the current version's start, so clock skew
  between processes never breaks the chain (:func:`write_time`);
* a write that adds a live key past the store's ``max_keys`` raises
  :class:`~hmem.errors.CapacityError` and stores nothing.

Example::

    >>> from datetime import UTC, datetime
    >>> t0, t1 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 2, 1, tzinfo=UTC)
    >>> first = plan_set(None, check_update("u1", "City", "Berlin"), now=t0, max_keys=5, live_keys=lambda: 0)
    >>> second = plan_set(first.result, check_update("u1", "city", "Paris"), now=t1, max_keys=5, live_keys=lambda: 1)
    >>> second.rewrite.value, second.rewrite.valid_to == t1, second.result.value
    ('Berlin', True, 'Paris')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from hmem.errors import CapacityError, InvalidInput
from hmem.profile.model import check_confidence, check_provenance, coerce_value, normalize_key, same_value
from hmem.types import ProfileEntry, ProfileValue, Provenance, as_datetime, check_id

__all__ = [
    "Plan",
    "ProfileUpdate",
    "check_max_keys",
    "check_update",
    "confirm",
    "plan_delete",
    "plan_set",
    "write_time",
]


def write_time(at: object, now: datetime, current_from: datetime | None) -> datetime:
    """The timestamp of a write: explicit ``at`` (validated; must not precede the
    current version, history is append-only) or ``now`` clamped to the current
    version's start, so clock skew between processes never breaks the chain."""
    if at is None:
        return now if current_from is None or now >= current_from else current_from
    when = as_datetime(at, "at")
    if current_from is not None and when < current_from:
        raise InvalidInput(
            f"at={when.isoformat()} is before the current version (valid_from={current_from.isoformat()});"
            " history is append-only, so write with a later time",
            field="at",
        )
    return when


def confirm(entry: ProfileEntry, at: datetime, confidence: float) -> ProfileEntry:
    """The current entry after the same value was stated again at ``at``: no new
    version; ``confirmed_at`` moves forward and confidence keeps the higher value."""
    return replace(entry, confirmed_at=max(entry.last_confirmed, at), confidence=max(entry.confidence, confidence))


def check_max_keys(max_keys: object) -> int:
    """A store's cap on live keys per user: a positive int, or :class:`InvalidInput`."""
    if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
        raise InvalidInput(f"max_keys must be a positive int, got {max_keys!r}", field="max_keys")
    return max_keys


@dataclass(frozen=True)
class ProfileUpdate:
    """The checked arguments of ``ProfileStore.set`` (see :func:`check_update`)."""

    user_id: str
    key: str  # normalized
    value: ProfileValue
    provenance: Provenance
    confidence: float
    at: datetime | None


def check_update(
    user_id: object,
    key: object,
    value: object,
    *,
    provenance: object = None,
    confidence: object = 1.0,
    at: object = None,
) -> ProfileUpdate:
    """Validate a ``set`` before any I/O; raises :class:`InvalidInput` naming the field."""
    return ProfileUpdate(
        check_id(user_id, "user_id"),
        normalize_key(key),
        coerce_value(value),
        check_provenance(provenance),
        check_confidence(confidence),
        None if at is None else as_datetime(at, "at"),
    )


@dataclass(frozen=True)
class Plan:
    """What one write changes in one key's history (oldest first, last = current).

    ``rewrite`` replaces the current version in place (closed with ``valid_to``, or
    re-confirmed); ``append`` is added after it. :attr:`result` is the key's current
    version afterwards.
    """

    rewrite: ProfileEntry | None
    append: ProfileEntry | None

    @property
    def result(self) -> ProfileEntry:
        entry = self.append or self.rewrite
        assert entry is not None, "a plan changes something"
        return entry


def plan_set(
    current: ProfileEntry | None,
    update: ProfileUpdate,
    *,
    now: datetime,
    max_keys: int,
    live_keys: Callable[[], int],
) -> Plan:
    """The plan of ``update`` given the key's ``current`` version (``None``: never set;
    may be a deletion). The same value again adds no version: it is confirmed
    (:func:`confirm`). Otherwise the current version closes where the new one
    starts. A write that adds a live key calls ``live_keys()`` (the user's live key
    count) and raises :class:`~hmem.errors.CapacityError` at ``max_keys``.

    >>> from datetime import UTC, datetime
    >>> u = check_update("u1", "city", "Paris")
    >>> p = plan_set(None, u, now=datetime(2024, 1, 1, tzinfo=UTC), max_keys=5, live_keys=lambda: 0)
    >>> p.rewrite, p.result.value
    (None, 'Paris')
    """
    when = write_time(update.at, now, current.valid_from if current else None)
    if current is not None and same_value(current.value, update.value):
        return Plan(rewrite=confirm(current, when, update.confidence), append=None)
    if current is None or current.value is None:
        live = live_keys()
        if live >= max_keys:
            raise CapacityError(
                f"user {update.user_id!r} already has {live} profile keys, the cap (max_keys={max_keys});"
                f" delete a key first or configure a larger max_keys. Key {update.key!r} was not stored."
            )
    entry = ProfileEntry(update.user_id, update.key, update.value, when, None, update.provenance, update.confidence)
    return Plan(rewrite=None if current is None else replace(current, valid_to=when), append=entry)


def plan_delete(current: ProfileEntry | None, provenance: Provenance, *, now: datetime) -> Plan | None:
    """The plan that deletes ``current`` (close it, append a ``value=None`` version),
    or ``None`` when the key has no value (nothing to do)."""
    if current is None or current.value is None:
        return None
    when = write_time(None, now, current.valid_from)
    tombstone = ProfileEntry(current.user_id, current.key, None, when, None, provenance, 1.0)
    return Plan(rewrite=replace(current, valid_to=when), append=tombstone)
