"""The long-term store: a user's facts and archived turns, with hybrid recall.

Three stores stay consistent by a fixed write order (see ``docs/longterm.md``):
the item store (source of truth) is written first, the vector and lexical indexes
after; deletes remove from the item store first. A crash in between leaves either an
item that is not yet recallable or index ids with no item — recall ignores index ids
the item store does not know, and :meth:`LongTermStore.reindex` repairs both.

Vectors of two embedders never mix: each user's vectors are stamped with the embedder that
made them, checked on the first write or recall of the user (:mod:`hmem.longterm._stamps`).

With ``keys`` (a :class:`~hmem.longterm.keys.SentenceKeyIndex`), archived turns are also
found by their sentences: the store submits each written turn, drops its keys with it,
and folds the keys' scores into the dense side of recall (:mod:`hmem.longterm.keys`).

With a ``planner`` (:mod:`hmem.longterm.planner`: an LLM's, optional), recall also searches
the queries it writes for a question.

Example::

    >>> from hmem.backends.memory.items import MemoryItemStore
    >>> from hmem.backends.memory.vectors import MemoryVectorIndex
    >>> from hmem.backends.memory.lexical import MemoryLexicalIndex
    >>> from hmem.providers.embed import SentenceTransformerEmbedder
    >>> lt = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(),
    ...                    SentenceTransformerEmbedder())
    >>> lt.remember("u1", "I am allergic to peanuts").status
    'stored'
    >>> lt.recall("u1", "food allergies", k=1)[0].item.text
    'I am allergic to peanuts'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np

from hmem.errors import BackendUnavailable, ConfigError, InvalidInput
from hmem.longterm._args import Entry, check_entries, check_entry, check_forget_filter, prepare_turns
from hmem.longterm._group import GroupCommit, Ingest, Written, write_ingests
from hmem.longterm._items import (
    entry_dense_text,
    merge_near_duplicate,
    new_item,
    new_item_id,
    retention_victims,
    skip_exact_duplicates,
    with_previous_turns,
)
from hmem.longterm._nearby import near_duplicate, neighbours_of
from hmem.longterm._persist import (
    check_restore,
    link_versions,
    persist,
    rebuild_lexical,
    restore_items,
    revive_versions,
)
from hmem.longterm._recall import RecallPorts, run_recall
from hmem.longterm._stamps import check_stamp, rebuild_vectors
from hmem.longterm.dedup import dedup_key
from hmem.longterm.index_text import dense_text
from hmem.longterm.keys import SentenceKeyIndex, fold_keys, submit_turns
from hmem.longterm.options import RecallOptions
from hmem.longterm.planner import QueryPlanner, fuse_planned
from hmem.longterm.supersede import CLAIM_KEY
from hmem.longterm.types import ArchiveResult, LongTermConfig, RememberResult, check_k
from hmem.protocols import Embedder, ItemStore, LexicalIndex, ScoredId, VectorIndex
from hmem.types import Hit, MemoryItem, Message, check_id, check_text, coerce_messages, utcnow

__all__ = ["ArchiveResult", "Entry", "LongTermConfig", "LongTermStore", "RememberResult"]

log = logging.getLogger("hmem.longterm.store")

class LongTermStore:
    """A user's long-term items behind one API; collaborators (and its ``hmem reindex`` line) are injected."""

    def __init__(self, items: ItemStore, vectors: VectorIndex, lexical: LexicalIndex, embedder: Embedder, *,
                 config: LongTermConfig | None = None, clock: Callable[[], datetime] = utcnow,
                 keys: SentenceKeyIndex | None = None, planner: QueryPlanner | None = None,
                 reindex_command: str = "hmem reindex") -> None:
        if not callable(getattr(embedder, "embed_query", None)):
            raise ConfigError(f"{type(embedder).__name__} has no embed_query(texts): add it (a symmetric model "
                              "returns embed(texts)); see hmem.protocols.Embedder")
        self.items, self.vectors, self.lexical, self.embedder = items, vectors, lexical, embedder
        self.keys, self.planner = keys, planner  # planner: more queries per recall (an LLM's), or none
        self.config = config or LongTermConfig()
        self._clock = clock
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._stamped: set[str] = set()  # users whose vectors this store's embedder may use
        self._reindex_command = reindex_command  # named when a user's vectors come from another model
        self._group: GroupCommit[Ingest, Written] = GroupCommit()

    def check_vectors(self, user_id: str, *, write: bool = False) -> None:
        """Raise :class:`~hmem.errors.EmbedderMismatch` if the user's vectors come from another
        embedder (stamping them on the first write); checked once per user and process."""
        if user_id in self._stamped:
            return
        if check_stamp(self.items, self.vectors, self.embedder, user_id, write=write, command=self._reindex_command):
            with self._locks_guard:
                self._stamped.add(user_id)

    def _lock(self, user_id: str) -> threading.Lock:
        # Serialises dedup decisions of one user within this process.
        with self._locks_guard:
            return self._locks.setdefault(user_id, threading.Lock())

    # -- write path ---------------------------------------------------------------

    def remember(  # noqa: PLR0917  # signature fixed by the public API
        self,
        user_id: str,
        text: str,
        kind: str = "fact",
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        source_message_id: str | None = None,
        created_at: datetime | str | float | None = None,
    ) -> RememberResult:
        """Store one fact, deduplicating at write time (see :class:`RememberResult`); with
        ``metadata["claim_key"]`` it supersedes the older versions of that claim (:mod:`hmem.longterm.supersede`).

        Bad input raises :class:`InvalidInput` naming the argument (``text``,
        ``created_at`` …) and changes nothing; ``created_at`` may be at most
        :data:`~hmem.types.MAX_CLOCK_SKEW` ahead of the store's clock."""
        check_id(user_id, "user_id")
        entry = check_entry({
            "text": text, "kind": kind, "importance": importance, "metadata": metadata,
            "session_id": session_id, "source_message_id": source_message_id, "created_at": created_at,
        }, now=self._clock())
        return self._remember(user_id, [entry])[0]

    def remember_many(self, user_id: str, entries: Iterable[Mapping[str, Any] | str]) -> list[RememberResult]:
        """Store many facts with one embedding batch and one item-store transaction. Every
        entry is validated before anything is written (a bad one raises
        :class:`InvalidInput` naming ``entries[i].field`` and changes nothing)."""
        check_id(user_id, "user_id")
        return self._remember(user_id, check_entries(entries, now=self._clock()))

    def _remember(self, user_id: str, checked: Sequence[Entry]) -> list[RememberResult]:
        return self._ingest(user_id, [], [], checked)[1]

    def archive_turns(
        self, user_id: str, session_id: str, messages: Iterable[Message | Mapping[str, Any]], *,
        previous: Message | Mapping[str, Any] | None = None,
    ) -> ArchiveResult:
        """Store conversation turns verbatim (``kind="turn"``), with speaker, session,
        timestamp and ``source_message_id``. Idempotent per message id; no dedup.

        Each turn keeps the turn before it (``previous`` for the first one: the
        session's message preceding this batch) in ``metadata["previous_turn"]``; the
        lexical index sees it (see :mod:`hmem.longterm.index_text`)."""
        return self.ingest(user_id, session_id, messages, previous=previous)[0]

    def ingest(
        self, user_id: str, session_id: str, messages: Iterable[Message | Mapping[str, Any]], *,
        previous: Message | Mapping[str, Any] | None = None, facts: Iterable[Mapping[str, Any] | str] = (),
        just_appended: bool = False,
    ) -> tuple[ArchiveResult, list[RememberResult]]:
        """:meth:`archive_turns` of ``messages`` and :meth:`remember_many` of ``facts`` in
        one write: one embedding call for both, one item-store write, one index update
        (what :meth:`Memory.add <hmem.memory.Memory.add>` does after its append).
        Everything is validated before anything is written. ``just_appended``: the
        messages were just appended to their session, whose ids are unique, so the
        look-up of turns already archived is skipped (one read less per add; a turn
        archived meanwhile by a compaction is rewritten with the same id and content)."""
        check_id(user_id, "user_id")
        check_id(session_id, "session_id")
        msgs = coerce_messages(messages)
        before = None if previous is None else coerce_messages([previous], "previous")[0]
        entries, skipped = prepare_turns(msgs, session_id, self.config.archive_roles, self.config.turn_importance)
        entries = with_previous_turns(entries, msgs, before, self.config.archive_roles)
        return self._ingest(user_id, entries, skipped, check_entries(facts, now=self._clock()),
                            check_archived=not just_appended)

    def _ingest(
        self, user_id: str, turns: list[Entry], skipped: list[str], facts: Sequence[Entry], *,
        check_archived: bool = True,
    ) -> tuple[ArchiveResult, list[RememberResult]]:
        # Embedded before the user's lock is taken: concurrent adds of one user then meet
        # in the embedder (one batch for all) instead of queueing for the lock one model
        # call each. Already archived turns and exact duplicates are embedded too: the
        # embedding cache answers for them, as it knows every stored text.
        texts = list(dict.fromkeys(entry_dense_text(e) for e in (*turns, *facts)))
        if texts:
            self.check_vectors(user_id, write=True)
        vectors = dict(zip(texts, self.embedder.embed(texts), strict=True)) if texts else {}
        # Under the user's lock, with the ingests queued behind it: one write for all (_group).
        write_all = partial(write_ingests, self.items, user_id=user_id, write=partial(self._write, user_id),
                            enforce_retention=partial(self.enforce_retention, user_id))
        return self._group.run(user_id, self._lock(user_id), Ingest(turns, skipped, facts, check_archived, vectors),
                               write_all)

    def _write(
        self, user_id: str, entries: Sequence[Entry], *, dedup_from: int, vectors: Mapping[str, list[float]]
    ) -> list[RememberResult]:
        """Write ``entries``; those from index ``dedup_from`` on are deduplicated (facts),
        the ones before are not (archived turns). ``vectors``: by dense text."""
        now = self._clock()
        results, pending, seen = skip_exact_duplicates(self.items, user_id, entries, dedup_from=dedup_from, now=now)
        pending_vecs = [vectors[entry_dense_text(entries[i])] for i in pending]
        threshold = self.config.near_duplicate_threshold
        near_ids = neighbours_of(self.vectors, user_id, pending_vecs, [i >= dedup_from for i in pending],
                                 searched=threshold is not None)
        final: dict[str, tuple[MemoryItem, list[float]]] = {}  # item id -> (item, vector), in write order
        batch_vecs: list[tuple[str, np.ndarray[Any, Any]]] = []
        for i, new_vec, near in zip(pending, pending_vecs, near_ids, strict=True):
            e = entries[i]
            vec = new_vec
            target, sim = None, None
            if i >= dedup_from and threshold is not None and CLAIM_KEY not in e.metadata:
                # A version of a claim is never merged into another: it supersedes it (below).
                target, sim = near_duplicate(
                    self.items, user_id, e.kind, vec, near, threshold=threshold, pending=final, batch_vecs=batch_vecs,
                    text=e.text)
            if target is None:
                item = new_item(user_id, e, new_item_id(user_id, e), now)
                results[i] = RememberResult("stored", item)
            else:
                replace_text = self.config.near_duplicate_policy == "replace"
                item = merge_near_duplicate(target, e, now, replace_text=replace_text)
                if not replace_text:
                    # The kept text keeps its vector (from the cache, or from this batch).
                    vec = final[target.id][1] if target.id in final else self.embedder.embed([target.text])[0]
                results[i] = RememberResult("updated", item, sim)
            final[item.id] = (item, vec)
            batch_vecs.append((item.id, np.asarray(vec, dtype=np.float32)))
        if final:
            linked = link_versions(self.items, self.embedder, user_id, final, now)
            results = [replace(r, item=linked[r.item.id]) if r and r.item.id in linked else r for r in results]
            persist(self.items, self.vectors, self.lexical, user_id, final)
            submit_turns(self.keys, user_id, [it for it, _ in final.values()])
        # A skipped in-batch duplicate reports the item its twin became.
        out: list[RememberResult] = []
        for i, r in enumerate(results):
            assert r is not None
            if r.status == "skipped" and not r.item.id:
                twin = results[seen[(entries[i].kind, dedup_key(entries[i].text))]]
                assert twin is not None
                out.append(replace(r, item=twin.item))
            else:
                out.append(r)
        return out

    # -- recall -------------------------------------------------------------------

    def recall(self, user_id: str, query: str, k: int = 10, options: RecallOptions | None = None) -> list[Hit]:
        """The user's ``k`` items most relevant to ``query``, best first.

        BM25 and dense rankings are fused (``options.fusion``, default ``config.fusion``:
        ``"weighted"`` min-max 0.5 : 0.5, or ``"rrf"``, k=60), then ranked by the stages
        (:mod:`hmem.longterm.stages`); ``options`` (:class:`~hmem.longterm.options.RecallOptions`)
        filters and adds recency, importance or diversity. Each :class:`~hmem.types.Hit`
        carries both retrievers' ranks and scores, ``fused_score`` and ``boosts``. Filters
        apply to both retrievers and every returned item is re-checked against them. With
        a ``planner``, its queries are searched too and each item keeps its best score
        (``fuse_planned``)."""
        check_id(user_id, "user_id")
        check_text(query, "query", allow_empty=False)
        check_k(k)
        opts = RecallOptions() if options is None else options
        if not isinstance(opts, RecallOptions):
            raise InvalidInput("options must be a hmem.RecallOptions", field="options")
        self.check_vectors(user_id)
        ports, now = RecallPorts(self.items, self.vectors, self.lexical, self.embedder, self.keys), self._clock()
        queries = (query, *self.planner.plan(query)) if self.planner is not None else (query,)
        found = [run_recall(ports, self.config, now, user_id, q, k, opts) for q in queries]
        return found[0] if len(found) == 1 else fuse_planned(found, k)

    # -- forget, retention, repair ------------------------------------------------

    def forget(
        self,
        user_id: str,
        ids: Sequence[str] | None = None,
        *,
        kinds: Iterable[str] | str | None = None,
        session_id: str | None = None,
        before: datetime | str | float | None = None,
        all: bool = False,
    ) -> int:
        """Delete the user's items by id and/or filter (ANDed), or ``all=True``;
        returns how many items were deleted."""
        check_id(user_id, "user_id")
        flt = check_forget_filter(ids, kinds, session_id, before, all)
        with self._lock(user_id):
            if flt is None:
                n = self.items.delete_user(user_id)
                self.vectors.delete_user(user_id)  # and its stamp
                self.lexical.delete_user(user_id)
                if self.keys is not None:
                    self.keys.delete_user(user_id)
                with self._locks_guard:
                    self._stamped.discard(user_id)
                return n
            doomed = sorted(self.items.find_ids(user_id, flt))
            return self._delete(user_id, doomed)

    def _delete(self, user_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        doomed, n = self.items.get(user_id, ids), self.items.delete(user_id, ids)  # item store first
        self.vectors.delete(user_id, ids)
        for doc_id in ids:
            self.lexical.remove(user_id, doc_id)
        if self.keys is not None:
            self.keys.forget(user_id, ids)
        revive_versions(self.items, self.vectors, self.lexical, self.embedder, user_id, deleted=doomed)
        return n

    def enforce_retention(self, user_id: str) -> list[MemoryItem]:
        """Apply ``max_items_per_user``; return (and log) the items removed."""
        cap = self.config.max_items_per_user
        if cap is None or self.items.count(user_id) <= cap:
            return []
        victims = retention_victims(
            self.items.find(user_id), cap, self._clock(), self.config.retention_half_life.total_seconds())
        self._delete(user_id, [it.id for it in victims])
        log.warning("retention cap %d for user %r removed %d item(s): %s", cap, user_id, len(victims),
                    [it.id for it in victims])
        return victims

    def reindex(self, user_id: str, *, batch_size: int = 256, progress: Callable[[int], object] | None = None) -> int:
        """Rebuild the user's vector and lexical entries from the item store with this
        store's embedder (repairs a crash between the stores; moves a user to a new
        embedder: vectors are rebuilt beside the live ones and swapped in at once, and an
        interrupted run resumes). ``progress(n)``: n more items done. Returns the count."""
        check_id(user_id, "user_id")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInput(f"batch_size must be a positive integer, got {batch_size!r}", field="batch_size")
        with self._lock(user_id):
            everything = rebuild_vectors(self.items, self.vectors, self.embedder, user_id, batch_size=batch_size,
                                         progress=progress)
            rebuild_lexical(self.lexical, user_id, everything, batch_size)
            with self._locks_guard:
                self._stamped.add(user_id)
            if self.keys is not None:  # rebuilt behind, from the same items
                self.keys.delete_user(user_id)
                submit_turns(self.keys, user_id, everything)
        return len(everything)

    def dense_search(self, user_id: str, query: str, k: int) -> list[ScoredId]:
        """The ``k`` nearest items of ``query`` (embedded as a question) by their vectors
        and sentence keys, unfused."""
        self.check_vectors(check_id(user_id, "user_id"))
        qvec = self.embedder.embed_query([query])[0]
        own = self.vectors.query(user_id, qvec, k)
        return own if self.keys is None else fold_keys(own, self.keys.search(user_id, qvec, k))[:k]

    def flush_keys(self, timeout: float | None = 60.0) -> bool:
        """Wait until every written vector (moved into the index behind the write) and every
        written turn's sentence keys (built after the write returns) are searchable."""
        flush_vectors = getattr(self.vectors, "flush", None)  # only a write-behind index has one
        if flush_vectors is not None:
            try:
                flush_vectors(timeout=timeout)
            except BackendUnavailable:
                return False  # logged by the index; the vectors stay in its outbox
        return True if self.keys is None else self.keys.flush(timeout)

    def keys_waiting(self, user_id: str) -> int:
        """How many of the user's turns wait for their sentence keys (0 without keys)."""
        return 0 if self.keys is None else self.keys.waiting(check_id(user_id, "user_id"))

    def count(self, user_id: str) -> int:
        return self.items.count(user_id)

    # -- export / import --------------------------------------------------------------

    def vectors_for(self, items: Sequence[MemoryItem]) -> list[list[float]]:
        """The dense vectors of ``items`` as indexed (cache hits for stored items)."""
        return self.embedder.embed([dense_text(it) for it in items]) if items else []

    def restore(
        self, user_id: str, items: Sequence[MemoryItem], vectors: Sequence[Sequence[float]] | None = None
    ) -> int:
        """Put exported ``items`` back verbatim (ids, timestamps) and index them, with
        their exported ``vectors`` when given — so recall ranks exactly as before the
        export, even if a fresh embedding would differ in the last float bits."""
        if not check_restore(user_id, items, vectors):
            return 0
        vecs = list(vectors) if vectors is not None else self.vectors_for(items)
        with self._lock(user_id):
            self.check_vectors(user_id, write=True)
            restore_items(self.items, self.vectors, self.lexical, user_id, restored=items, vecs=vecs)
            submit_turns(self.keys, user_id, items)
        return len(items)
