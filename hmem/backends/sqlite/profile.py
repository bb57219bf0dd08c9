"""SQLite profile store: every version of every key is one row of ``profile_entries``.

A ``set`` is one ``BEGIN IMMEDIATE`` transaction that reads the current row, asks
:mod:`hmem.profile.versioning` for the plan and persists it (rewrite the current row,
insert the new one), so writers from threads and processes queue on the file lock
and each closes exactly the version the previous one opened. A partial unique index (``valid_to IS NULL``) makes "two current
versions of one key" impossible at the database level too.

Times are stored as integer microseconds since the epoch (UTC, :mod:`hmem._time`) so
they round-trip exactly and compare as numbers.

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
from datetime import datetime
from typing import Any

from hmem._time import from_micros, to_micros
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable
from hmem.profile.model import DEFAULT_MAX_KEYS, check_provenance, decode_value, encode_value, normalize_key
from hmem.profile.versioning import Plan, check_max_keys, check_update, plan_delete, plan_set
from hmem.types import ProfileEntry, ProfileValue, Provenance, check_id, utcnow

__all__ = ["SqliteProfileStore"]

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


def _us(dt: datetime | None) -> int | None:
    return None if dt is None else to_micros(dt)


def _dt(us: int | None) -> datetime | None:
    return None if us is None else from_micros(us)


def _entry(row: Any) -> ProfileEntry:
    user_id, key, value, valid_from, valid_to, confirmed_at, confidence, source, session_id, message_id = row
    return ProfileEntry(
        user_id=user_id,
        key=key,
        value=None if value is None else decode_value(value),
        valid_from=from_micros(valid_from),
        valid_to=_dt(valid_to),
        provenance=Provenance(source=source, session_id=session_id, message_id=message_id),
        confidence=confidence,
        confirmed_at=_dt(confirmed_at),
    )


def _persist(conn: sqlite3.Connection, row_id: int | None, plan: Plan) -> None:
    """Write ``plan`` in the caller's transaction: rewrite row ``row_id``, insert the new version."""
    if plan.rewrite is not None:
        assert row_id is not None, "a rewrite needs the current row"
        old = plan.rewrite
        conn.execute(
            "UPDATE profile_entries SET valid_to = ?, confirmed_at = ?, confidence = ? WHERE id = ?",
            (_us(old.valid_to), _us(old.confirmed_at), old.confidence, row_id),
        )
    if plan.append is not None:
        new, prov = plan.append, plan.append.provenance
        conn.execute(
            f"INSERT INTO profile_entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new.user_id, new.key, None if new.value is None else encode_value(new.value), to_micros(new.valid_from),
             _us(new.valid_to), _us(new.confirmed_at), new.confidence, prov.source, prov.session_id, prov.message_id),
        )  # fmt: skip


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
        self.max_keys = check_max_keys(max_keys)
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
        update = check_update(user_id, key, value, provenance=provenance, confidence=confidence, at=at)
        with self._db.write() as conn:
            row = conn.execute(
                f"SELECT id, {_COLUMNS} FROM profile_entries WHERE user_id = ? AND key = ? AND valid_to IS NULL",
                (update.user_id, update.key),
            ).fetchone()

            def live_keys() -> int:
                (live,) = conn.execute(
                    "SELECT count(*) FROM profile_entries WHERE user_id = ? AND valid_to IS NULL AND value IS NOT NULL",
                    (update.user_id,),
                ).fetchone()
                return int(live)

            plan = plan_set(
                _entry(row[1:]) if row else None, update, now=self._clock(), max_keys=self.max_keys,
                live_keys=live_keys,
            )
            _persist(conn, row[0] if row else None, plan)
            return plan.result

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
                f"SELECT id, {_COLUMNS} FROM profile_entries WHERE user_id = ? AND key = ? AND valid_to IS NULL",
                (user_id, norm),
            ).fetchone()
            plan = plan_delete(_entry(row[1:]) if row else None, prov, now=self._clock())
            if plan is None:
                return False
            _persist(conn, row[0], plan)
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
