"""Sentence keys written behind the add (:mod:`hmem.longterm.keys`), as durable jobs of
the background engine (:mod:`hmem.jobs`).

Embedding a turn's sentences costs more than encoding the turn itself, which
``Memory.add`` must not wait for (docs/write-path.md has the timings). So :meth:`submit`
stores each turn's key texts as a ``sentence_keys`` job (they survive a crash, and the
next process builds them) and returns; the engine builds them once writes pause for
:data:`IDLE_S` (the embedded vector index holds the GIL while it writes, and the model
takes every core, so a build during adds would slow them) or once :data:`MAX_PENDING`
turns wait (so that writes that never pause still get their keys, late), a batch at a
time. Until then a turn is found by its own vector and BM25 as before: keys only add.

:meth:`forget` and :meth:`delete_user` drop waiting jobs and written keys, after any
batch of that user in flight, so no key outlives its turn. A batch the model or index
refuses is retried with the engine's back-off; a turn whose keys are refused again and
again is quarantined (reported, not retried forever), and the others are built.

Example::

    >>> from hmem.backends.memory.jobs import MemoryJobQueue
    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.jobs import JobEngine
    >>> from hmem.providers.onnx import OnnxMiniLMEmbedder
    >>> engine = JobEngine(MemoryJobQueue())
    >>> keys = SentenceKeysBehind(MemoryVectorIndex(), OnnxMiniLMEmbedder(), engine)
    >>> keys.flush(), keys.waiting("u1")
    (True, 0)
    >>> engine.close()
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.write_behind import IDLE_S
from hmem.errors import ConfigError
from hmem.jobs import JobEngine, JobKind
from hmem.longterm._stamps import wanted_stamp
from hmem.longterm.keys import KeyJob, key_ids, key_jobs, write_keys
from hmem.protocols import Embedder, ScoredId, VectorIndex
from hmem.types import Job, JobCounts, JobSpec, MemoryItem

__all__ = ["BATCH_TURNS", "IDLE_S", "KIND", "MAX_PENDING", "SentenceKeysBehind"]

log = logging.getLogger("hmem.backends.sentence_keys")

#: The job kind.
KIND = "sentence_keys"
#: Turns whose keys are embedded in one model call and written in one upsert.
BATCH_TURNS = 64
#: Built without a pause once this many turns wait: building competes with the adds for
#: the CPU (the model runs on every core), so it waits for pauses as long as the lag
#: stays bounded (measured: docs/bench-write-path.md).
MAX_PENDING = 2048


class SentenceKeysBehind:
    """A :class:`~hmem.longterm.keys.SentenceKeyIndex` whose keys ``embedder`` embeds and
    ``engine`` writes to ``index`` (a vector index of their own) after the add returned.
    ``idle_s``: the pause in submissions before a batch is built; ``batch_turns``: turns
    per batch; ``db``: a SQLite file whose ``key_jobs`` table (where hmem kept waiting keys
    before the engine) is moved into the engine's queue once."""

    def __init__(self, index: VectorIndex, embedder: Embedder, engine: JobEngine, *, idle_s: float = IDLE_S,
                 batch_turns: int = BATCH_TURNS, db: SqliteDatabase | None = None) -> None:
        if not (idle_s >= 0 and isinstance(batch_turns, int) and batch_turns >= 1):
            raise ConfigError(f"SentenceKeysBehind needs idle_s >= 0 and batch_turns >= 1, got {idle_s!r}, "
                              f"{batch_turns!r}")
        self.index = index
        self._embedder = embedder
        self._engine = engine
        self._current: set[str] = set()  # users whose keys are known to be of this embedder
        if db is not None:
            _move_legacy_jobs(db, engine)
        engine.register(JobKind(KIND, self._build, batch=batch_turns, idle_s=idle_s, urgent_at=MAX_PENDING))

    # -- the port -------------------------------------------------------------------

    def submit(self, user_id: str, items: Sequence[MemoryItem]) -> None:
        jobs = key_jobs(items)
        if jobs:
            self._engine.submit([JobSpec(KIND, user_id, {"texts": texts, "metadata": dict(meta)}, key=item_id)
                                 for item_id, texts, meta in jobs])

    def search(self, user_id: str, vector: Sequence[float], k: int,
               where: Mapping[str, Any] | None = None) -> list[ScoredId]:
        if user_id not in self._current:
            if self.index.stamp(user_id) != wanted_stamp(self._embedder):
                return []  # none yet, or another embedder's (reindex rebuilds them)
            self._current.add(user_id)
        return self.index.query(user_id, vector, k, where=where)

    def forget(self, user_id: str, ids: Sequence[str]) -> None:
        self._engine.drop(user_id, kind=KIND, keys=list(ids))
        self.index.delete(user_id, [kid for item_id in ids for kid in key_ids(item_id)])

    def delete_user(self, user_id: str) -> None:
        self._engine.drop(user_id, kind=KIND)
        self._current.discard(user_id)
        self.index.delete_user(user_id)

    def flush(self, timeout: float | None = 60.0) -> bool:
        return self._engine.flush(timeout, kinds=[KIND])

    def waiting(self, user_id: str) -> int:
        """Turns of ``user_id`` whose keys wait to be built (quarantined ones aside)."""
        counts = self._engine.queue.counts(user_id=user_id).get(KIND, JobCounts())
        return counts.waiting + counts.running

    # -- the builder ------------------------------------------------------------------

    def _build(self, jobs: Sequence[Job]) -> None:
        by_user: dict[str, dict[str, KeyJob]] = {}
        for job in jobs:  # in queue order: the newest job of a turn wins
            assert job.key is not None  # submit sets it
            by_user.setdefault(job.user_id, {})[job.key] = (job.key, list(job.payload["texts"]),
                                                             dict(job.payload["metadata"]))
        for user_id, turns in by_user.items():
            write_keys(self.index, self._embedder, user_id, list(turns.values()))
            self._current.add(user_id)


def _move_legacy_jobs(db: SqliteDatabase, engine: JobEngine) -> None:
    """Move the waiting keys of the ``key_jobs`` table (hmem before the engine) into the
    engine's queue, then drop the table."""
    with db.read() as conn:
        found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'key_jobs'").fetchone()
        rows = conn.execute("SELECT user_id, item_id, texts, metadata FROM key_jobs ORDER BY seq").fetchall() \
            if found else []
    if not found:
        return
    if rows:
        engine.queue.put([JobSpec(KIND, user_id, {"texts": json.loads(texts), "metadata": json.loads(meta)},
                                  key=item_id) for user_id, item_id, texts, meta in rows])
        log.info("moved %d waiting sentence-key jobs into the background queue", len(rows))
    with db.write() as conn:
        conn.execute("DROP TABLE key_jobs")
