"""SQLite :class:`~hmem.protocols.SessionStore`: the embedded default.

One row per session in ``hmem_sessions`` (version, updated_at, message count,
next sequence number) and one row per message in ``hmem_session_messages``
(the message as JSON, ordered by ``seq``, ``message_id`` unique per session).

Every write is one ``BEGIN IMMEDIATE`` transaction that inserts the new rows and
bumps the version together, so concurrent appends from threads or processes on
the same file queue on the write lock and all survive; nothing is ever loaded,
modified and saved back. Reads run in one read transaction, so the version and
the messages they return belong to the same snapshot (WAL).

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> from hmem.types import Message
    >>> store = SqliteSessionStore(SqliteDatabase(":memory:"))
    >>> store.append("u1", "s1", [Message(role="user", content="hi", id="m1")])
    1
    >>> store.load("u1", "s1").version
    1
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Literal

from hmem._time import from_seconds
from hmem.backends.memory.sessions import check_batch, check_last_n, check_ttl, check_version
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable, ConflictError, DuplicateId
from hmem.types import Message, SessionInfo, SessionState, check_id

__all__ = ["SqliteSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hmem_sessions (
    user_id      TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    updated_at   REAL    NOT NULL,
    message_count INTEGER NOT NULL,
    next_seq     INTEGER NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hmem_sessions_by_update ON hmem_sessions (user_id, updated_at);
CREATE TABLE IF NOT EXISTS hmem_session_messages (
    user_id    TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    message_id TEXT    NOT NULL,
    body       TEXT    NOT NULL,
    PRIMARY KEY (user_id, session_id, seq),
    UNIQUE (user_id, session_id, message_id)
) WITHOUT ROWID;
"""


class SqliteSessionStore:
    """Sessions in the shared SQLite file of ``db``.

    ``ttl_seconds`` (off by default) hides a session not written for that long and
    removes it on the next write to it (or :meth:`purge_expired`); ``clock``
    returns epoch seconds.
    """

    def __init__(
        self, db: SqliteDatabase, ttl_seconds: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self._db = db
        self._ttl = check_ttl(ttl_seconds)
        self._clock = clock
        with db.write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)

    # -- helpers ----------------------------------------------------------------------

    def _expired(self, updated_at: float, now: float) -> bool:
        return self._ttl is not None and now - updated_at >= self._ttl

    def _head(self, conn: sqlite3.Connection, user: str, session: str, now: float) -> tuple[int, int] | None:
        """(version, next_seq) of a live session, dropping it first if it expired.
        Call inside a write transaction."""
        row = conn.execute(
            "SELECT version, next_seq, updated_at FROM hmem_sessions WHERE user_id=? AND session_id=?",
            (user, session),
        ).fetchone()
        if row is None:
            return None
        if self._expired(row[2], now):
            _delete(conn, user, session)
            return None
        return int(row[0]), int(row[1])

    # -- the port ---------------------------------------------------------------------

    def append(self, user_id: str, session_id: str, messages: Iterable[Message]) -> int:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        batch = check_batch(messages)
        rows = [m.to_json() for m in batch]
        if not batch:
            return self.load(user, session, last_n=0).version
        with _errors(self._db), self._db.write() as conn:
            now = self._clock()
            head = self._head(conn, user, session, now)
            version, seq = head if head else (0, 0)
            try:
                conn.executemany(
                    "INSERT INTO hmem_session_messages (user_id, session_id, seq, message_id, body) VALUES (?,?,?,?,?)",
                    [(user, session, seq + i, m.id, body) for i, (m, body) in enumerate(zip(batch, rows, strict=True))],
                )
            except sqlite3.IntegrityError:
                dup = _first_stored_id(conn, user, session, [m.id for m in batch])
                raise DuplicateId(
                    f"message id {dup!r} already exists in session {session!r}; nothing was appended",
                    field="messages.id",
                ) from None
            conn.execute(
                "INSERT INTO hmem_sessions (user_id, session_id, version, updated_at, message_count, next_seq)"
                " VALUES (?,?,?,?,?,?) ON CONFLICT (user_id, session_id) DO UPDATE SET"
                " version=excluded.version, updated_at=excluded.updated_at,"
                " message_count=message_count+?, next_seq=excluded.next_seq",
                (user, session, version + 1, now, len(batch), seq + len(batch), len(batch)),
            )
            return version + 1

    def load(self, user_id: str, session_id: str, last_n: int | None = None) -> SessionState:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        n = check_last_n(last_n)
        with _errors(self._db), self._db.read() as conn:
            conn.execute("BEGIN")  # one snapshot for the version and the rows
            try:
                row = conn.execute(
                    "SELECT version, updated_at FROM hmem_sessions WHERE user_id=? AND session_id=?", (user, session)
                ).fetchone()
                if row is None or self._expired(row[1], self._clock()):
                    return SessionState((), 0)
                if n == 0:
                    bodies: list[str] = []
                elif n is None:
                    bodies = [r[0] for r in conn.execute(
                        "SELECT body FROM hmem_session_messages WHERE user_id=? AND session_id=? ORDER BY seq",
                        (user, session),
                    )]
                else:
                    bodies = [r[0] for r in conn.execute(
                        "SELECT body FROM hmem_session_messages WHERE user_id=? AND session_id=?"
                        " ORDER BY seq DESC LIMIT ?",
                        (user, session, n),
                    )]
                    bodies.reverse()
            finally:
                conn.execute("COMMIT")
        return SessionState(tuple(Message._from_storage(b) for b in bodies), int(row[0]))  # our own rows

    def replace(self, user_id: str, session_id: str, messages: Iterable[Message], expected_version: int) -> int:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        batch = check_batch(messages)
        expected = check_version(expected_version)
        rows = [(user, session, i, m.id, m.to_json()) for i, m in enumerate(batch)]
        with _errors(self._db), self._db.write() as conn:
            now = self._clock()
            head = self._head(conn, user, session, now)
            actual = head[0] if head else 0
            if actual != expected:
                raise ConflictError(
                    f"session {session!r} is at version {actual}, not {expected}: reload it and retry",
                    expected=expected,
                    actual=actual,
                )
            conn.execute("DELETE FROM hmem_session_messages WHERE user_id=? AND session_id=?", (user, session))
            conn.executemany(
                "INSERT INTO hmem_session_messages (user_id, session_id, seq, message_id, body) VALUES (?,?,?,?,?)",
                rows,
            )
            conn.execute(
                "INSERT OR REPLACE INTO hmem_sessions (user_id, session_id, version, updated_at, message_count,"
                " next_seq) VALUES (?,?,?,?,?,?)",
                (user, session, actual + 1, now, len(rows), len(rows)),
            )
            return actual + 1

    def delete(self, user_id: str, session_id: str) -> bool:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with _errors(self._db), self._db.write() as conn:
            return self._head(conn, user, session, self._clock()) is not None and _delete(conn, user, session)

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        user = check_id(user_id, "user_id")
        cutoff = -float("inf") if self._ttl is None else self._clock() - self._ttl
        with _errors(self._db), self._db.read() as conn:
            rows = conn.execute(
                "SELECT session_id, message_count, version, updated_at FROM hmem_sessions"
                " WHERE user_id=? AND updated_at > ? ORDER BY updated_at DESC, session_id DESC",
                (user, cutoff),
            ).fetchall()
        return [SessionInfo(r[0], int(r[1]), int(r[2]), from_seconds(r[3])) for r in rows]

    def list_users(self) -> list[str]:
        cutoff = -float("inf") if self._ttl is None else self._clock() - self._ttl
        with _errors(self._db), self._db.read() as conn:
            rows = conn.execute(
                "SELECT DISTINCT user_id FROM hmem_sessions WHERE updated_at > ? ORDER BY user_id", (cutoff,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def purge_expired(self) -> int:
        """Delete every expired session of every user now; the number removed."""
        if self._ttl is None:
            return 0
        cutoff = self._clock() - self._ttl
        with _errors(self._db), self._db.write() as conn:
            stale = conn.execute(
                "SELECT user_id, session_id FROM hmem_sessions WHERE updated_at <= ?", (cutoff,)
            ).fetchall()
            for user, session in stale:
                _delete(conn, user, session)
        return len(stale)

    def close(self) -> None:
        """The database handle belongs to the caller (it is shared); nothing to do."""


def _delete(conn: sqlite3.Connection, user: str, session: str) -> bool:
    conn.execute("DELETE FROM hmem_session_messages WHERE user_id=? AND session_id=?", (user, session))
    return conn.execute("DELETE FROM hmem_sessions WHERE user_id=? AND session_id=?", (user, session)).rowcount > 0


def _first_stored_id(conn: sqlite3.Connection, user: str, session: str, ids: list[str]) -> str:
    for message_id in ids:
        if conn.execute(
            "SELECT 1 FROM hmem_session_messages WHERE user_id=? AND session_id=? AND message_id=?",
            (user, session, message_id),
        ).fetchone():
            return message_id
    return ids[0]


class _errors:
    """Turn sqlite3 operational failures (disk full, locked past the busy timeout …)
    into :class:`BackendUnavailable` naming the file."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError) and not isinstance(
            exc, sqlite3.IntegrityError
        ):
            raise BackendUnavailable(f"SQLite session store {self._db.path!r} failed: {exc}") from exc
        return False
