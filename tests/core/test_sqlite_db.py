"""The shared SQLite handle: every connection it opened is closed by close()."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable


def test_close_closes_the_connections_of_every_thread(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "x.sqlite3")
    with db.write() as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    seen: list[sqlite3.Connection] = []

    def worker() -> None:
        with db.read() as conn:
            seen.append(conn)
            conn.execute("SELECT count(*) FROM t").fetchone()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    db.close()
    for conn in seen:
        with pytest.raises(sqlite3.ProgrammingError):  # "Cannot operate on a closed database"
            conn.execute("SELECT 1")
    with pytest.raises(BackendUnavailable, match="closed"), db.read():
        pass
    db.close()  # idempotent


def test_a_bad_path_fails_at_once_with_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(BackendUnavailable, match="file"):
        SqliteDatabase(blocker / "sub" / "x.sqlite3")
