"""What runs after :meth:`Memory.add <hmem.memory.Memory.add>` has appended a batch:
archive the turns, extract profile updates and facts from the user turns, compact.

The turns and the extracted facts are written together
(:meth:`~hmem.longterm.store.LongTermStore.ingest`: one embedding call per add).
All of it runs on the caller's thread, or — with ``extraction="background"`` — as one
durable ``after_add`` job of the Memory's :class:`~hmem.jobs.JobEngine` (the batch and the
turn before it are in the job, so a crash after ``add()`` returned loses nothing: the
next process runs it): one user's jobs in submission order, other users' beside them.
``compaction="background"`` submits just the compaction as a ``compact`` job keyed by
session, so repeated requests for a session waiting in the queue coalesce into one run.

Extraction reports itself: ``AddResult.profile`` (:class:`AppliedUpdates`) and
``AddResult.fact_report`` (:class:`~hmem.longterm.facts.FactReport`) each carry the method
used (``llm``; ``rules-fallback`` when the LLM failed and the offline rules stood in,
with the reason), and the prompt/completion tokens extraction spent on the add.

Example::

    pipeline = AfterAppend(parts)
    for kind in pipeline.job_kinds():
        parts.engine.register(kind)
    profile, facts, fact_report, compaction = pipeline.run(user, session, batch, "foreground")  # after the append
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from hmem.jobs import JobKind
from hmem.longterm.facts import FactReport, TurnContext, fact_entries
from hmem.profile.extract import AppliedUpdates, ExtractionMethod, ProfileUpdate, apply_updates, extract_profile
from hmem.profile.statements import is_chinese, update_statements
from hmem.types import Job, JobSpec, Message, ProfileEntry, Provenance, Usage

if TYPE_CHECKING:
    from hmem._options import MemoryParts
    from hmem.longterm.types import RememberResult
    from hmem.protocols import Embedder, Tokenizer
    from hmem.session.compaction import CompactionResult

__all__ = ["AFTER_ADD", "COMPACT", "MAX_BACKLOG", "WORKER_LANES", "AfterAppend", "Outcome", "warm_rules", "warm_up_models"]

#: Threads running ``after_add`` (and ``compact``) jobs: one user's jobs keep their order,
#: other users' run beside them (so their embedding calls can share a model batch).
WORKER_LANES = 4
#: The job kinds of the pipeline.
AFTER_ADD, COMPACT = "after_add", "compact"

#: Background pipeline jobs an ``add()`` may leave queued; past this many it waits for
#: room, so a worker that cannot keep up slows its callers instead of queueing without end.
MAX_BACKLOG = 256

#: What the foreground pipeline did (all empty when it runs in the background).
Outcome: TypeAlias = (
    "tuple[AppliedUpdates | None, tuple[RememberResult, ...], FactReport | None, CompactionResult | None]"
)


class AfterAppend:
    """The pipeline after an append (see the module doc); holds no state of its own."""

    def __init__(self, parts: MemoryParts, *, max_backlog: int = MAX_BACKLOG) -> None:
        self._parts = parts
        self._engine = parts.engine
        self._max_backlog = max_backlog

    def job_kinds(self) -> tuple[JobKind, ...]:
        """The background jobs of the pipeline, for the engine to run."""
        return (JobKind(AFTER_ADD, self._run_jobs, lanes=WORKER_LANES),
                JobKind(COMPACT, self._compact_jobs, lanes=WORKER_LANES, coalesce=True))

    def _run_jobs(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            payload = job.payload
            batch = [Message._from_storage(m) for m in payload["messages"]]
            previous = None if payload.get("previous") is None else Message._from_storage(payload["previous"])
            self._steps(job.user_id, payload["session"], batch, previous)

    def _compact_jobs(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            self._parts.compactor.compact(job.user_id, job.payload["session"])

    def run(self, user: str, session: str, batch: list[Message], extraction: Literal["foreground", "background"]
            ) -> Outcome:
        """Run (or queue, when ``extraction`` is ``"background"``) the pipeline for
        ``batch``, which was just appended."""
        options = self._parts.options
        previous = None
        if options.archive_turns == "on_add" and batch:
            # Found now, right after the append: later appends must not shift it.
            previous = self._message_before(user, session, batch[0].id, len(batch))
        if extraction == "background":
            self._engine.wait_below(AFTER_ADD, self._max_backlog)  # workers that fall behind slow their producers
            self._engine.submit([JobSpec(AFTER_ADD, user, {
                "session": session, "messages": [m.to_openai(include_meta=True) for m in batch],
                "previous": None if previous is None else previous.to_openai(include_meta=True)})])
            return None, (), None, None
        return self._steps(user, session, batch, previous)

    def _steps(self, user: str, session: str, batch: list[Message], previous: Message | None) -> Outcome:
        user_turns = [m for m in batch if m.role == "user" and m.content]
        contexts: dict[str, TurnContext] = {}
        try:
            # The profile first: its statements become facts, named after the user it knows.
            profile_result = self._extract_profile(user, session, user_turns, contexts)
        except Exception:
            with contextlib.suppress(Exception):  # a profile failure must not cost the turns their archive
                self._long_term(user, session, batch, previous, user_turns, contexts=contexts)
            raise
        facts, fact_report = self._long_term(user, session, batch, previous, user_turns, contexts=contexts)
        return profile_result, facts, fact_report, self._compaction(user, session)

    def _long_term(
        self, user: str, session: str, batch: list[Message], previous: Message | None, user_turns: list[Message], *,
        contexts: dict[str, TurnContext],
    ) -> tuple[tuple[RememberResult, ...], FactReport | None]:
        """Extract the facts, then archive the turns and store the facts in one write."""
        parts = self._parts
        archived = batch if parts.options.archive_turns == "on_add" else []
        try:
            entries, fact_report = self._extract_facts(user, session, user_turns, contexts)
            if not (archived or entries):
                return (), fact_report
            # Turns and facts in one write: one embedding call and one index update per add.
            written = parts.longterm.ingest(user, session, archived, previous=previous, facts=entries,
                                            just_appended=True)
            return tuple(written[1]), fact_report
        except Exception:
            # An extractor's failure (or a fact the store refuses) must not cost the turns
            # their archive: try them alone; the first error is the one to report.
            if archived:
                with contextlib.suppress(Exception):
                    parts.longterm.archive_turns(user, session, archived, previous=previous)
            raise

    def _compaction(self, user: str, session: str) -> CompactionResult | None:
        parts = self._parts
        if parts.options.compaction == "foreground":
            return parts.compactor.compact(user, session)
        if parts.options.compaction == "background":
            # Coalesced per session: a compaction still waiting in the queue covers this append too.
            self._engine.submit([JobSpec(COMPACT, user, {"session": session}, key=session)])
        return None

    def _message_before(self, user: str, session: str, first_id: str, batch_size: int) -> Message | None:
        # The archived turn keeps the turn before it (see hmem.longterm.index_text); read after
        # the append so a concurrent writer's message, if it came first, is the one found.
        # A few extra messages cover appends that landed right after ours.
        loaded = self._parts.sessions.load(user, session, batch_size + 8).messages
        ids = [m.id for m in loaded]
        if first_id not in ids:
            return None
        roles = self._parts.longterm.config.archive_roles
        earlier = [m for m in loaded[: ids.index(first_id)] if m.role in roles and m.text.strip()]
        return earlier[-1] if earlier else None

    def _extract_profile(self, user: str, session: str, turns: list[Message],
                         contexts: dict[str, TurnContext]) -> AppliedUpdates | None:
        """Extract and apply each turn's profile updates; ``contexts`` gets, per turn, who
        said it and the updates as statements (facts, when facts are extracted)."""
        extractor, profile = self._parts.profile_extractor, self._parts.profile
        if not (self._parts.options.extract_profile and extractor and turns):
            return None
        statements = self._parts.options.extract_facts and self._parts.fact_extractor is not None
        changed: list[str] = []
        confirmed: list[str] = []
        deleted: list[str] = []
        methods: list[ExtractionMethod] = []
        reasons: list[str] = []
        refused: list[str] = []
        usage = Usage()
        for turn in turns:
            current = profile.all(user)
            found = extract_profile(extractor, turn.text, current=current)
            methods.append(found.method)
            usage = usage + found.usage
            refused += found.refused
            if found.reason and found.reason not in reasons:
                reasons.append(found.reason)
            if found.updates:
                applied = apply_updates(profile, user, found.updates, Provenance("message", session, turn.id),
                                        said_at=turn.created_at)
                changed += applied.changed
                confirmed += applied.confirmed
                deleted += applied.deleted
            if statements:
                contexts[turn.id] = turn_context(turn, current, found.updates)
        # One fallback turn marks the add: the caller must learn the LLM was not used throughout.
        method = "rules-fallback" if "rules-fallback" in methods else methods[0]
        return AppliedUpdates(tuple(changed), tuple(confirmed), tuple(deleted), method, usage, "; ".join(reasons),
                              tuple(refused))

    def _extract_facts(self, user: str, session: str, turns: list[Message],
                       contexts: dict[str, TurnContext]) -> tuple[list[dict[str, Any]], FactReport | None]:
        """The facts of ``turns`` as ``remember_many`` entries (not stored yet): the profile
        statements in ``contexts`` and the extractor's facts, the speaker named."""
        extractor = self._parts.fact_extractor
        if not (self._parts.options.extract_facts and extractor and turns):
            return [], None
        extracted = extractor.extract(turns)
        if any(turn.id not in contexts for turn in turns):  # no profile extraction: name the user from the store
            name = self._parts.profile.get(user, "name")
            for turn in turns:
                contexts.setdefault(turn.id, turn_context(turn, [name] if name else [], ()))
        archived = self._parts.options.archive_turns == "on_add"
        entries = fact_entries(extracted, turns, contexts, session, turns_archived=archived)
        return entries, FactReport(extracted.method, extracted.usage, extracted.reason)


def turn_context(turn: Message, profile: Sequence[ProfileEntry], updates: Sequence[ProfileUpdate]) -> TurnContext:
    """Who said ``turn`` (its speaker's name, else the profile's name after ``updates``)
    and ``updates`` as statements about them, dated the turn's day."""
    names = [u.value for u in updates if u.key == "name" and u.operation == "set" and isinstance(u.value, str)]
    names += [e.value for e in profile if e.key == "name" and isinstance(e.value, str)]
    subject = turn.name or (names[0] if names else None)
    speaker_key = turn.name.casefold() if turn.name else "user"
    zh = is_chinese(turn.text)
    statements = tuple(st for u in updates
                       for st in update_statements(u, subject, turn.created_at.date(), zh=zh, speaker_key=speaker_key))
    return TurnContext(subject, speaker_key, statements)


#: What :func:`warm_rules` runs the rules on: English and Chinese, a job, a place, a date.
_WARM_TEXTS = ("I'm a software engineer at Acme in Berlin, and we moved here last Saturday.",
               "我是上海的一名老师，上周六搬家了。")


def warm_up_models(embedder: Embedder, tokenizer: Tokenizer) -> None:
    """Load and run the embedding model and the tokenizer once, run the offline rules
    once (:func:`warm_rules`), then freeze what is loaded (:func:`gc.freeze`), so the
    model's many objects stay out of the collector's full passes."""
    warm = getattr(embedder, "warm_up", None)
    if callable(warm):
        warm()
    else:  # a hand-built store's embedder: one query is as good
        embedder.embed_query(["warm up"])
    tokenizer.count("warm up")
    warm_rules()
    gc.collect()
    gc.freeze()


def warm_rules() -> None:
    """Run the offline rules once (profile and fact extraction, dates, the BM25
    tokenizer): their patterns and dictionaries load on first use, which the first
    add or recall of a process would otherwise pay (seconds on a busy machine)."""
    from datetime import date

    from hmem.longterm.dates import resolve_dates
    from hmem.longterm.facts import OfflineFactExtractor
    from hmem.longterm.text import tokenize
    from hmem.profile._values import warm_tagger
    from hmem.profile.extract import OfflineProfileExtractor

    OfflineFactExtractor().extract([Message(role="user", content=t, id=f"warm-{i}") for i, t in enumerate(_WARM_TEXTS)])
    warm_tagger()  # the warm texts' places are known ones, which never reach the tagger
    for text in _WARM_TEXTS:
        OfflineProfileExtractor().extract(text)
        resolve_dates(text, date(2024, 5, 8))
        tokenize(text)
