"""In-process profile store: the reference implementation of :class:`hmem.protocols.ProfileStore`.

What a write does is decided by :mod:`hmem.profile.versioning`; this store only
keeps the versions. One lock guards every read-plan-persist, so concurrent ``set``
calls from threads serialize and each closes exactly the version the previous one
opened. Data lives only as long as the process.

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
from datetime import datetime

from hmem.profile.model import DEFAULT_MAX_KEYS, check_provenance, normalize_key, sort_for_prompt
from hmem.profile.versioning import Plan, check_max_keys, check_update, plan_delete, plan_set
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, utcnow

__all__ = ["MemoryProfileStore"]


class MemoryProfileStore:
    """Profile facts per user in a dict; thread-safe; lost on restart.

    ``max_keys`` caps the live keys per user (:class:`~hmem.errors.CapacityError`
    past it); ``clock`` supplies "now" (inject a fake one in tests).
    """

    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS, clock: Callable[[], datetime] = utcnow) -> None:
        self.max_keys = check_max_keys(max_keys)
        self._clock = clock
        self._lock = threading.Lock()
        # user_id -> key -> versions, oldest first; the last one is current (maybe a deletion)
        self._data: dict[str, dict[str, list[ProfileEntry]]] = {}

    def _current(self, user_id: str, key: str) -> ProfileEntry | None:
        versions = self._data.get(user_id, {}).get(key)
        return versions[-1] if versions else None

    def _persist(self, user_id: str, key: str, plan: Plan) -> None:
        versions = self._data.setdefault(user_id, {}).setdefault(key, [])
        if plan.rewrite is not None:
            versions[-1] = plan.rewrite
        if plan.append is not None:
            versions.append(plan.append)

    def _live_keys(self, user_id: str) -> int:
        return sum(1 for vs in self._data.get(user_id, {}).values() if vs[-1].value is not None)

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
        the first statement). The rules: :mod:`hmem.profile.versioning`.
        """
        update = check_update(user_id, key, value, provenance=provenance, confidence=confidence, at=at)
        with self._lock:
            plan = plan_set(
                self._current(update.user_id, update.key), update, now=self._clock(), max_keys=self.max_keys,
                live_keys=lambda: self._live_keys(update.user_id),
            )
            self._persist(update.user_id, update.key, plan)
            return plan.result

    def get(self, user_id: str, key: str) -> ProfileEntry | None:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with self._lock:
            current = self._current(user_id, norm)
        return current if current is not None and current.value is not None else None

    def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        """Remove the current value; history gets a ``value=None`` version. True if
        the key had a value."""
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        prov = check_provenance(provenance)
        with self._lock:
            plan = plan_delete(self._current(user_id, norm), prov, now=self._clock())
            if plan is None:
                return False
            self._persist(user_id, norm, plan)
            return True

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set or confirmed first (ties by key)."""
        check_id(user_id, "user_id")
        with self._lock:
            current = [vs[-1] for vs in self._data.get(user_id, {}).values()]
        return sort_for_prompt(current)

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
