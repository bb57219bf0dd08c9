"""SQLite profile store: every version of every key is one row of ``profile_entries``.

A ``set`` is one ``BEGIN IMMEDIATE`` transaction that reads the current row,
closes it (``valid_to``) and inserts the new one, so writers from threads and
processes queue on the file lock and each closes exactly the version the previous
one opened. A partial unique index (``valid_to IS NULL``) makes "two current
versions of one key" impossible at the database level too.

Times are stored as integer microseconds since the epoch (UTC) so they round-trip
exactly and compare as numbers.

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> store = SqliteProfileStore(SqliteDatabase(":memory:"))
    >>> _ = store.set("u1", "location", "Berlin")
    >>> _ = store.set("u1", "Location", "Paris")
    >>> [(e.value, e.valid_to is None) for e in store.history("u1", "location")]
    [('Berlin', False), ('Paris', True)]
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable, CapacityError, InvalidInput
from hmem.profile.model import (
    DEFAULT_MAX_KEYS,
    check_confidence,
    check_provenance,
    coerce_value,
    decode_value,
    encode_value,
    normalize_key,
    same_value,
    write_time,
)
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, utcnow

__all__ = ["SqliteProfileStore"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS profile_entries (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id      TEXT NOT NULL,
        key          TEXT NOT NULL,
        value        TEXT,              -- JSON; NULL marks a deletion
        valid_from   INTEGER NOT NULL,  -- microseconds since the epoch, UTC
        valid_to     INTEGER,           -- NULL: the current version
        confirmed_at INTEGER,
        confidence   REAL NOT NULL,
        source       TEXT NOT NULL,
        session_id   TEXT,
        message_id   TEXT
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS profile_entries_current ON profile_entries (user_id, key) WHERE valid_to IS NULL",
    "CREATE INDEX IF NOT EXISTS profile_entries_key ON profile_entries (user_id, key, id)",
)
_COLUMNS = "user_id, key, value, valid_from, valid_to, confirmed_at, confidence, source, session_id, message_id"


def _to_us(dt: datetime) -> int:
    return (dt - _EPOCH) // _US


def _from_us(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + us * _US


def _entry(row: Any) -> ProfileEntry:
    user_id, key, value, valid_from, valid_to, confirmed_at, confidence, source, session_id, message_id = row
    valid_from_dt = _from_us(valid_from)
    assert valid_from_dt is not None
    return ProfileEntry(
        user_id=user_id,
        key=key,
        value=None if value is None else decode_value(value),
        valid_from=valid_from_dt,
        valid_to=_from_us(valid_to),
        provenance=Provenance(source=source, session_id=session_id, message_id=message_id),
        confidence=confidence,
        confirmed_at=_from_us(confirmed_at),
    )


class SqliteProfileStore:
    """Profile facts in an SQLite file shared with the other embedded stores.

    ``db`` is owned by the caller (:meth:`close` leaves it open); ``max_keys`` caps
    the live keys per user (checked inside the write transaction, so the cap holds
    across processes); ``clock`` supplies "now".
    """

    def __init__(
        self,
        db: SqliteDatabase,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if isinstance(max_keys, bool) or not isinstance(max_keys, int) or max_keys < 1:
            raise InvalidInput(f"max_keys must be a positive int, got {max_keys!r}", field="max_keys")
        self.max_keys = max_keys
        self._db = db
        self._clock = clock
        try:
            with db.write() as conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"cannot create the profile tables in {db.path!r}: {exc}") from exc

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
        """Make ``value`` the current value of ``key`` (see
        :meth:`hmem.backends.memory.profile.MemoryProfileStore.set` for the rules)."""
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        val = coerce_value(value)
        conf = check_confidence(confidence)
        prov = check_provenance(provenance)
        with self._db.write() as conn:
            row = conn.execute(
                f"SELECT id, {_COLUMNS} FROM profile_entries WHERE user_id = ? AND key = ? AND valid_to IS NULL",
                (user_id, norm),
            ).fetchone()
            current = _entry(row[1:]) if row else None
            when = write_time(at, self._clock(), current.valid_from if current else None)
            if current is not None and current.value is not None and same_value(current.value, val):
                confirmed = max(current.last_confirmed, when)
                new_conf = max(current.confidence, conf)
                conn.execute(
                    "UPDATE profile_entries SET confirmed_at = ?, confidence = ? WHERE id = ?",
                    (_to_us(confirmed), new_conf, row[0]),
                )
                return ProfileEntry(
                    user_id, norm, current.value, current.valid_from, None,
                    current.provenance, new_conf, confirmed,
                )  # fmt: skip
            if current is None or current.value is None:
                (live,) = conn.execute(
                    "SELECT count(*) FROM profile_entries WHERE user_id = ? AND valid_to IS NULL AND value IS NOT NULL",
                    (user_id,),
                ).fetchone()
                if live >= self.max_keys:
                    raise CapacityError(
                        f"user {user_id!r} already has {live} profile keys, the cap (max_keys={self.max_keys});"
                        f" delete a key first or configure a larger max_keys. Key {norm!r} was not stored."
                    )
            if row:
                conn.execute("UPDATE profile_entries SET valid_to = ? WHERE id = ?", (_to_us(when), row[0]))
            conn.execute(
                f"INSERT INTO profile_entries ({_COLUMNS}) VALUES (?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?)",
                (user_id, norm, encode_value(val), _to_us(when), conf, prov.source, prov.session_id, prov.message_id),
            )
            return ProfileEntry(user_id, norm, val, when, None, prov, conf)

    def get(self, user_id: str, key: str) -> ProfileEntry | None:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM profile_entries"
                " WHERE user_id = ? AND key = ? AND valid_to IS NULL AND value IS NOT NULL",
                (user_id, norm),
            ).fetchone()
        return _entry(row) if row else None

    def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        """Remove the current value; history gets a ``value=None`` version. True if
        the key had a value."""
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        prov = check_provenance(provenance)
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT id, valid_from FROM profile_entries"
                " WHERE user_id = ? AND key = ? AND valid_to IS NULL AND value IS NOT NULL",
                (user_id, norm),
            ).fetchone()
            if row is None:
                return False
            current_from = _from_us(row[1])
            when = write_time(None, self._clock(), current_from)
            conn.execute("UPDATE profile_entries SET valid_to = ? WHERE id = ?", (_to_us(when), row[0]))
            conn.execute(
                f"INSERT INTO profile_entries ({_COLUMNS}) VALUES (?, ?, NULL, ?, NULL, NULL, 1.0, ?, ?, ?)",
                (user_id, norm, _to_us(when), prov.source, prov.session_id, prov.message_id),
            )
            return True

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set or confirmed first (ties by key)."""
        check_id(user_id, "user_id")
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM profile_entries"
                " WHERE user_id = ? AND valid_to IS NULL AND value IS NOT NULL"
                " ORDER BY coalesce(confirmed_at, valid_from) DESC, key",
                (user_id,),
            ).fetchall()
        return [_entry(r) for r in rows]

    def history(self, user_id: str, key: str) -> list[ProfileEntry]:
        check_id(user_id, "user_id")
        norm = normalize_key(key)
        with self._db.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM profile_entries WHERE user_id = ? AND key = ? ORDER BY id",
                (user_id, norm),
            ).fetchall()
        return [_entry(r) for r in rows]

    def delete_user(self, user_id: str) -> int:
        """Erase every key and its history (no tombstones); return how many keys
        (live or deleted) had any history."""
        check_id(user_id, "user_id")
        with self._db.write() as conn:
            (keys,) = conn.execute(
                "SELECT count(DISTINCT key) FROM profile_entries WHERE user_id = ?", (user_id,)
            ).fetchone()
            conn.execute("DELETE FROM profile_entries WHERE user_id = ?", (user_id,))
        return int(keys)

    def close(self) -> None:
        """The database belongs to the caller; nothing of this store to release."""
