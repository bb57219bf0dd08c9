"""What runs after :meth:`Memory.add <hmem.memory.Memory.add>` has appended a batch:
archive the turns, extract profile updates and facts from the user turns, compact.

All of it runs on the caller's thread, or — with ``extraction="background"`` — as one
job on the Memory's single :class:`~hmem._worker.SerialWorker`, in submission order.
``compaction="background"`` submits just the compaction to that same worker, keyed by
session so repeated requests for a session waiting in the queue coalesce into one run.

Extraction reports itself: ``AddResult.profile`` (:class:`AppliedUpdates`) and
``AddResult.fact_report`` (:class:`~hmem.longterm.facts.FactReport`) each carry the method
used (``llm``; ``rules-fallback`` when the LLM failed and the offline rules stood in,
with the reason), and the prompt/completion tokens extraction spent on the add.

Example::

    pipeline = AfterAppend(parts, worker)
    profile, facts, compaction = pipeline.run(user, session, batch)   # after the append
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, TypeAlias

from hmem.longterm.facts import FactReport
from hmem.profile.extract import AppliedUpdates, ExtractionMethod, apply_updates, extract_profile
from hmem.types import Message, Provenance, Usage

if TYPE_CHECKING:
    from hmem._options import MemoryParts
    from hmem._worker import SerialWorker
    from hmem.longterm.types import RememberResult
    from hmem.session.compaction import CompactionResult

__all__ = ["AfterAppend", "Outcome"]

#: What the foreground pipeline did (all empty when it runs in the background).
Outcome: TypeAlias = (
    "tuple[AppliedUpdates | None, tuple[RememberResult, ...], FactReport | None, CompactionResult | None]"
)


class AfterAppend:
    """The pipeline after an append (see the module doc); holds no state of its own."""

    def __init__(self, parts: MemoryParts, worker: SerialWorker) -> None:
        self._parts = parts
        self._worker = worker

    def run(self, user: str, session: str, batch: list[Message]) -> Outcome:
        """Run (or queue) the pipeline for ``batch``, which was just appended."""
        options = self._parts.options
        previous = None
        if options.archive_turns == "on_add" and batch:
            # Found now, right after the append: later appends must not shift it.
            previous = self._message_before(user, session, batch[0].id, len(batch))
        if options.extraction == "background":
            self._worker.submit(partial(self._steps, user, session, batch, previous))
            return None, (), None, None
        return self._steps(user, session, batch, previous)

    def _steps(self, user: str, session: str, batch: list[Message], previous: Message | None) -> Outcome:
        parts = self._parts
        if parts.options.archive_turns == "on_add" and batch:
            parts.longterm.archive_turns(user, session, batch, previous=previous)
        user_turns = [m for m in batch if m.role == "user" and m.content]
        profile_result = self._extract_profile(user, session, user_turns)
        facts, fact_report = self._extract_facts(user, session, user_turns)
        compaction = None
        if parts.options.compaction == "foreground":
            compaction = parts.compactor.compact(user, session)
        elif parts.options.compaction == "background":
            # Coalesced per session: a compaction still waiting in the queue covers this append too.
            self._worker.submit(partial(parts.compactor.compact, user, session), key=("compact", user, session))
        return profile_result, facts, fact_report, compaction

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

    def _extract_profile(self, user: str, session: str, turns: list[Message]) -> AppliedUpdates | None:
        extractor, profile = self._parts.profile_extractor, self._parts.profile
        if not (self._parts.options.extract_profile and extractor and turns):
            return None
        changed: list[str] = []
        confirmed: list[str] = []
        deleted: list[str] = []
        methods: list[ExtractionMethod] = []
        reasons: list[str] = []
        refused: list[str] = []
        usage = Usage()
        for turn in turns:
            found = extract_profile(extractor, turn.text, current=profile.all(user))
            methods.append(found.method)
            usage = usage + found.usage
            refused += found.refused
            if found.reason and found.reason not in reasons:
                reasons.append(found.reason)
            if found.updates:
                applied = apply_updates(profile, user, found.updates, Provenance("message", session, turn.id))
                changed += applied.changed
                confirmed += applied.confirmed
                deleted += applied.deleted
        # One fallback turn marks the add: the caller must learn the LLM was not used throughout.
        method = "rules-fallback" if "rules-fallback" in methods else methods[0]
        return AppliedUpdates(tuple(changed), tuple(confirmed), tuple(deleted), method, usage, "; ".join(reasons),
                              tuple(refused))

    def _extract_facts(
        self, user: str, session: str, turns: list[Message]
    ) -> tuple[tuple[RememberResult, ...], FactReport | None]:
        extractor = self._parts.fact_extractor
        if not (self._parts.options.extract_facts and extractor and turns):
            return (), None
        extracted = extractor.extract(turns)
        created = {m.id: m.created_at for m in turns}
        entries = [
            {**fact.to_entry(session), "created_at": created.get(fact.source_message_id or "")}
            for fact in extracted.facts
        ]
        stored = tuple(self._parts.longterm.remember_many(user, entries)) if entries else ()
        return stored, FactReport(extracted.method, extracted.usage, extracted.reason)
