"""The values a :class:`~hmem.memory.Memory` is made of and gives back.

:class:`MemoryParts` is what the composition root (:func:`hmem.build.build_parts`)
produces and ``Memory(parts)`` consumes: the collaborators, the options and what to
close. It lives below both, so :mod:`hmem.build` never imports :mod:`hmem.memory`.

Example::

    >>> MemoryOptions(recall_k=5).archive_turns
    'on_add'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from hmem.assembly.assemble import MIN_EXCERPT_TOKENS, TierCaps, check_relevance_cutoff
from hmem.assembly.render import DEFAULT_TEMPLATE, ContextTemplate
from hmem.assembly.stopping import DEFAULT_STOP, StopRule
from hmem.errors import InvalidInput
from hmem.jobs import JobEngine
from hmem.types import DEFAULT_MEMORY_BUDGET, RELEVANCE_CUTOFF

if TYPE_CHECKING:  # annotations only: importing hmem stays light (no numpy, no store code)
    from datetime import datetime

    from hmem.longterm.facts import ExtractionResult, FactReport
    from hmem.longterm.store import LongTermStore
    from hmem.longterm.types import RememberResult
    from hmem.profile.extract import AppliedUpdates, ProfileExtractor
    from hmem.protocols import ProfileStore, SessionStore, SummaryStore
    from hmem.session.compaction import CompactionResult, Compactor
    from hmem.types import Message

__all__ = ["SYSTEM_PROMPT_ID", "AddResult", "FactExtractor", "MemoryOptions", "MemoryParts", "UserStores", "When",
           "messages_to_append", "put_system_prompt"]

#: A point in time as the long-term store accepts it (datetime, ISO text, epoch seconds).
When: TypeAlias = "datetime | str | float"

#: Id of the system message that :meth:`Memory.set_system_prompt` keeps at the
#: head of a session's buffer (system messages are never evicted, so it stays).
SYSTEM_PROMPT_ID = "hmem.session_system_prompt"


def messages_to_append(messages: Iterable[object], field_name: str, *, reserved_field: str) -> list[Message]:
    """``messages`` checked as an append checks them (times no later than now), none with
    the reserved :data:`SYSTEM_PROMPT_ID` (refused naming ``reserved_field``)."""
    from hmem.types import coerce_messages, utcnow

    batch = coerce_messages(messages, field_name, now=utcnow())  # a created_at far ahead would win recency forever
    if any(m.id == SYSTEM_PROMPT_ID for m in batch):
        raise InvalidInput(f"message id {SYSTEM_PROMPT_ID!r} is reserved; use set_system_prompt()", field=reserved_field)
    return batch


def put_system_prompt(sessions: SessionStore, user: str, session: str, text: str | None) -> None:
    """Make ``text`` the session's stored system prompt (None: remove it), kept at the
    head of the buffer; retried while concurrent appends win the version check."""
    from hmem.errors import ConflictError
    from hmem.types import Message

    for _ in range(20):
        state = sessions.load(user, session)
        rest = [m for m in state.messages if m.id != SYSTEM_PROMPT_ID]
        head = [] if text is None else [Message(role="system", content=text, id=SYSTEM_PROMPT_ID)]
        try:
            sessions.replace(user, session, head + rest, state.version)
            return
        except ConflictError:
            continue  # an append came first: reload and retry
    raise ConflictError("set_system_prompt kept losing to concurrent writes; retry later")


class FactExtractor(Protocol):
    """What :class:`Memory` needs of a fact extractor (offline or LLM)."""

    def extract(self, messages: Iterable[Message | Mapping[str, Any]]) -> ExtractionResult: ...


@dataclass(frozen=True)
class MemoryOptions:
    """Behaviour of :class:`Memory` that is not a collaborator.

    ``archive_turns``: ``"on_add"`` (default) indexes every turn in the long-term
    store as it is added, so any session can recall it at once — including the last
    turns of an earlier session, which may never leave that session's buffer;
    recalled turns already shown in the current history are dropped by the assembler.
    ``"on_evict"`` archives a turn only when compaction removes it from the buffer
    (less indexing work; a past session's newest turns are then recallable only
    through the facts extracted from them).

    ``extraction``: ``"background"`` runs everything after the append (archiving,
    profile and fact extraction — an LLM call when one is configured — and
    compaction) as durable jobs of the Memory's :class:`~hmem.jobs.JobEngine` — one user's
    work in order, other users' beside it — so
    ``add()`` returns once the messages are durably stored; :meth:`Memory.flush` waits
    for it. ``AddResult.profile``/``facts``/``compaction`` are then empty.
    ``compaction="background"`` queues only the compaction there (one queued run per
    session, however many appends asked for it).

    >>> MemoryOptions(extraction="later")
    Traceback (most recent call last):
    hmem.errors.InvalidInput: extraction must be foreground or background
    """

    model: str = "gpt-4o-mini"
    reply_reserve: int = 2000
    recall_k: int | None = None
    relevance_cutoff: float | None = RELEVANCE_CUTOFF
    #: Without a ``budget``, what summary, profile and recalled items may take together
    #: (None: the model's window), and the calibrated stop of the recalled tier (None: off).
    memory_budget: int | None = DEFAULT_MEMORY_BUDGET
    stop: StopRule | None = DEFAULT_STOP
    #: Recalled items longer than this many tokens are rendered as their passage about
    #: the question (None: always whole). Off by default: on held-out assistant chats the
    #: passages lost more answers than their room bought (docs/assembly.md, "Excerpts").
    excerpt_tokens: int | None = None
    caps: TierCaps | None = field(default_factory=TierCaps)
    template: ContextTemplate = DEFAULT_TEMPLATE
    compaction: Literal["foreground", "background", "off"] = "foreground"
    extract_profile: bool = True
    extract_facts: bool = True
    archive_turns: Literal["on_evict", "on_add"] = "on_add"
    extraction: Literal["foreground", "background"] = "foreground"

    def extraction_for(self, asked: object) -> Literal["foreground", "background"]:
        """Where one ``add()`` runs its pipeline: ``asked`` (checked), else :attr:`extraction`.

        >>> MemoryOptions().extraction_for(None), MemoryOptions().extraction_for("background")
        ('foreground', 'background')
        """
        if asked is None:
            return self.extraction
        if asked not in ("foreground", "background"):
            raise InvalidInput(f"extraction must be 'foreground', 'background' or None (this Memory's setting, "
                               f"{self.extraction!r}), got {asked!r}", field="extraction")
        return "background" if asked == "background" else "foreground"

    def __post_init__(self) -> None:
        if self.reply_reserve < 0 or (self.recall_k is not None and self.recall_k < 0):
            raise InvalidInput("reply_reserve and recall_k must not be negative", field="options")
        check_relevance_cutoff(self.relevance_cutoff)
        for name, least in (("memory_budget", 0), ("excerpt_tokens", MIN_EXCERPT_TOKENS)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
                raise InvalidInput(f"{name} must be an integer of at least {least} or None, got {value!r}", field=name)
        if self.stop is not None and not isinstance(self.stop, StopRule):
            raise InvalidInput("stop must be a StopRule or None", field="stop")
        if self.compaction not in ("foreground", "background", "off"):
            raise InvalidInput("compaction must be foreground, background or off", field="compaction")
        if self.extraction not in ("foreground", "background"):
            raise InvalidInput("extraction must be foreground or background", field="extraction")
        if self.archive_turns not in ("on_evict", "on_add"):
            raise InvalidInput("archive_turns must be on_evict or on_add", field="archive_turns")


@dataclass(frozen=True)
class UserStores:
    """Where a user's records live: the three tier ports and the long-term store.

    Whole-user operations (:mod:`hmem.transfer`: export, import, erase; readiness
    probes) take this, not a :class:`~hmem.memory.Memory`.
    """

    sessions: SessionStore
    summaries: SummaryStore
    profile: ProfileStore
    longterm: LongTermStore


@dataclass(frozen=True)
class MemoryParts:
    """The collaborators of one :class:`~hmem.memory.Memory`: ports, the long-term
    store, the compactor, the extractors (None = that extraction is off), options and
    the closers ``Memory.close()`` runs (newest last).

    :func:`hmem.build.build_parts` composes them from settings; swap one with
    :func:`dataclasses.replace` (a test's failing store, a shared vector index)::

        parts = build_parts(settings)
        mem = Memory(dataclasses.replace(parts, profile=MyProfileStore()))
    """

    sessions: SessionStore
    summaries: SummaryStore
    profile: ProfileStore
    longterm: LongTermStore
    compactor: Compactor
    profile_extractor: ProfileExtractor | None = None
    fact_extractor: FactExtractor | None = None
    options: MemoryOptions = field(default_factory=MemoryOptions)
    on_close: Sequence[Callable[[], None]] = ()
    #: Runs the work behind the writes (:mod:`hmem.jobs`); its queue is durable when
    #: :func:`hmem.build.build_parts` makes it (hand-made parts: in memory).
    engine: JobEngine = field(default_factory=lambda: JobEngine(_memory_queue()))

    @property
    def stores(self) -> UserStores:
        return UserStores(self.sessions, self.summaries, self.profile, self.longterm)


@dataclass(frozen=True)
class AddResult:
    """What :meth:`Memory.add` did."""

    version: int
    message_ids: tuple[str, ...]
    profile: AppliedUpdates | None = None
    facts: tuple[RememberResult, ...] = ()
    compaction: CompactionResult | None = None
    #: How the facts were extracted (method, tokens, why the LLM was not used), when they were.
    fact_report: FactReport | None = None


def _memory_queue() -> Any:
    from hmem.backends.memory.jobs import MemoryJobQueue

    return MemoryJobQueue()
