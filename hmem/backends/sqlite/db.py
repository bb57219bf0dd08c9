"""One SQLite file shared by every embedded store (sessions, summaries, profile,
long-term items, lexical index, embedding cache).

WAL mode so readers never block the writer; ``BEGIN IMMEDIATE`` for every write
so concurrent writers (threads or processes) queue on the file lock instead of
failing half-way; a busy timeout so they wait rather than error.

Example::

    >>> db = SqliteDatabase(":memory:")
    >>> with db.write() as conn:
    ...     _ = conn.execute("CREATE TABLE t (x INTEGER)")
    >>> with db.read() as conn:
    ...     conn.execute("SELECT count(*) FROM t").fetchone()[0]
    0
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hmem.errors import BackendUnavailable

__all__ = ["SqliteDatabase"]


class SqliteDatabase:
    """A connection-per-thread handle on one SQLite file.

    ``path`` may be ``":memory:"`` (one private in-process database shared by the
    threads of this object) or a file path (created with its parent folder).
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        self.path = str(path)
        self._busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._lock = threading.RLock()  # serializes writers of a :memory: db
        self._shared: sqlite3.Connection | None = None
        self._opened: list[sqlite3.Connection] = []
        self._closed = False
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise BackendUnavailable(f"cannot create the folder for SQLite file {self.path}: {exc}") from exc
        # Open once now so a bad path fails here, with the path in the message.
        with self.read():
            pass

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout_s,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,
            )
            conn.execute("PRAGMA foreign_keys=ON")
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_s * 1000)}")
        except sqlite3.Error as exc:
            raise BackendUnavailable(
                f"cannot open SQLite database {self.path!r}: {exc}. Check the path and its permissions."
            ) from exc
        return conn

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise BackendUnavailable(f"SQLite database {self.path!r} was closed")
        if self.path == ":memory:":
            with self._lock:
                if self._shared is None:
                    self._shared = self._open()
                return self._shared
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._open()
            self._local.conn = conn
            self._local.pid = os.getpid()
            with self._lock:  # remembered so close() can close every thread's connection
                self._opened.append(conn)
        return conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reads (autocommit; each statement sees committed data)."""
        if self.path == ":memory:":
            with self._lock:
                yield self._connection()
        else:
            yield self._connection()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE … COMMIT``; rolled back on error.

        Committed on exit, so an acknowledged write is durable (WAL, synchronous=NORMAL
        survives a process crash; use FULL for power loss).
        """
        with self._lock if self.path == ":memory:" else _nullcontext():
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise BackendUnavailable(f"SQLite database {self.path!r} is locked or unusable: {exc}") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this handle opened, in any thread (idempotent).

        Call it once the threads that used the handle are done with it."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
            if self._shared is not None:
                opened.append(self._shared)
                self._shared = None
        for conn in opened:
            with contextlib.suppress(sqlite3.ProgrammingError):  # made before a fork: not ours
                conn.close()
        self._local.conn = None


@contextmanager
def _nullcontext() -> Iterator[None]:
    yield
