"""SQLite :class:`~hmem.protocols.SummaryStore`: one row per session in ``hmem_summaries``.

Shares the :class:`~hmem.backends.sqlite.db.SqliteDatabase` file with the other
embedded stores. ``put_if`` reads and writes inside one ``BEGIN IMMEDIATE``
transaction, so the compare-and-set holds across threads and processes.

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> from hmem.types import SessionSummary
    >>> store = SqliteSummaryStore(SqliteDatabase(":memory:"))
    >>> store.put(SessionSummary("u1", "s1", "用户：我住在上海。", "m3", 3, "extractive"))
    >>> store.get("u1", "s1").text
    '用户：我住在上海。'
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Literal, cast

from hmem.backends.memory.summaries import check_expected_watermark, check_summary
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable
from hmem.types import SessionSummary, SummaryMethod, check_id

__all__ = ["SqliteSummaryStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hmem_summaries (
    user_id      TEXT    NOT NULL,
    session_id   TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    covers_until TEXT,
    folded_count INTEGER NOT NULL,
    method       TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL,
    tokens       INTEGER NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID
"""

_UPSERT = (
    "INSERT INTO hmem_summaries (user_id, session_id, text, covers_until, folded_count, method, updated_at, tokens)"
    " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (user_id, session_id) DO UPDATE SET text=excluded.text,"
    " covers_until=excluded.covers_until, folded_count=excluded.folded_count, method=excluded.method,"
    " updated_at=excluded.updated_at, tokens=excluded.tokens"
)


def _row(s: SessionSummary) -> tuple[object, ...]:
    return (s.user_id, s.session_id, s.text, s.covers_until, s.folded_count, s.method, s.updated_at.isoformat(), s.tokens)


class SqliteSummaryStore:
    """Summaries in the shared SQLite file of ``db`` (the caller owns ``db``)."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db
        with _errors(db), db.write() as conn:
            conn.execute(_SCHEMA)

    def get(self, user_id: str, session_id: str) -> SessionSummary | None:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with _errors(self._db), self._db.read() as conn:
            row = conn.execute(
                "SELECT text, covers_until, folded_count, method, updated_at, tokens FROM hmem_summaries"
                " WHERE user_id=? AND session_id=?",
                (user, session),
            ).fetchone()
        if row is None:
            return None
        return SessionSummary(
            user_id=user,
            session_id=session,
            text=row[0],
            covers_until=row[1],
            folded_count=int(row[2]),
            method=cast(SummaryMethod, row[3]),
            updated_at=datetime.fromisoformat(row[4]),
            tokens=int(row[5]),
        )

    def put(self, summary: SessionSummary) -> None:
        checked = check_summary(summary)
        with _errors(self._db), self._db.write() as conn:
            conn.execute(_UPSERT, _row(checked))

    def put_if(self, summary: SessionSummary, expected_covers_until: str | None) -> bool:
        """Store ``summary`` only if the stored watermark equals ``expected_covers_until``
        (None: no summary stored yet). True if written."""
        checked = check_summary(summary)
        expected = check_expected_watermark(expected_covers_until)
        with _errors(self._db), self._db.write() as conn:
            row = conn.execute(
                "SELECT covers_until FROM hmem_summaries WHERE user_id=? AND session_id=?",
                (checked.user_id, checked.session_id),
            ).fetchone()
            if (row[0] if row else None) != expected:
                return False
            conn.execute(_UPSERT, _row(checked))
            return True

    def delete(self, user_id: str, session_id: str) -> bool:
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        with _errors(self._db), self._db.write() as conn:
            cur = conn.execute("DELETE FROM hmem_summaries WHERE user_id=? AND session_id=?", (user, session))
            return cur.rowcount > 0

    def close(self) -> None:
        """The database handle belongs to the caller (it is shared); nothing to do."""


class _errors:
    """Turn sqlite3 operational failures into :class:`BackendUnavailable` naming the file."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.IntegrityError):
            raise BackendUnavailable(f"SQLite summary store {self._db.path!r} failed: {exc}") from exc
        return False
