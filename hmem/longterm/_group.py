"""Group commit of one user's concurrent writes (:meth:`LongTermStore.ingest
<hmem.longterm.store.LongTermStore.ingest>`): whoever holds the user's lock writes every
write queued behind it in one batch — one item-store write, one vector upsert, one
lexical update — instead of one after another.

Why: the writes of one user are serialised by its lock (dedup decisions need them to
be), and the vector upsert inside it is most of their time (~5 ms in embedded Chroma, a
round trip to a server). Measured with ``hmem serve``, 20 clients appending to one user:
63–73 appends/s with embedded Chroma against 231 with the vectors in memory
(docs/bench-write-path.md).

Each caller still gets exactly its own results, and returns only once they are durable.
A batch is written as the writes would be one after another, in the order they were
queued: turns first (never deduplicated), then the facts, deduplicated against each
other and the store as one batch is. Only this process's writers meet here; instances on
other hosts write as before.

Example::

    >>> import threading
    >>> group = GroupCommit()
    >>> lock = threading.Lock()
    >>> group.run("u1", lock, "a", lambda batch: [w.upper() for w in batch])
    'A'
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Generic, NamedTuple, Protocol, TypeVar

from hmem.longterm._args import Entry
from hmem.longterm.types import ArchiveResult, RememberResult
from hmem.protocols import ItemFilter, ItemStore
from hmem.types import MemoryItem

__all__ = ["GroupCommit", "write_ingests"]

W = TypeVar("W")
R = TypeVar("R")


class _Job(Generic[W, R]):
    __slots__ = ("done", "error", "result", "write")

    def __init__(self, write: W) -> None:
        self.write = write
        self.done = False
        self.result: R | None = None
        self.error: BaseException | None = None


class GroupCommit(Generic[W, R]):
    """Per-user queues of writes waiting for the user's lock."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._queued: dict[str, list[_Job[W, R]]] = {}

    def run(self, user_id: str, lock: threading.Lock, write: W,
            write_all: Callable[[Sequence[W]], Sequence[R]]) -> R:
        """``write``'s result: done by this caller, together with every write queued for
        ``user_id`` when it gets ``lock``, or by the caller that got it first.
        ``write_all(writes)`` runs under ``lock`` and returns one result per write; if it
        raises, every write of the batch raises the same error."""
        job: _Job[W, R] = _Job(write)
        with self._mutex:
            self._queued.setdefault(user_id, []).append(job)
        with lock:
            # Set under the lock by the holder that took this job: read under it too.
            if not job.done:
                with self._mutex:
                    jobs = self._queued.pop(user_id)  # holds this job: only a lock holder pops
                try:
                    results = write_all([j.write for j in jobs])
                    if len(results) != len(jobs):
                        raise AssertionError(f"write_all returned {len(results)} results for {len(jobs)} writes")
                except BaseException as exc:  # every caller of the batch learns of it
                    for j in jobs:
                        j.error, j.done = exc, True
                else:
                    for j, r in zip(jobs, results, strict=True):
                        j.result, j.done = r, True
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]  # set with done


class Ingest(NamedTuple):
    """One queued :meth:`LongTermStore.ingest <hmem.longterm.store.LongTermStore.ingest>`."""

    turns: list[Entry]
    skipped: list[str]  # message ids already skipped (not archivable)
    facts: Sequence[Entry]
    check_archived: bool  # look for turns archived before
    vectors: Mapping[str, list[float]]  # what it embedded, by dense text


Written = tuple[ArchiveResult, list[RememberResult]]


class _Write(Protocol):
    def __call__(self, entries: Sequence[Entry], *, dedup_from: int,
                 vectors: Mapping[str, list[float]]) -> list[RememberResult]: ...


def write_ingests(
    items: ItemStore, ingests: Sequence[Ingest], user_id: str, *, write: _Write,
    enforce_retention: Callable[[], list[MemoryItem]],
) -> list[Written]:
    """Write ``ingests`` (queued for one user, under its lock) as one batch, as if one
    after another: ``write(entries, dedup_from=, vectors=)`` (the store's, for the user)
    gets every turn, then every fact; a turn archived before, or earlier in the batch, is
    skipped where its ingest asks to check. The items the retention cap removes are
    reported to the last ingest."""
    sources = {e.source_message_id or "" for ing in ingests if ing.check_archived for e in ing.turns}
    have = _archived(items, user_id, sources) if sources else set()
    kept: list[list[Entry]] = []
    skipped_of: list[list[str]] = []
    for ing in ingests:
        check = ing.check_archived
        new = [e for e in ing.turns if not check or e.source_message_id not in have]
        skipped_of.append(ing.skipped + [e.source_message_id or "" for e in ing.turns
                                         if check and e.source_message_id in have])
        have |= {e.source_message_id for e in new}  # a later ingest of the same turn finds it archived
        kept.append(new)
    all_turns = [e for turns in kept for e in turns]
    facts = [e for ing in ingests for e in ing.facts]
    vectors = {text: vec for ing in ingests for text, vec in ing.vectors.items()}
    results = write([*all_turns, *facts], dedup_from=len(all_turns), vectors=vectors)
    evicted = tuple(enforce_retention())
    out: list[Written] = []
    t, f = 0, len(all_turns)
    for ing, turns, skipped in zip(ingests, kept, skipped_of, strict=True):
        archived, remembered = results[t : t + len(turns)], results[f : f + len(ing.facts)]
        t, f = t + len(turns), f + len(ing.facts)
        out.append((ArchiveResult(tuple(r.item for r in archived), tuple(skipped)), list(remembered)))
    if evicted:
        archive, remembered = out[-1]
        if remembered:
            remembered[-1] = replace(remembered[-1], evicted=evicted)
        out[-1] = (replace(archive, evicted=evicted), remembered)
    return out


def _archived(items: ItemStore, user_id: str, sources: set[str]) -> set[str | None]:
    """The message ids among ``sources`` whose turns the store holds already."""
    done = items.find_ids(user_id, ItemFilter(kinds=frozenset({"turn"}), source_message_ids=frozenset(sources)))
    return {it.source_message_id for it in items.get(user_id, sorted(done)).values()} if done else set()
