"""The :class:`Memory` facade: hmem's public API.

It orchestrates the ports (session, summary and profile stores, the long-term
store) and the pure core (window policies, assembler). Every collaborator is
passed in; :mod:`hmem.build` composes them from settings.

Example::

    from hmem import Memory
    mem = Memory.open("./hmem-data")                 # embedded: SQLite + Chroma + local model
    mem.add(user_id="u1", session_id="s1",
            messages=[{"role": "user", "content": "I'm allergic to peanuts."}])
    ctx = mem.context(user_id="u1", session_id="s1", query="what should I cook?",
                      model="gpt-4o-mini", system_prompt="You are a helpful assistant.")
    ctx.messages, ctx.report, ctx.tokens
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hmem._worker import SerialWorker
from hmem.assembly.assemble import TierCaps, assemble, budget_for
from hmem.assembly.render import DEFAULT_TEMPLATE, ContextTemplate
from hmem.errors import ConflictError, InvalidInput
from hmem.longterm.facts import ExtractionResult
from hmem.profile.extract import AppliedUpdates, ProfileExtractor, apply_updates
from hmem.protocols import LLM, Embedder, ProfileStore, SessionStore, SummaryStore, Tokenizer
from hmem.session.compaction import CompactionResult, Compactor, split_covered
from hmem.tokens import get_tokenizer
from hmem.tokens.models import resolve_model
from hmem.types import (
    AssembledContext,
    Hit,
    MemoryItem,
    Message,
    Provenance,
    check_id,
    check_text,
    coerce_messages,
)

if TYPE_CHECKING:
    from hmem.config import Settings
    from hmem.longterm.store import LongTermStore, RememberResult

__all__ = ["SYSTEM_PROMPT_ID", "AddResult", "FactExtractor", "Memory", "MemoryOptions"]

log = logging.getLogger("hmem.memory")

#: Id of the system message that :meth:`Memory.set_system_prompt` keeps at the
#: head of a session's buffer (system messages are never evicted, so it stays).
SYSTEM_PROMPT_ID = "hmem.session_system_prompt"


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
    compaction) in order on a :class:`~hmem._worker.SerialWorker`, so ``add()``
    returns once the messages are durably stored; :meth:`Memory.flush` waits for it.
    ``AddResult.profile``/``facts``/``compaction`` are then empty.
    """

    model: str = "gpt-4o-mini"
    reply_reserve: int = 2000
    recall_k: int = 10
    caps: TierCaps | None = field(default_factory=TierCaps)
    template: ContextTemplate = DEFAULT_TEMPLATE
    compaction: Literal["foreground", "background", "off"] = "foreground"
    extract_profile: bool = True
    extract_facts: bool = True
    archive_turns: Literal["on_evict", "on_add"] = "on_add"
    extraction: Literal["foreground", "background"] = "foreground"

    def __post_init__(self) -> None:
        if self.reply_reserve < 0 or self.recall_k < 0:
            raise InvalidInput("reply_reserve and recall_k must not be negative", field="options")
        if self.compaction not in ("foreground", "background", "off"):
            raise InvalidInput("compaction must be foreground, background or off", field="compaction")
        if self.extraction not in ("foreground", "background"):
            raise InvalidInput("extraction must be foreground or background", field="extraction")
        if self.archive_turns not in ("on_evict", "on_add"):
            raise InvalidInput("archive_turns must be on_evict or on_add", field="archive_turns")


@dataclass(frozen=True)
class AddResult:
    """What :meth:`Memory.add` did."""

    version: int
    message_ids: tuple[str, ...]
    profile: AppliedUpdates | None = None
    facts: tuple[RememberResult, ...] = ()
    compaction: CompactionResult | None = None


class Memory:
    """Hierarchical memory for one deployment (many users, many sessions).

    Build one with :meth:`open` (embedded default) or :meth:`from_settings`; the
    constructor takes ready collaborators (tests and custom deployments).
    """

    def __init__(
        self,
        *,
        sessions: SessionStore,
        summaries: SummaryStore,
        profile: ProfileStore,
        longterm: LongTermStore,
        compactor: Compactor,
        profile_extractor: ProfileExtractor | None = None,
        fact_extractor: FactExtractor | None = None,
        options: MemoryOptions | None = None,
        tokenizer_for: Callable[[str], Tokenizer] = get_tokenizer,
        worker: SerialWorker | None = None,
        on_close: Sequence[Callable[[], None]] = (),
    ) -> None:
        self.sessions = sessions
        self.summaries = summaries
        self.profile = profile
        self.longterm = longterm
        self.compactor = compactor
        self.profile_extractor = profile_extractor
        self.fact_extractor = fact_extractor
        self.options = options or MemoryOptions()
        if self.options.extraction == "background" and worker is None:
            raise InvalidInput("extraction='background' needs a worker (hmem._worker.SerialWorker)",
                               field="worker")
        self.worker = worker if self.options.extraction == "background" else None
        self._tokenizer_for = tokenizer_for
        self._on_close = list(on_close)
        self._closed = False

    # -- construction -------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = "./hmem-data",
        *,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
        **settings: Any,
    ) -> Memory:
        """The embedded default in folder ``path``: SQLite (sessions, summaries,
        profile, items, BM25), Chroma ``PersistentClient`` (vectors) and the
        packaged MiniLM model; no server, no network. Keyword arguments override
        settings (see :class:`hmem.config.Settings`), e.g. ``compaction="background"``;
        ``embedder``/``llm`` share an already loaded model or client.

        The environment is not read here (use :meth:`from_settings` for that), so
        ``Memory.open`` behaves the same on every machine."""
        from hmem.build import build_memory
        from hmem.config import Settings

        # The defaults already are the embedded backends; pinning sessions/summaries/profile
        # here would make a ``redis_url=`` override apply to the items only.
        chosen = Settings.from_env({}, **{**settings, "data_dir": str(Path(path))})
        return build_memory(chosen, embedder=embedder, llm=llm)

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, *, embedder: Embedder | None = None, llm: LLM | None = None
    ) -> Memory:
        """Build from ``HMEM_*`` environment variables / ``HMEM_CONFIG`` file (or the
        given :class:`~hmem.config.Settings`): Redis, Chroma server, an LLM …
        ``embedder``/``llm`` share an already loaded model or client."""
        from hmem.build import build_memory
        from hmem.config import Settings

        return build_memory(settings or Settings.from_env(), embedder=embedder, llm=llm)

    # -- the pipeline -----------------------------------------------------------------

    def add(self, user_id: str, session_id: str, messages: Iterable[Message | Mapping[str, Any]]) -> AddResult:
        """Append messages to a session, then run the pipeline: extract profile facts
        and long-term facts from user turns, compact the buffer (summary + archive).

        The append is atomic and acknowledged before anything else runs; a failure in
        a later step is logged and re-raised, and loses no message.
        """
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        batch = coerce_messages(messages)
        if any(m.id == SYSTEM_PROMPT_ID for m in batch):
            raise InvalidInput(f"message id {SYSTEM_PROMPT_ID!r} is reserved; use set_system_prompt()", field="id")
        version = self.sessions.append(user, session, batch)
        try:
            previous = None
            if self.options.archive_turns == "on_add" and batch:
                # Found now, right after the append: later appends must not shift it.
                previous = self._message_before(user, session, batch[0].id, len(batch))
            profile_result: AppliedUpdates | None = None
            facts: tuple[RememberResult, ...] = ()
            compaction = None
            if self.options.extraction == "background" and self.worker is not None:
                # Archive, extraction and then compaction run in order on the worker;
                # add() returns once the messages are durably appended.
                self.worker.submit(lambda: self._after_append(user, session, batch, previous))
            else:
                profile_result, facts, compaction = self._after_append(user, session, batch, previous)
        except Exception as exc:
            log.warning("add(%r, %r): the messages are stored (version %d) but a later step failed: %s: %s",
                        user, session, version, type(exc).__name__, exc)
            raise
        return AddResult(version, tuple(m.id for m in batch), profile_result, facts, compaction)

    def _after_append(
        self, user: str, session: str, batch: list[Message], previous: Message | None
    ) -> tuple[AppliedUpdates | None, tuple[RememberResult, ...], CompactionResult | None]:
        """The pipeline after the append: archive turns, extract profile and facts,
        compact (on the calling thread — the worker's, with background extraction —
        or handed to the compactor's own worker)."""
        if self.options.archive_turns == "on_add" and batch:
            self.longterm.archive_turns(user, session, batch, previous=previous)
        user_turns = [m for m in batch if m.role == "user" and m.content]
        profile_result = self._extract_profile(user, session, user_turns)
        facts = self._extract_facts(user, session, user_turns)
        compaction = None
        if self.options.compaction == "foreground":
            compaction = self.compactor.compact(user, session)
        elif self.options.compaction == "background":
            self.compactor.submit(user, session)
        return profile_result, facts, compaction

    def _message_before(self, user: str, session: str, first_id: str, batch_size: int) -> Message | None:
        # The archived turn keeps the turn before it (see hmem.longterm.index_text); read after
        # the append so a concurrent writer's message, if it came first, is the one found.
        # A few extra messages cover appends that landed right after ours.
        loaded = self.sessions.load(user, session, batch_size + 8).messages
        ids = [m.id for m in loaded]
        if first_id not in ids:
            return None
        roles = self.longterm.config.archive_roles
        earlier = [m for m in loaded[: ids.index(first_id)] if m.role in roles and m.text.strip()]
        return earlier[-1] if earlier else None

    def _extract_profile(self, user: str, session: str, turns: list[Message]) -> AppliedUpdates | None:
        if not (self.options.extract_profile and self.profile_extractor and turns):
            return None
        changed: list[str] = []
        confirmed: list[str] = []
        deleted: list[str] = []
        for turn in turns:
            updates = self.profile_extractor.extract(turn.text, current=self.profile.all(user))
            if updates:
                applied = apply_updates(self.profile, user, updates, Provenance("message", session, turn.id))
                changed += applied.changed
                confirmed += applied.confirmed
                deleted += applied.deleted
        return AppliedUpdates(tuple(changed), tuple(confirmed), tuple(deleted))

    def _extract_facts(self, user: str, session: str, turns: list[Message]) -> tuple[RememberResult, ...]:
        if not (self.options.extract_facts and self.fact_extractor and turns):
            return ()
        extracted = self.fact_extractor.extract(turns)
        created = {m.id: m.created_at for m in turns}
        entries = [
            {**fact.to_entry(session), "created_at": created.get(fact.source_message_id or "")}
            for fact in extracted.facts
        ]
        return tuple(self.longterm.remember_many(user, entries)) if entries else ()

    def context(
        self,
        user_id: str,
        session_id: str,
        query: str | None = None,
        *,
        model: str | None = None,
        budget: int | None = None,
        system_prompt: str | None = None,
        k: int | None = None,
        caps: TierCaps | Literal["default"] | None = "default",
        template: ContextTemplate | None = None,
        truncate_current_turn: bool = False,
        recall_filters: Mapping[str, Any] | None = None,
    ) -> AssembledContext:
        """The prompt for the next model call, within ``budget`` tokens (default: the
        model's context window minus ``options.reply_reserve``).

        Recalls with ``query`` (default: the session's last user message), then
        assembles system prompt, current turn, history, summary, profile and recalled
        items in that priority order. ``system_prompt`` defaults to the one stored by
        :meth:`set_system_prompt`. Raises :class:`~hmem.errors.BudgetError` when the
        system prompt and current turn alone do not fit.
        """
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        model_name = model or self.options.model
        info = resolve_model(model_name)
        limit = budget_for(info.context_window, self.options.reply_reserve, budget)
        tokenizer = self._tokenizer_for(model_name)
        state = self.sessions.load(user, session)
        buffer = list(state.messages)
        # An expired or deleted session takes its summary with it (not every summary
        # store expires entries by itself).
        summary = self.summaries.get(user, session) if state.version else None
        _, buffer = split_covered(buffer, summary)  # between summary write and trim, skip duplicates
        stored_prompt = next((m.content for m in buffer if m.id == SYSTEM_PROMPT_ID), None)
        buffer = [m for m in buffer if m.id != SYSTEM_PROMPT_ID]
        prompt = system_prompt if system_prompt is not None else stored_prompt
        if query is None:
            query = next((m.content for m in reversed(buffer) if m.role == "user" and m.content), None)
        elif not isinstance(query, str):
            raise InvalidInput("query must be a string or None", field="query")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
            raise InvalidInput(f"k must be an integer >= 0 (0 = recall nothing) or None, got {k!r}", field="k")
        filters = dict(recall_filters or {})
        _check_keywords(self.longterm.recall, filters, "recall_filters")
        want = self.options.recall_k if k is None else k
        hits: list[Hit] = []
        if query and query.strip() and want > 0:
            shown = {m.id for m in buffer}
            # Over-fetch: hits of turns already in the buffer and second hits of one source
            # message (its archived turn and a fact extracted from it) would waste slots.
            candidates = self.longterm.recall(user, query, 2 * want + len(shown), **filters)
            hits = distinct_sources(candidates, exclude=shown)[:want]
        return assemble(
            buffer,
            tokenizer=tokenizer,
            budget=limit,
            system_prompt=prompt,
            summary=summary.text if summary and summary.text else None,
            profile=self.profile.all(user),
            recalled=hits,
            caps=self.options.caps if caps == "default" else caps,
            template=template or self.options.template,
            truncate_current_turn=truncate_current_turn,
        )

    # -- long-term items --------------------------------------------------------------

    def remember(
        self,
        user_id: str,
        text: str,
        kind: str = "fact",
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> RememberResult:
        """Store a fact in the user's long-term memory (deduplicated at write time)."""
        _check_keywords(self.longterm.remember, extra, "remember")
        return self.longterm.remember(user_id, text, kind, importance, metadata, **extra)

    def recall(self, user_id: str, query: str, k: int = 10, **filters: Any) -> list[Hit]:
        """The user's ``k`` long-term items most relevant to ``query`` (hybrid BM25 +
        embeddings), each explaining its ranks and scores."""
        _check_keywords(self.longterm.recall, filters, "recall")
        return self.longterm.recall(user_id, query, k, **filters)

    def forget(self, user_id: str, ids: Sequence[str] | None = None, **filters: Any) -> int:
        """Delete long-term items by id and/or filter (``kinds``, ``session_id``,
        ``before``) or ``all=True``; returns how many were deleted."""
        _check_keywords(self.longterm.forget, filters, "forget")
        return self.longterm.forget(user_id, ids, **filters)

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Erase everything hmem holds about a user: sessions, summaries, profile and
        long-term items. Returns counts per tier."""
        user = check_id(user_id, "user_id")
        self.flush()
        sessions = self.sessions.list_sessions(user)
        for info in sessions:
            self.sessions.delete(user, info.session_id)
            self.summaries.delete(user, info.session_id)
        profile_keys = self.profile.delete_user(user)
        items = self.longterm.forget(user, all=True)
        return {"sessions": len(sessions), "profile_keys": profile_keys, "items": items}

    # -- sessions -----------------------------------------------------------------------

    def history(self, user_id: str, session_id: str, last_n: int | None = None) -> list[Message]:
        """The session's buffered messages (older ones live in the summary and the
        long-term archive), oldest first."""
        state = self.sessions.load(check_id(user_id, "user_id"), check_id(session_id, "session_id"), last_n)
        return list(state.messages)

    def set_system_prompt(self, user_id: str, session_id: str, prompt: str | None) -> None:
        """Store the session's system prompt (used when :meth:`context` gets none);
        ``None`` removes it. Kept at the head of the buffer, never evicted."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        text = None if prompt is None else check_text(prompt, "prompt", allow_empty=False)
        for _ in range(20):
            state = self.sessions.load(user, session)
            rest = [m for m in state.messages if m.id != SYSTEM_PROMPT_ID]
            head = [] if text is None else [Message(role="system", content=text, id=SYSTEM_PROMPT_ID)]
            try:
                self.sessions.replace(user, session, head + rest, state.version)
                return
            except ConflictError:
                continue  # an append came first: reload and retry
        raise ConflictError("set_system_prompt kept losing to concurrent writes; retry later")

    def clear_session(self, user_id: str, session_id: str) -> bool:
        """Delete a session's buffer and summary (archived turns stay in long-term
        memory; use :meth:`forget` with ``session_id=`` to drop them too)."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        self.flush()
        existed = self.sessions.delete(user, session)
        return self.summaries.delete(user, session) or existed

    def sessions_of(self, user_id: str) -> list[str]:
        """The user's session ids, most recently updated first."""
        return [info.session_id for info in self.sessions.list_sessions(check_id(user_id, "user_id"))]

    # -- export / import / stats ----------------------------------------------------------

    def export_user(self, user_id: str, path: str | os.PathLike[str]) -> int:
        """Write everything of a user to a JSONL file (lossless); returns records written."""
        from hmem.transfer import export_user

        self.flush()
        return export_user(self, check_id(user_id, "user_id"), Path(path))

    def import_user(self, path: str | os.PathLike[str], *, user_id: str | None = None) -> str:
        """Load a file written by :meth:`export_user` into this memory (optionally as
        another user id); the user must have no data yet. Returns the user id."""
        from hmem.transfer import import_user

        return import_user(self, Path(path), user_id=user_id)

    def stats(self, user_id: str) -> dict[str, Any]:
        """Counts per tier for one user."""
        user = check_id(user_id, "user_id")
        sessions = self.sessions.list_sessions(user)
        summaries = [self.summaries.get(user, s.session_id) for s in sessions]
        items = self.longterm.items.find(user)
        kinds: dict[str, int] = {}
        for item in items:
            kinds[item.kind] = kinds.get(item.kind, 0) + 1
        return {
            "user_id": user,
            "sessions": len(sessions),
            "buffered_messages": sum(s.message_count for s in sessions),
            "summaries": sum(1 for s in summaries if s is not None),
            "summarized_messages": sum(s.folded_count for s in summaries if s is not None),
            "profile_keys": len(self.profile.all(user)),
            "items": len(items),
            "items_by_kind": dict(sorted(kinds.items())),
        }

    def items(self, user_id: str) -> list[MemoryItem]:
        """All long-term items of a user (facts and archived turns)."""
        return self.longterm.items.find(check_id(user_id, "user_id"))

    # -- lifecycle --------------------------------------------------------------------------

    def flush(self, timeout: float | None = 60.0) -> bool:
        """Wait until background extraction and compaction have caught up; True if they did."""
        done = True
        if self.worker is not None:
            done = self.worker.flush(timeout)
        if self.options.compaction == "background":
            done = self.compactor.flush(timeout) and done
        return done

    def close(self) -> None:
        """Finish background work and release stores and clients (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self.worker is not None:
            self.worker.close(timeout=60.0)
        self.compactor.close(timeout=60.0)
        for closer in self._on_close:
            try:
                closer()
            except Exception:  # closing must go on: log and continue
                log.exception("error while closing a hmem backend")

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_keywords(method: Callable[..., Any], given: Mapping[str, Any], where: str) -> None:
    """Unknown keyword arguments are bad input (InvalidInput naming them), not a TypeError."""
    params = inspect.signature(method).parameters.values()
    allowed = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    unknown = sorted(str(name) for name in given if name not in allowed)
    if unknown:
        raise InvalidInput(
            f"{where}: unknown argument(s) {unknown}; expected some of {sorted(allowed - {'user_id', 'query'})}",
            field=unknown[0],
        )


def distinct_sources(hits: Sequence[Hit], *, exclude: AbstractSet[str] = frozenset()) -> list[Hit]:
    """Keep the best hit per source message and drop hits of messages in ``exclude``
    (already in the prompt). Items without a source message are always kept."""
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in hits:
        source = hit.item.source_message_id
        if source is not None:
            if source in exclude or source in seen:
                continue
            seen.add(source)
        out.append(hit)
    return out
