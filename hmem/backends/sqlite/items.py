"""SQLite :class:`~hmem.protocols.ItemStore` in the shared hmem database file.

Kind, session, time range, ids and source message ids are filtered in SQL (indexed);
metadata equality is checked in Python on the rows SQL returned, so JSON types
(``True`` vs ``1``) compare exactly as in the reference store.

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> from hmem.types import MemoryItem
    >>> store = SqliteItemStore(SqliteDatabase(":memory:"))
    >>> store.put([MemoryItem(id="i1", user_id="u1", text="I like tea")])
    >>> store.count("u1")
    1
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from hmem._time import from_micros, to_micros
from hmem.backends.memory.items import check_ids, validate_item
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.longterm.dedup import dedup_key
from hmem.protocols import ItemFilter
from hmem.types import MemoryItem, check_id

__all__ = ["SqliteItemStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lt_items (
    user_id TEXT NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    text_key TEXT NOT NULL,
    importance REAL NOT NULL,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    session_id TEXT,
    source_message_id TEXT,
    speaker TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (user_id, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS lt_items_dedup ON lt_items (user_id, kind, text_key);
CREATE INDEX IF NOT EXISTS lt_items_time ON lt_items (user_id, created_us);
CREATE INDEX IF NOT EXISTS lt_items_session ON lt_items (user_id, session_id);
CREATE INDEX IF NOT EXISTS lt_items_source ON lt_items (user_id, source_message_id);
"""
_COLS = "user_id, id, kind, text, importance, created_us, updated_us, session_id, source_message_id, speaker, metadata"
_CHUNK = 500  # stays under SQLite's host-parameter limit


def _row_to_item(row: Sequence[Any]) -> MemoryItem:
    return MemoryItem(
        user_id=row[0], id=row[1], kind=row[2], text=row[3], importance=row[4],
        created_at=from_micros(row[5]), updated_at=from_micros(row[6]), session_id=row[7],
        source_message_id=row[8], speaker=row[9], metadata=json.loads(row[10]),
    )


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


class SqliteItemStore:
    """Items in table ``lt_items`` of a :class:`SqliteDatabase` (schema created on init)."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db
        with db.write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)

    def put(self, items: Sequence[MemoryItem]) -> None:
        checked = [validate_item(i) for i in items]
        rows = [
            (
                it.user_id, it.id, it.kind, it.text, dedup_key(it.text), float(it.importance),
                to_micros(it.created_at), to_micros(it.updated_at), it.session_id, it.source_message_id, it.speaker,
                json.dumps(dict(it.metadata), ensure_ascii=False, sort_keys=True),
            )
            for it in checked
        ]
        if not rows:
            return
        with self._db.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO lt_items (user_id, id, kind, text, text_key, importance, created_us,"
                " updated_us, session_id, source_message_id, speaker, metadata)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )

    def get(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryItem]:
        check_id(user_id, "user_id")
        wanted = list(dict.fromkeys(check_ids(ids)))
        out: dict[str, MemoryItem] = {}
        with self._db.read() as conn:
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    f"SELECT {_COLS} FROM lt_items WHERE user_id = ? AND id IN ({marks})", (user_id, *chunk)
                ):
                    out[row[1]] = _row_to_item(row)
        return out

    def _where(self, user_id: str, flt: ItemFilter) -> tuple[str, list[Any]]:
        clauses: list[str] = ["user_id = ?"]
        args: list[Any] = [user_id]
        if flt.kinds is not None:
            kinds = sorted(flt.kinds)
            clauses.append(f"kind IN ({','.join('?' * len(kinds))})" if kinds else "0")
            args.extend(kinds)
        if flt.session_id is not None:
            clauses.append("session_id = ?")
            args.append(flt.session_id)
        if flt.since is not None:
            clauses.append("created_us >= ?")
            args.append(to_micros(flt.since))
        if flt.until is not None:
            clauses.append("created_us <= ?")
            args.append(to_micros(flt.until))
        return " AND ".join(clauses), args

    def _select(self, conn: sqlite3.Connection, cols: str, user_id: str, flt: ItemFilter) -> list[Any]:
        where, args = self._where(user_id, flt)
        # ids / source ids can be large sets: query them in chunks instead of one huge IN.
        for name, column in (("ids", "id"), ("source_message_ids", "source_message_id")):
            values = getattr(flt, name)
            if values is not None:
                rows: list[Any] = []
                for chunk in _chunks(sorted(values)):
                    marks = ",".join("?" * len(chunk))
                    rows.extend(conn.execute(
                        f"SELECT {cols} FROM lt_items WHERE {where} AND {column} IN ({marks})", (*args, *chunk)
                    ))
                return rows
        return list(conn.execute(f"SELECT {cols} FROM lt_items WHERE {where}", args))

    def find(self, user_id: str, flt: ItemFilter | None = None, *, limit: int | None = None) -> list[MemoryItem]:
        check_id(user_id, "user_id")
        flt = flt or ItemFilter()
        with self._db.read() as conn:
            items = [_row_to_item(r) for r in self._select(conn, _COLS, user_id, flt)]
        found = [it for it in items if flt.matches(it)]
        found.sort(key=lambda it: (it.created_at, it.id))
        return found if limit is None else found[:limit]

    def find_ids(self, user_id: str, flt: ItemFilter | None = None) -> set[str]:
        check_id(user_id, "user_id")
        flt = flt or ItemFilter()
        if not flt.metadata and flt.source_message_ids is None:
            # SQL answers it all: read the ids alone (recall confirms ~1,000 candidates so).
            with self._db.read() as conn:
                return {r[0] for r in self._select(conn, "id", user_id, flt)}
        with self._db.read() as conn:
            rows = self._select(conn, "id, metadata, source_message_id", user_id, flt)
        probe = ItemFilter(metadata=flt.metadata, source_message_ids=flt.source_message_ids)
        return {
            r[0] for r in rows
            if probe.matches(MemoryItem(id=r[0], user_id=user_id, text="-", metadata=json.loads(r[1]),
                                        source_message_id=r[2]))
        }

    def find_duplicate(self, user_id: str, kind: str, text: str) -> MemoryItem | None:
        check_id(user_id, "user_id")
        with self._db.read() as conn:
            row = conn.execute(
                f"SELECT {_COLS} FROM lt_items WHERE user_id = ? AND kind = ? AND text_key = ? LIMIT 1",
                (user_id, kind, dedup_key(text)),
            ).fetchone()
        return None if row is None else _row_to_item(row)

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        check_id(user_id, "user_id")
        wanted = list(dict.fromkeys(check_ids(ids)))
        removed = 0
        with self._db.write() as conn:
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                removed += conn.execute(
                    f"DELETE FROM lt_items WHERE user_id = ? AND id IN ({marks})", (user_id, *chunk)
                ).rowcount
        return removed

    def delete_user(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        with self._db.write() as conn:
            return conn.execute("DELETE FROM lt_items WHERE user_id = ?", (user_id,)).rowcount

    def count(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        with self._db.read() as conn:
            return int(conn.execute("SELECT count(*) FROM lt_items WHERE user_id = ?", (user_id,)).fetchone()[0])
