"""Write-behind for a vector index: an upsert is durable when it returns; the index
catches up in ``vectors`` jobs of the background engine (:mod:`hmem.jobs`), in batches,
while writes pause.

Why: an upsert into embedded Chroma costs ~5-7 ms, as much as the encode, on every
``Memory.add``. Here it writes its rows to an outbox table in hmem's SQLite file (durable
as the items are) and to an in-memory index; a thread moves them into the wrapped index,
many per upsert (a job per upsert, the engine takes up to :data:`MAX_PENDING` of a user's
at once), then deletes them from the outbox. What callers see does not change:

- a query searches the wrapped index *and* the pending vectors, a pending vector replacing
  the index's older one of the same id (metadata too): the next recall finds an add;
- ``delete``/``delete_user`` wait for a move of that user in flight, then drop the pending
  rows: a deleted vector never comes back;
- ``count``, ``set_stamp``, ``staged`` (and ``stamp`` until one is recorded) first move
  the user's pending rows;
- a crash loses nothing acknowledged: rows left in the outbox are loaded at the first use
  after a restart (cost: the rows left, never all items) and moved then.

If the wrapped index is down (any error but :class:`~hmem.errors.InvalidInput`), rows stay
in the outbox, queries still find them and the move is retried with the engine's back-off
(an outage: never quarantined); ``flush`` raises :class:`~hmem.errors.BackendUnavailable`
after its timeout, naming the cause.

If it refuses rows themselves (``InvalidInput``: metadata it cannot store …), the batch is
halved until the refused rows stand alone; each is *set aside* with its error
(:meth:`~WriteBehindVectorIndex.quarantined`) and the rest move on. A row set aside stays in
the outbox (a later process tries it once more) and queries still find it; nothing waits
for it (``flush``, ``close``); deleting its item, or writing its id again, clears it.
The engine's ``close`` does not wait for an index that is down: a refusing index never
holds a shutdown. One process per outbox, as for embedded Chroma, the index it is made for.

Example::

    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> from hmem.backends.sqlite.jobs import SqliteJobQueue
    >>> from hmem.jobs import JobEngine
    >>> db = SqliteDatabase(":memory:")
    >>> engine = JobEngine(SqliteJobQueue(db), exclusive=True)
    >>> index = WriteBehindVectorIndex(MemoryVectorIndex(), db, engine)
    >>> index.upsert("u1", ["tea"], [[1.0, 0.0]])
    >>> [hit.id for hit in index.query("u1", [1.0, 0.0], k=1)]  # found before it is moved
    ['tea']
    >>> index.flush(); index.inner.count("u1")
    1
    >>> engine.close(); index.close()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from hmem.backends._outbox import Guarded, Outbox, Row, SearchableIndex, Stage
from hmem.backends.memory.vectors import MemoryVectorIndex, check_query, check_query_ids, check_vectors
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.jobs import JobEngine, JobKind
from hmem.protocols import IndexStamp, ScoredId, StagedVectors
from hmem.types import Job, JobSpec, check_id

__all__ = ["IDLE_S", "KIND", "MAX_PENDING", "QuarantinedVector", "WriteBehindVectorIndex"]

log = logging.getLogger("hmem.backends.write_behind")

#: Rows move once writes pause this long (a chat's adds are seconds apart) or once this
#: many wait: Chroma's upsert holds the GIL, so moves in pauses keep it off the callers'
#: path, and one upsert of many rows costs far less than one each.
IDLE_S = 0.1
MAX_PENDING = 256
#: The job kind.
KIND = "vectors"
_MOVE_BATCH = 4000  # rows per upsert into the wrapped index (below Chroma's batch limit)


@dataclass(frozen=True, slots=True)
class QuarantinedVector:
    """A vector the wrapped index refused (``error``: its refusal), set aside in the outbox."""

    user_id: str
    item_id: str
    error: str


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class WriteBehindVectorIndex:
    """A :class:`~hmem.protocols.VectorIndex` in front of ``inner`` whose upserts return
    once they are in the outbox table of ``db`` (see the module doc); ``engine`` moves them.
    Rows move once writes pause for ``idle_s`` seconds or once ``max_pending`` upserts wait
    (:data:`IDLE_S`, :data:`MAX_PENDING`); ``flush_timeout_s``: how long :meth:`flush` (and
    the calls that flush first) waits for an index that refuses before raising."""

    def __init__(self, inner: SearchableIndex, db: SqliteDatabase, engine: JobEngine, *, idle_s: float = IDLE_S,
                 max_pending: int = MAX_PENDING, flush_timeout_s: float = 30.0) -> None:
        if not (idle_s >= 0 and max_pending >= 1 and flush_timeout_s > 0):
            raise ConfigError(f"WriteBehindVectorIndex needs idle_s >= 0, max_pending >= 1 and flush_timeout_s > 0, "
                              f"got {idle_s!r}, {max_pending!r}, {flush_timeout_s!r}")
        self.inner = inner
        self._engine = engine
        self._index = cast(SearchableIndex, Guarded(inner))  # every call below goes through it
        self._outbox = Outbox(db)
        self._idle_s = idle_s
        self._max_pending = max_pending
        self._flush_timeout_s = flush_timeout_s
        self._cond = threading.Condition()  # guards every field below
        self._rows: dict[str, dict[str, Row]] = {}  # user -> item id -> newest pending row
        self._pending = MemoryVectorIndex()  # the same rows, for queries
        self._moving: dict[str, threading.Lock] = {}  # held while a user's rows move (or are deleted)
        # user -> item id -> (row, refusal): rows the index refused, set aside; still in
        # the outbox and in ``_pending`` (queries find them), no longer in ``_rows``.
        self._quarantine: dict[str, dict[str, tuple[Row, str]]] = {}
        self._stamps: dict[str, IndexStamp] = {}  # known stamps (the dimension check of upsert)
        self._error: str | None = None  # the last refusal of the wrapped index, until a move succeeds
        self._loaded = False
        self._closed = False
        engine.register(JobKind(KIND, self._move_jobs, batch=max_pending, idle_s=idle_s, urgent_at=max_pending))

    def _load_locked(self) -> None:
        """Load the rows a previous process left in the outbox (under the lock, once)."""
        if self._closed:
            raise BackendUnavailable("the vector index was closed: open the Memory again")
        if self._loaded:
            return
        left = self._outbox.load()
        for user_id, rows in left.items():
            self._add_locked(user_id, list(rows.items()))
        self._loaded = True
        if left:
            log.info("moving %d vectors left in the outbox by an earlier process into the vector index",
                     sum(len(rows) for rows in left.values()))
            # Their jobs may be gone (written after the rows): one per user moves them all.
            self._engine.submit([JobSpec(KIND, user_id) for user_id in left])

    def _add_locked(self, user_id: str, rows: Sequence[tuple[str, Row]]) -> None:
        self._rows.setdefault(user_id, {}).update(rows)
        self._pending.upsert(user_id, [i for i, _ in rows], _matrix(r for _, r in rows),
                             [r.metadata for _, r in rows])

    def _drop_locked(self, user_id: str, ids: Collection[str] | None = None) -> None:
        """Forget the user's pending and set-aside rows (``ids``, or all) in memory and in the outbox."""
        rows, aside = self._rows.get(user_id, {}), self._quarantine.get(user_id, {})
        held = rows.keys() | aside.keys()
        gone = list(held) if ids is None else [i for i in ids if i in held]
        if not gone:
            return
        self._outbox.drop(user_id, gone)
        waiting = [i for i in gone if i in rows]
        set_aside = [i for i in gone if i not in rows]
        for i in set_aside:
            del aside[i]
        if not aside:
            self._quarantine.pop(user_id, None)
        self._pending.delete(user_id, set_aside)
        self._forget_locked(user_id, waiting)

    def _forget_locked(self, user_id: str, ids: Sequence[str], *, searchable: bool = False) -> None:
        """Forget these pending rows of the user in memory (the outbox is the caller's);
        ``searchable``: queries still find them (a row set aside)."""
        rows = self._rows.get(user_id, {})
        for i in ids:
            del rows[i]
        if not searchable:
            self._pending.delete(user_id, ids)
        if not rows:
            self._rows.pop(user_id, None)
        self._cond.notify_all()

    def _held_locked(self, user_id: str) -> set[str]:
        """The user's ids that queries answer from ``_pending``: waiting or set aside."""
        return set(self._rows.get(user_id, ())) | set(self._quarantine.get(user_id, ()))

    def _lock_of(self, user_id: str) -> threading.Lock:
        with self._cond:
            return self._moving.setdefault(user_id, threading.Lock())

    def _move_jobs(self, jobs: Sequence[Job]) -> None:
        """The engine's handler: move the waiting rows of the jobs' users (all of them, the
        ones written since included); an index that is down raises (the engine retries)."""
        for user_id in dict.fromkeys(job.user_id for job in jobs):
            while True:
                with self._cond:
                    if self._closed or not self._rows.get(user_id):
                        break
                down = self._move(user_id)
                if down is not None:
                    raise BackendUnavailable(f"the vector index refused the vectors of user {user_id!r} "
                                             f"({_describe(down)}); they stay in the outbox") from down

    def _move(self, user_id: str) -> Exception | None:
        """Move a batch of the user's rows; the error of an index that is down, else None."""
        with self._lock_of(user_id):
            with self._cond:
                batch = sorted(self._rows.get(user_id, {}).items(), key=lambda kv: kv[1].seq)[: _MOVE_BATCH]
            if not batch:
                return None
            moved, refused, down = self._upsert_sorting_out(user_id, batch)
            with self._cond:
                rows = self._rows.get(user_id, {})
                set_aside = [(i, r, exc) for (i, r), exc in refused if rows.get(i) is r]  # not those written again
                for i, r, exc in set_aside:
                    self._quarantine.setdefault(user_id, {})[i] = (r, _describe(exc))
                self._forget_locked(user_id, [i for i, _, _ in set_aside], searchable=True)
                if down is None:
                    keep = {r.seq for r, _ in self._quarantine.get(user_id, {}).values()}
                    try:
                        self._outbox.clear_through(user_id, batch[-1][1].seq, keep)
                    except Exception:  # the rows are moved; left in the outbox, a restart moves them again
                        log.exception("could not clear %d moved vectors of user %r from the outbox", len(moved),
                                      user_id)
                    self._forget_locked(user_id, [i for i, r in moved if rows.get(i) is r])
                    self._error = None
                else:
                    self._error = _describe(down)
            for i, _, exc in set_aside:
                log.warning("the vector index refused the vector of item %r of user %r (%s): it is set aside in the "
                            "outbox (queries still find it; stats, /readyz and the inspector show it); delete the item "
                            "or write it again with metadata the index takes", i, user_id, _describe(exc))
            # Down: the moved rows stay pending too, moved again, harmlessly, with the rest.
            return down

    def _upsert_sorting_out(self, user_id: str, batch: list[tuple[str, Row]]
                            ) -> tuple[list[tuple[str, Row]], list[tuple[tuple[str, Row], InvalidInput]], Exception | None]:
        """Upsert ``batch`` into the wrapped index. A refusal of the rows (``InvalidInput``)
        is narrowed down by halving to the rows refused on their own; any other error
        stops the pass (the index is down). Returns the rows moved, the rows refused with
        their refusals, and the error that stopped the pass (else None)."""
        moved: list[tuple[str, Row]] = []
        refused: list[tuple[tuple[str, Row], InvalidInput]] = []
        parts = [batch]
        while parts:
            part = parts.pop()
            try:
                self._index.upsert(user_id, [i for i, _ in part], _matrix(r for _, r in part),
                                  [r.metadata for _, r in part])
            except InvalidInput as exc:
                if len(part) == 1:
                    refused.append((part[0], exc))
                else:
                    half = len(part) // 2
                    parts += [part[half:], part[:half]]  # the first half next: rows move in their order
                continue
            except Exception as exc:  # down: kept in the outbox, retried after a back-off
                return moved, refused, exc
            moved.extend(part)
        return moved, refused, None

    def pending(self, user_id: str | None = None) -> int:
        """How many vectors (of ``user_id``, or of everyone) wait to be moved."""
        with self._cond:
            self._load_locked()
            return self._count_locked(user_id)

    def quarantined(self, user_id: str | None = None) -> list[QuarantinedVector]:
        """The vectors (of ``user_id``, or of everyone) the wrapped index refused, set
        aside with its refusal (see the module doc), oldest first."""
        with self._cond:
            self._load_locked()
            users = [user_id] if user_id is not None else list(self._quarantine)
            found = [(row.seq, QuarantinedVector(user, item_id, error)) for user in users
                     for item_id, (row, error) in self._quarantine.get(user, {}).items()]
        return [q for _, q in sorted(found, key=lambda pair: pair[0])]

    def _count_locked(self, user_id: str | None) -> int:
        if user_id is not None:
            return len(self._rows.get(user_id, ()))
        return sum(len(rows) for rows in self._rows.values())

    def flush(self, user_id: str | None = None, timeout: float | None = None) -> None:
        """Wait until the pending vectors (of ``user_id``, or all) are in the wrapped index
        (rows it refused are set aside, not waited for: :meth:`quarantined`).

        Raises :class:`~hmem.errors.BackendUnavailable` after ``timeout`` seconds (default:
        ``flush_timeout_s``) if the index is still down; they stay in the outbox."""
        limit = self._flush_timeout_s if timeout is None else timeout
        with self._cond:
            self._load_locked()
            if not self._count_locked(user_id):
                return
        self._engine.flush(limit, kinds=[KIND])
        with self._cond:
            left = self._count_locked(user_id)
        if left:
            whose = f" of user {user_id!r}" if user_id is not None else ""
            raise BackendUnavailable(
                f"{left} vectors{whose} still wait to be written to the vector index after {limit:g} s "
                f"({self._error or 'no answer yet'}); they are kept in the outbox and written once the index "
                "takes them: check that Chroma is reachable")

    def _waiting_rows(self) -> int:
        with self._cond:
            return self._count_locked(None)

    def close(self, timeout: float | None = None) -> None:
        """Move what is pending (up to ``timeout``, and not while the index is down: what is
        left stays in the outbox for the next process); later calls are refused. Idempotent."""
        with self._cond:
            if self._closed:
                return
            failing = self._error is not None
        if not failing and self._waiting_rows():
            self._engine.flush(self._flush_timeout_s if timeout is None else timeout, kinds=[KIND],
                               until_failing=True)
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None:
        check_id(user_id, "user_id")
        id_list, mat, metas = check_vectors(ids, vectors, metadatas)
        if not id_list:
            return
        dim = int(mat.shape[1])
        known = self._known_stamp(user_id)
        if known is not None and known.dimension != dim:
            raise InvalidInput(f"vectors have dimension {dim} but this user's index is stamped {known.embedder} "
                               f"(dim {known.dimension})", field="vectors")
        with self._cond:
            self._load_locked()
            if self._engine.closed:
                raise BackendUnavailable("the background engine was closed: open the Memory again")
            waiting = self._rows.get(user_id)
            if waiting:
                have = next(iter(waiting.values())).vector.shape[0]
                if have != dim:
                    raise InvalidInput(f"vectors have dimension {dim} but this user's vectors have {have}",
                                       field="vectors")
            rows = self._outbox.add(user_id, id_list, mat, metas)
            self._add_locked(user_id, list(zip(id_list, rows, strict=True)))
            aside = self._quarantine.get(user_id, {})
            for i in id_list:  # written again: the new row is tried (the old one is cleared once it moves)
                aside.pop(i, None)
            if not aside:
                self._quarantine.pop(user_id, None)
            # Under the lock: a flush that sees these rows also sees their job.
            self._engine.submit([JobSpec(KIND, user_id)])

    def _known_stamp(self, user_id: str) -> IndexStamp | None:
        with self._cond:
            known = self._stamps.get(user_id)
        if known is None:
            known = self._index.stamp(user_id)
            if known is not None and known.embedder is not None:  # unstamped vectors may still be stamped
                with self._cond:
                    self._stamps[user_id] = known
        return known

    def _forget_stamp(self, user_id: str) -> None:
        with self._cond:
            self._stamps.pop(user_id, None)

    def _search(self, user_id: str, inner: Any, pending: Any, k: int) -> list[ScoredId]:
        """``inner(depth)`` merged with ``pending()``: a pending vector replaces the index's."""
        with self._cond:
            self._load_locked()
            waiting = self._held_locked(user_id)
            # Read before the index: a row moved in between is then found in both, never in neither.
            found = pending() if waiting else []
        if not waiting:
            return list(inner(k))
        # Most pending rows are new ids the index lacks: ask for a little more first, and
        # for all that a pending id could displace only when that was not enough.
        depth = k + min(k, len(waiting))
        hits = inner(depth)
        kept = [h for h in hits if h.id not in waiting]
        if len(kept) < k and len(hits) == depth and depth < k + len(waiting):
            kept = [h for h in inner(k + len(waiting)) if h.id not in waiting]
        return sorted(kept + found, key=lambda h: -h.score)[:k]

    def query(self, user_id: str, vector: Sequence[float], k: int,
              where: Mapping[str, Any] | None = None) -> list[ScoredId]:
        check_query(user_id, vector, k, where)
        return self._search(user_id, lambda depth: self._index.query(user_id, vector, depth, where),
                            lambda: self._pending.query(user_id, vector, k, where), k)

    def query_many(self, user_id: str, vectors: Sequence[Sequence[float]], k: int,
                   where: Mapping[str, Any] | None = None) -> list[list[ScoredId]]:
        """:meth:`query` for many vectors (the wrapped index's one round trip when nothing is pending)."""
        check_id(user_id, "user_id")
        with self._cond:
            self._load_locked()
            busy = user_id in self._rows or user_id in self._quarantine
        if not busy:
            return self._index.query_many(user_id, vectors, k, where)
        return [self.query(user_id, v, k, where) for v in vectors]

    def query_ids(self, user_id: str, vector: Sequence[float], k: int, ids: Collection[str]) -> list[ScoredId]:
        check_query_ids(user_id, vector, k, ids)
        return self._search(user_id, lambda depth: self._index.query_ids(user_id, vector, depth, ids),
                            lambda: self._pending.query_ids(user_id, vector, k, ids), k)

    def delete(self, user_id: str, ids: Sequence[str]) -> None:
        with self._lock_of(user_id):  # no move of the user's rows in flight
            self._index.delete(user_id, ids)  # validates; refused, it changes nothing here either
            with self._cond:
                self._load_locked()
                self._drop_locked(user_id, set(ids))

    def delete_user(self, user_id: str) -> None:
        with self._lock_of(user_id):  # no move of the user's rows in flight
            self._index.delete_user(user_id)
            with self._cond:
                self._load_locked()
                self._drop_locked(user_id)
                self._stamps.pop(user_id, None)

    def count(self, user_id: str) -> int:
        check_id(user_id, "user_id")
        self.flush(user_id)
        return self._index.count(user_id)

    def stamp(self, user_id: str) -> IndexStamp | None:
        check_id(user_id, "user_id")
        with self._cond:
            known = self._stamps.get(user_id)
        if known is not None:  # a recorded stamp: the pending rows cannot change it
            return known
        self.flush(user_id)  # unstamped vectors report their dimension: the index must hold them
        return self._index.stamp(user_id)

    def set_stamp(self, user_id: str, stamp: IndexStamp) -> None:
        check_id(user_id, "user_id")
        self.flush(user_id)  # the stamp is checked against the vectors the index holds
        self._index.set_stamp(user_id, stamp)
        self._forget_stamp(user_id)

    def users(self) -> list[str]:
        with self._cond:
            self._load_locked()
            waiting = set(self._rows) | set(self._quarantine)
        return sorted(set(self._index.users()) | waiting)

    def staged(self, user_id: str, stamp: IndexStamp) -> StagedVectors:
        check_id(user_id, "user_id")
        self.flush(user_id)
        self._forget_stamp(user_id)
        return Stage(self._index.staged(user_id, stamp), lambda done: self._rebuilt(user_id, done))

    def _rebuilt(self, user_id: str, done: bool) -> None:
        """After a rebuild's commit: the stamp is read again; once it took, the rebuild
        holds a vector for every item, so the rows set aside (older vectors) are gone."""
        self._forget_stamp(user_id)
        if done:
            with self._lock_of(user_id), self._cond:
                self._drop_locked(user_id, list(self._quarantine.get(user_id, ())))


def _matrix(rows: Iterable[Row]) -> Sequence[Sequence[float]]:
    return cast("Sequence[Sequence[float]]", np.stack([r.vector for r in rows]))
