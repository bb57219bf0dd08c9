"""In-process :class:`~hmem.protocols.SummaryStore`: the reference implementation.

One current :class:`~hmem.types.SessionSummary` per ``(user_id, session_id)``,
behind one lock. :func:`check_summary` (the input rules every summary backend
applies) lives here so the SQLite and Redis stores reject exactly what this one does.

``put_if`` is the compare-and-set the compactor uses: it writes only if the stored
watermark is still the one the new summary was folded on top of, so two compactors
racing on one session can never overwrite a newer summary with an older one.

Example::

    >>> from hmem.types import SessionSummary
    >>> store = MemorySummaryStore()
    >>> s = SessionSummary("u1", "s1", "User: I live in Berlin.", "m7", 7, "extractive")
    >>> store.put_if(s, expected_covers_until=None)
    True
    >>> store.get("u1", "s1").covers_until
    'm7'
    >>> store.put_if(s, expected_covers_until="m3")  # someone else folded meanwhile
    False
"""

from __future__ import annotations

import math
import threading
from datetime import datetime
from typing import get_args

from hmem.errors import InvalidInput
from hmem.types import SessionSummary, SummaryMethod, check_id, check_text

__all__ = ["MemorySummaryStore", "check_expected_watermark", "check_summary"]

_METHODS = frozenset(get_args(SummaryMethod))


def check_summary(summary: object) -> SessionSummary:
    """Return ``summary`` if every field is storable, else raise :class:`InvalidInput`."""
    if not isinstance(summary, SessionSummary):
        raise InvalidInput(
            f"summary must be a hmem.types.SessionSummary, got {type(summary).__name__}", field="summary"
        )
    check_id(summary.user_id, "user_id")
    check_id(summary.session_id, "session_id")
    check_text(summary.text, "text")
    if summary.covers_until is not None:
        check_id(summary.covers_until, "covers_until")
    for name in ("folded_count", "tokens"):
        value = getattr(summary, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"{name} must be an integer >= 0, got {value!r}", field=name)
    if summary.covers_until is None and summary.folded_count:
        raise InvalidInput("a summary that folded messages needs covers_until (its watermark)", field="covers_until")
    if summary.method not in _METHODS:
        raise InvalidInput(f"method must be one of {sorted(_METHODS)}, got {summary.method!r}", field="method")
    if not isinstance(summary.updated_at, datetime) or summary.updated_at.tzinfo is None:
        raise InvalidInput("updated_at must be a timezone-aware datetime", field="updated_at")
    if not math.isfinite(summary.updated_at.timestamp()):
        raise InvalidInput("updated_at must be finite", field="updated_at")
    return summary


def check_expected_watermark(value: object) -> str | None:
    """``expected_covers_until`` of ``put_if``: None (no summary yet) or a message id."""
    return None if value is None else check_id(value, "expected_covers_until")


class MemorySummaryStore:
    """Summaries in a dict; thread-safe. Summaries are frozen values, so no copies are needed."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], SessionSummary] = {}
        self._lock = threading.Lock()

    def get(self, user_id: str, session_id: str) -> SessionSummary | None:
        key = (check_id(user_id, "user_id"), check_id(session_id, "session_id"))
        with self._lock:
            return self._data.get(key)

    def put(self, summary: SessionSummary) -> None:
        checked = check_summary(summary)
        with self._lock:
            self._data[(checked.user_id, checked.session_id)] = checked

    def put_if(self, summary: SessionSummary, expected_covers_until: str | None) -> bool:
        """Store ``summary`` only if the stored watermark equals ``expected_covers_until``
        (None: no summary stored yet). True if written."""
        checked = check_summary(summary)
        expected = check_expected_watermark(expected_covers_until)
        key = (checked.user_id, checked.session_id)
        with self._lock:
            current = self._data.get(key)
            if (current.covers_until if current else None) != expected:
                return False
            self._data[key] = checked
            return True

    def delete(self, user_id: str, session_id: str) -> bool:
        key = (check_id(user_id, "user_id"), check_id(session_id, "session_id"))
        with self._lock:
            return self._data.pop(key, None) is not None

    def close(self) -> None:
        """Nothing to release."""
