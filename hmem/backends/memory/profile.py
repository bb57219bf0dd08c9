"""In-process profile store: the reference implementation of :class:`hmem.protocols.ProfileStore`.

One lock guards every read-modify-write, so concurrent ``set`` calls from threads
serialize and each closes exactly the version the previous one opened. Data lives
only as long as the process.

Example::

    >>> store = MemoryProfileStore()
    >>> _ = store.set("u1", "Home Town", "Berlin")
    >>> store.get("u1", "home_town").value
    'Berlin'
    >>> _ = store.set("u1", "home town", "Paris")
    >>> [e.value for e in store.history("u1", "HOME-TOWN")]
    ['Berlin', 'Paris']
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from hmem.errors import CapacityError, InvalidInput
from hmem.profile.model import (
    DEFAULT_MAX_KEYS,
    check_confidence,
    check_provenance,
    coerce_value,
    confirm,
    normalize_key,
    same_value,
    write_time,
)
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, utcnow

__all__ = ["MemoryProfileStore"]


def _check_max_keys(max_keys: object) -> int:
    if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
        raise InvalidInput(f"max_keys must be a positive int, got {max_keys!r}", field="max_keys")
    return max_keys


class MemoryProfileStore:
    """Profile facts per user in a dict; thread-safe; lost on restart.

    ``max_keys`` caps the live keys per user (:class:`~hmem.errors.CapacityError`
    past it); ``clock`` supplies "now" (inject a fake one in tests).
    """

    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS, clock: Callable[[], datetime] = utcnow) -> None:
        self.max_keys = _check_max_keys(max_keys)
        self._clock = clock
        self._lock = threading.Lock()
        # user_id -> key -> versions, oldest first; the last one is current (maybe a deletion)
        self._data: dict[str, dict[str, list[ProfileEntry]]] = {}

    def set(
        self,
        user_id: str,
        key: str,
        value: ProfileValue,
        *,
        provenance: Provenance | None = None,
        confidence: float = 1.0,
        at: datetime | None = None,
    ) -> ProfileEntry:
        """Make ``value`` the current value of ``key``; return the current entry.

        Setting the value the key already has adds no history row: it refreshes
        ``confirmed_at`` and keeps the higher confidence (provenance stays that of
        the first statement).
        """
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        val = coerce_value(value)
        conf = check_confidence(confidence)
        prov = check_provenance(provenance)
        with self._lock:
            versions = self._data.get(user_id, {}).get(norm, [])
            current = versions[-1] if versions else None
            when = write_time(at, self._clock(), current.valid_from if current else None)
            if current is not None and same_value(current.value, val):
                versions[-1] = confirm(current, when, conf)
                return versions[-1]
            if current is None or current.value is None:
                live = sum(1 for vs in self._data.get(user_id, {}).values() if vs[-1].value is not None)
                if live >= self.max_keys:
                    raise CapacityError(
                        f"user {user_id!r} already has {live} profile keys, the cap (max_keys={self.max_keys});"
                        f" delete a key first or configure a larger max_keys. Key {norm!r} was not stored."
                    )
            entry = ProfileEntry(user_id, norm, val, when, None, prov, conf)
            user = self._data.setdefault(user_id, {})
            if current is not None:
                versions[-1] = replace(current, valid_to=when)
                versions.append(entry)
            else:
                user[norm] = [entry]
            return entry

    def get(self, user_id: str, key: str) -> ProfileEntry | None:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with self._lock:
            versions = self._data.get(user_id, {}).get(norm)
            if not versions or versions[-1].value is None:
                return None
            return versions[-1]

    def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        """Remove the current value; history gets a ``value=None`` version. True if
        the key had a value."""
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        prov = check_provenance(provenance)
        with self._lock:
            versions = self._data.get(user_id, {}).get(norm)
            if not versions or versions[-1].value is None:
                return False
            current = versions[-1]
            when = write_time(None, self._clock(), current.valid_from)
            versions[-1] = replace(current, valid_to=when)
            versions.append(ProfileEntry(user_id, norm, None, when, None, prov, 1.0))
            return True

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set or confirmed first (ties by key)."""
        check_id(user_id, "user_id")
        with self._lock:
            live = [vs[-1] for vs in self._data.get(user_id, {}).values() if vs[-1].value is not None]
        live.sort(key=lambda e: e.key)
        live.sort(key=lambda e: e.last_confirmed, reverse=True)
        return live

    def history(self, user_id: str, key: str) -> list[ProfileEntry]:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with self._lock:
            return list(self._data.get(user_id, {}).get(norm, []))

    def delete_user(self, user_id: str) -> int:
        """Erase every key and its history (no tombstones); return how many keys
        (live or deleted) had any history."""
        check_id(user_id, "user_id")
        with self._lock:
            return len(self._data.pop(user_id, {}))

    def close(self) -> None:
        """Nothing to release; the data stays readable."""
