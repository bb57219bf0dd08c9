"""Sentence keys written behind the add (:mod:`hmem.longterm.keys`), durably.

Embedding a turn's sentences costs more than encoding the turn itself, which
``Memory.add`` must not wait for (docs/write-path.md has the timings). So :meth:`submit` writes
each turn's key texts to a ``key_jobs`` table in hmem's SQLite file (~0.3 ms; they
survive a crash, and the next process builds them) and returns; a thread embeds and
writes them once writes pause for :data:`IDLE_S` (the embedded vector index holds the
GIL while it writes, and the model takes every core, so a build during adds would slow
them) or once :data:`MAX_PENDING` turns wait (so that writes that never pause still get
their keys, late), a batch at a time. Until
then a turn is found by its own vector and BM25 as before: keys only add.

:meth:`forget` and :meth:`delete_user` drop waiting jobs and written keys, after any
batch in flight, so no key outlives its turn. A batch the model or index refuses stays in
the table and is tried again with back-off; :meth:`flush` then returns False after its
timeout, naming the cause in the log.

Example::

    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> from hmem.providers.onnx import OnnxMiniLMEmbedder
    >>> keys = SentenceKeysBehind(MemoryVectorIndex(), OnnxMiniLMEmbedder(), SqliteDatabase(":memory:"))
    >>> keys.flush(), keys.pending()
    (True, 0)
    >>> keys.close()
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.write_behind import IDLE_S
from hmem.errors import BackendUnavailable, ConfigError
from hmem.longterm._stamps import wanted_stamp
from hmem.longterm.keys import KeyJob, key_ids, key_jobs, write_keys
from hmem.protocols import Embedder, ScoredId, VectorIndex
from hmem.types import MemoryItem

__all__ = ["BATCH_TURNS", "IDLE_S", "MAX_PENDING", "SentenceKeysBehind"]

log = logging.getLogger("hmem.backends.sentence_keys")

#: Turns whose keys are embedded in one model call and written in one upsert. Keys are
#: built when vectors written behind are moved, once writes pause for ``IDLE_S``.
BATCH_TURNS = 64
#: ... or without a pause once this many turns wait: building competes with the adds for
#: the CPU (the model runs on every core), so it waits for pauses as long as the lag
#: stays bounded (measured: docs/bench-write-path.md).
MAX_PENDING = 2048
_MAX_BACKOFF_S = 30.0

_SCHEMA = """CREATE TABLE IF NOT EXISTS key_jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    texts TEXT NOT NULL,
    metadata TEXT NOT NULL
)"""


class SentenceKeysBehind:
    """A :class:`~hmem.longterm.keys.SentenceKeyIndex` whose keys ``embedder`` embeds and a
    thread writes to ``index`` (a vector index of their own) after the add returned; the
    waiting ones are kept in ``db``'s ``key_jobs`` table. ``idle_s``: the pause in
    submissions before a batch is built; ``batch_turns``: turns per batch."""

    def __init__(self, index: VectorIndex, embedder: Embedder, db: SqliteDatabase, *, idle_s: float = IDLE_S,
                 batch_turns: int = BATCH_TURNS) -> None:
        if not (idle_s >= 0 and isinstance(batch_turns, int) and batch_turns >= 1):
            raise ConfigError(f"SentenceKeysBehind needs idle_s >= 0 and batch_turns >= 1, got {idle_s!r}, "
                              f"{batch_turns!r}")
        self.index = index
        self._embedder = embedder
        self._db = db
        self._idle_s = idle_s
        self._batch = batch_turns
        self._cond = threading.Condition()  # guards the fields below
        self._building = threading.Lock()  # held while a batch is built, and by forget/delete_user
        self._current: set[str] = set()  # users whose keys are known to be of this embedder
        with self._db.write() as conn:
            conn.execute(_SCHEMA)
            self._pending = _count(conn)  # left by an earlier process: built from the start
        self._last_write = 0.0
        self._flushers = 0
        self._backoff = 0.0  # seconds to wait after the last failed batch
        self._retry_at = 0.0  # monotonic time before which no batch is tried again
        self._error: str | None = None
        self._closed = False
        self._thread: threading.Thread | None = None
        if self._pending:
            with self._cond:
                self._start_locked()

    # -- the port -------------------------------------------------------------------

    def submit(self, user_id: str, items: Sequence[MemoryItem]) -> None:
        jobs = key_jobs(items)
        if not jobs:
            return
        rows = [(user_id, item_id, json.dumps(texts), json.dumps(meta)) for item_id, texts, meta in jobs]
        with self._cond:
            if self._closed:
                raise BackendUnavailable("the sentence keys were closed: open the Memory again")
            with self._db.write() as conn:
                conn.executemany("INSERT INTO key_jobs (user_id, item_id, texts, metadata) VALUES (?, ?, ?, ?)", rows)
            self._pending += len(rows)
            self._last_write = time.monotonic()
            self._start_locked()
            self._cond.notify_all()

    def search(self, user_id: str, vector: Sequence[float], k: int,
               where: Mapping[str, Any] | None = None) -> list[ScoredId]:
        if user_id not in self._current:
            if self.index.stamp(user_id) != wanted_stamp(self._embedder):
                return []  # none yet, or another embedder's (reindex rebuilds them)
            self._current.add(user_id)
        return self.index.query(user_id, vector, k, where=where)

    def forget(self, user_id: str, ids: Sequence[str]) -> None:
        with self._building:
            self._drop_jobs("user_id = ? AND item_id = ?", [(user_id, i) for i in ids])
            self.index.delete(user_id, [kid for item_id in ids for kid in key_ids(item_id)])

    def delete_user(self, user_id: str) -> None:
        with self._building:
            self._drop_jobs("user_id = ?", [(user_id,)])
            self._current.discard(user_id)
            self.index.delete_user(user_id)

    def flush(self, timeout: float | None = 60.0) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._flushers += 1
            try:
                while self._pending and not self._closed:
                    self._start_locked()
                    self._cond.notify_all()
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        log.warning("%d turns still wait for their sentence keys after %g s (%s); they are kept and "
                                    "built later", self._pending, timeout, self._error or "no answer yet")
                        return False
                    self._cond.wait(left)
                return not self._pending
            finally:
                self._flushers -= 1

    # -- observability and lifecycle --------------------------------------------------

    def pending(self) -> int:
        """Turns whose keys wait to be built, of every user."""
        with self._cond:
            return self._pending

    def waiting(self, user_id: str) -> int:
        """Turns of ``user_id`` whose keys wait to be built (read from ``key_jobs``)."""
        with self._db.read() as conn:
            return _count(conn, user_id)

    def close(self, timeout: float | None = 10.0) -> None:
        """Build what waits (up to ``timeout``, and not at all while batches fail: the
        rest stays in ``key_jobs`` for the next process) and stop the thread. Idempotent."""
        with self._cond:
            if self._closed:
                return
            failing = self._error is not None
        if not failing:
            self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5.0)

    # -- the builder ------------------------------------------------------------------

    def _drop_jobs(self, where: str, params: Sequence[tuple[str, ...]]) -> None:
        # Under the lock submit() inserts under, so the count cannot miss a submission.
        with self._cond, self._db.write() as conn:
            conn.executemany(f"DELETE FROM key_jobs WHERE {where}", params)  # fixed clauses
            self._pending = _count(conn)
            self._cond.notify_all()

    def _start_locked(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="hmem-sentence-keys", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    wait = self._wait_locked()
                    if wait == 0.0:
                        break
                    self._cond.wait(wait)
            ok = self._build_batch()
            with self._cond:
                self._backoff = 0.0 if ok else min(_MAX_BACKOFF_S, max(0.5, 2 * self._backoff))
                self._retry_at = time.monotonic() + self._backoff
                self._cond.notify_all()

    def _wait_locked(self) -> float | None:
        """0 to build now; else how long to wait (None: until woken)."""
        if not self._pending:
            return None
        now = time.monotonic()
        urgent = self._flushers or self._pending >= MAX_PENDING
        due = max(0.0 if urgent else self._idle_s - (now - self._last_write), self._retry_at - now)
        return 0.0 if due <= 0 else due

    def _build_batch(self) -> bool:
        with self._building:
            with self._db.write() as conn:
                rows = conn.execute("SELECT seq, user_id, item_id, texts, metadata FROM key_jobs ORDER BY seq LIMIT ?",
                                    (self._batch,)).fetchall()
            if not rows:
                return True
            by_user: dict[str, dict[str, KeyJob]] = {}
            for _seq, user_id, item_id, texts, meta in rows:  # the newest job of a turn wins
                by_user.setdefault(user_id, {})[item_id] = (item_id, json.loads(texts), json.loads(meta))
            try:
                for user_id, jobs in by_user.items():
                    self._write(user_id, list(jobs.values()))
            except Exception as exc:  # the model or the index refused: kept, tried again
                self._error = f"{type(exc).__name__}: {exc}"
                log.warning("building sentence keys failed (kept, tried again): %s", self._error)
                return False
            self._error = None
            with self._cond, self._db.write() as conn:  # as in _drop_jobs
                conn.execute("DELETE FROM key_jobs WHERE seq <= ?", (rows[-1][0],))
                self._pending = _count(conn)
        return True

    def _write(self, user_id: str, jobs: Sequence[KeyJob]) -> None:
        write_keys(self.index, self._embedder, user_id, jobs)
        self._current.add(user_id)


def _count(conn: Any, user_id: str | None = None) -> int:
    """Waiting jobs, of ``user_id`` or of everyone."""
    if user_id is None:
        return int(conn.execute("SELECT COUNT(*) FROM key_jobs").fetchone()[0])
    return int(conn.execute("SELECT COUNT(*) FROM key_jobs WHERE user_id = ?", (user_id,)).fetchone()[0])
