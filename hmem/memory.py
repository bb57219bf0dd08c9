"""The :class:`Memory` facade: hmem's public API.

It orchestrates the ports (session, summary and profile stores, the long-term
store) and the pure core (window policies, assembler). Its collaborators are private:
callers get methods. :mod:`hmem.build` composes them from settings.

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

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hmem import _reads as reads
from hmem import transfer
from hmem._options import (
    SYSTEM_PROMPT_ID,
    AddResult,
    FactExtractor,
    MemoryOptions,
    MemoryParts,
    When,
    messages_to_append,
    put_system_prompt,
)
from hmem._pipeline import AfterAppend, warm_up_models
from hmem._readiness import BackendReady, probes, run_probes
from hmem.assembly.assemble import TierCaps, assemble
from hmem.assembly.render import ContextTemplate
from hmem.config import Settings
from hmem.longterm.options import RecallOptions
from hmem.protocols import ProfileStore, Tokenizer
from hmem.tokens import get_tokenizer
from hmem.types import (
    AssembledContext,
    Hit,
    MemoryItem,
    Message,
    ProfileEntry,
    ProfileValue,
    Provenance,
    SessionInfo,
    SessionSummary,
    check_id,
    check_text,
)

if TYPE_CHECKING:
    from hmem.longterm.types import RememberResult
    from hmem.protocols import LLM, Embedder, VectorIndex

__all__ = ["SYSTEM_PROMPT_ID", "AddResult", "FactExtractor", "Memory", "MemoryOptions", "MemoryParts", "ProfileView"]

log = logging.getLogger("hmem.memory")


class ProfileView:
    """The user-facing methods of the profile store behind a :class:`Memory` (no
    ``close()`` or ``delete_user()``: the Memory owns the store).

    Example::

        mem.profile.set("u1", "city", "Paris")
        mem.profile.get("u1", "city").value, [e.value for e in mem.profile.history("u1", "city")]
    """

    __slots__ = ("_store",)

    def __init__(self, store: ProfileStore) -> None:
        self._store = store

    def set(self, user_id: str, key: str, value: ProfileValue, *, provenance: Provenance | None = None,
            confidence: float = 1.0, at: datetime | None = None) -> ProfileEntry:
        """Make ``value`` the current value of ``key`` (the old one stays in history)."""
        return self._store.set(user_id, key, value, provenance=provenance, confidence=confidence, at=at)

    def get(self, user_id: str, key: str) -> ProfileEntry | None:
        """The key's newest entry (``is_current`` False when it was deleted), or None."""
        return self._store.get(user_id, key)

    def delete(self, user_id: str, key: str, *, provenance: Provenance | None = None) -> bool:
        """Remove the current value; history records the deletion. True if it existed."""
        return self._store.delete(user_id, key, provenance=provenance)

    def all(self, user_id: str) -> list[ProfileEntry]:
        """Current entries, most recently set first."""
        return self._store.all(user_id)

    def history(self, user_id: str, key: str) -> list[ProfileEntry]:
        """Every version of the key, oldest first (deletions have ``value=None``)."""
        return self._store.history(user_id, key)


class Memory:
    """Hierarchical memory for one deployment (many users, many sessions).

    Build one with :meth:`open` (embedded default) or :meth:`from_settings`; the
    constructor takes ready parts (:func:`hmem.build.build_parts`, or hand-made for
    tests and custom deployments). Background work (``extraction``/``compaction`` =
    ``"background"``) runs as durable jobs of the background engine (:mod:`hmem.jobs`;
    one user's jobs in order) that :meth:`flush` waits for.
    """

    def __init__(self, parts: MemoryParts, *, tokenizer_for: Callable[[str], Tokenizer] = get_tokenizer) -> None:
        self._parts = parts
        self._sessions, self._summaries, self._longterm = parts.sessions, parts.summaries, parts.longterm
        self._stores = parts.stores
        self._engine = parts.engine  # threads start with the first job of each kind
        self._after_append = AfterAppend(parts)
        for kind in self._after_append.job_kinds():  # and run what an earlier process left
            self._engine.register(kind)
        self._tokenizer_for = tokenizer_for
        self._closed = False

    # -- construction -------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] = "./hmem-data", *, embedder: Embedder | None = None,
        llm: LLM | None = None, **settings: Any,
    ) -> Memory:
        """The embedded default in folder ``path``: SQLite (sessions, summaries,
        profile, items, BM25), Chroma ``PersistentClient`` (vectors) and the
        packaged MiniLM model; no server, no network. Keyword arguments override
        settings (see :class:`hmem.config.Settings`), e.g. ``compaction="background"``;
        ``embedder``/``llm`` share an already loaded model or client.

        The environment is not read here (use :meth:`from_settings` for that), so
        ``Memory.open`` behaves the same on every machine."""
        # The defaults already are the embedded backends; pinning sessions/summaries/profile
        # here would make a ``redis_url=`` override apply to the items only.
        chosen = Settings.from_env({}, **{**settings, "data_dir": str(Path(path))})
        return cls.from_settings(chosen, embedder=embedder, llm=llm)

    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, *, embedder: Embedder | None = None, llm: LLM | None = None,
        vectors: VectorIndex | None = None,
    ) -> Memory:
        """Build from ``HMEM_*`` environment variables / ``HMEM_CONFIG`` file (or the
        given :class:`~hmem.config.Settings`): Redis, Chroma server, an LLM …
        ``embedder``/``llm``/``vectors`` share an already loaded model or client."""
        from hmem.build import build_parts  # the backends' code loads only when a Memory is built

        chosen = settings or Settings.from_env()
        memory = cls(build_parts(chosen, embedder=embedder, llm=llm, vectors=vectors))
        if chosen.warm_up:
            try:
                memory.warm_up()
            except BaseException:
                memory.close()
                raise
        return memory

    @property
    def profile(self) -> ProfileView:
        """The user profiles: ``mem.profile.set(user, key, value)``, ``.get``, ``.delete``,
        ``.all``, ``.history`` (erasing a whole user is :meth:`forget_user`)."""
        return ProfileView(self._parts.profile)

    @property
    def options(self) -> MemoryOptions:
        """The behaviour this Memory was built with (model, reply reserve, recall k …)."""
        return self._parts.options

    # -- the pipeline -----------------------------------------------------------------

    def add(self, user_id: str, session_id: str, messages: Iterable[Message | Mapping[str, Any]], *,
            extraction: Literal["foreground", "background"] | None = None) -> AddResult:
        """Append messages to a session, then run the pipeline: extract profile facts
        and long-term facts from user turns, compact the buffer (summary + archive).

        The append is atomic and acknowledged before anything else runs; a failure in
        a later step is logged and re-raised, and loses no message. ``extraction``
        overrides ``options.extraction`` for this call (``"background"``: return once
        the messages are stored, queue the rest; the chat proxy stores turns so)."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        where = self.options.extraction_for(extraction)
        batch = messages_to_append(messages, "messages", reserved_field="id")
        # Refused before the append: a store built for another embedder must change nothing
        # (once per user and process; a new user's vectors get this embedder's stamp).
        self._longterm.check_vectors(user, write=True)
        version = self._sessions.append(user, session, batch)
        try:
            profile_result, facts, fact_report, compaction = self._after_append.run(user, session, batch, where)
        except Exception as exc:
            log.warning("add(%r, %r): the messages are stored (version %d) but a later step failed: %s: %s",
                        user, session, version, type(exc).__name__, exc)
            raise
        return AddResult(version, tuple(m.id for m in batch), profile_result, facts, compaction, fact_report)

    def context(
        self,
        user_id: str,
        session_id: str,
        query: str | None = None,
        *,
        model: str | None = None,
        budget: int | None = None,
        reply_reserve: int | None = None,
        system_prompt: str | None = None,
        k: int | None = None,
        caps: TierCaps | Literal["default"] | None = "default",
        template: ContextTemplate | None = None,
        truncate_current_turn: bool = False,
        relevance_cutoff: float | Literal["default"] | None = "default",
        recall: RecallOptions | None = None,
        pending: Iterable[Message | Mapping[str, Any]] | None = None,
    ) -> AssembledContext:
        """The prompt for the next model call, within ``budget`` tokens (default: the
        model's context window minus ``reply_reserve``, default ``options.reply_reserve``).

        Recalls with ``query`` (default: the session's last user message; ``recall``: the
        filters and ranking, as in :meth:`recall`) as deep as the budget could use, then
        assembles system prompt, current turn, history, summary, profile and recalled
        items in that priority order. Without ``budget``, memory does not grow with the
        window: summary, profile and recalled items take at most ``options.memory_budget``
        tokens together, and the recalled tier leaves out every hit whose estimated
        chance of holding the answer is not worth its tokens (``options.stop``,
        :mod:`hmem.assembly.stopping`). With ``budget``, the budget is spent: the
        recalled tier takes hits best first until its share is used. Either way it stops
        when the next hit scores below ``relevance_cutoff`` times the best one (default
        ``options.relevance_cutoff``; None: off); ``k`` (default ``options.recall_k``,
        None) is an upper bound for callers who want one, and a recalled item longer
        than ``options.excerpt_tokens`` is rendered as its passage about the query.
        ``ctx.report.tier("recalled").stop_note`` says what stopped it. ``system_prompt``
        defaults to the one stored by :meth:`set_system_prompt`. ``pending``: messages not
        stored yet, assembled as if appended (the chat proxy builds the prompt, then stores
        the turn). Raises :class:`~hmem.errors.BudgetError` when the system prompt and
        current turn alone do not fit."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        model_name = model or self.options.model
        limit = reads.prompt_limit(model_name, self.options.reply_reserve if reply_reserve is None else reply_reserve, budget)
        tokenizer = self._tokenizer_for(model_name)
        buffer, summary, stored_prompt = reads.session_view(self._stores, user, session, pending)
        prompt = system_prompt if system_prompt is not None else stored_prompt
        query = reads.context_query(buffer, query)
        shown = {m.id for m in buffer}
        # Without a budget the window is room for the conversation, not for memory: memory
        # gets what the calibrated stop finds worth its tokens, within the memory budget.
        spend_all = budget is not None
        memory_budget = None if spend_all else self.options.memory_budget
        bound, fetch = reads.context_depth(limit if memory_budget is None else min(limit, memory_budget), k,
                                           self.options.recall_k, len(shown))
        hits: list[Hit] = []
        if query and query.strip() and bound != 0:
            candidates = self._longterm.recall(user, query, fetch, recall)
            hits = reads.distinct_sources(candidates, exclude=shown)
        return assemble(
            buffer, tokenizer=tokenizer, budget=limit, system_prompt=prompt,
            summary=summary.text if summary and summary.text else None, profile=self._parts.profile.all(user),
            recalled=hits, caps=self.options.caps if caps == "default" else caps,
            template=template or self.options.template, truncate_current_turn=truncate_current_turn,
            relevance_cutoff=self.options.relevance_cutoff if relevance_cutoff == "default" else relevance_cutoff,
            max_recalled=bound, stop=None if spend_all else self.options.stop, memory_budget=memory_budget,
            query=query, excerpt_tokens=self.options.excerpt_tokens,
        )

    # -- long-term items --------------------------------------------------------------

    def remember(
        self,
        user_id: str,
        text: str,
        kind: str = "fact",
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        *,
        session_id: str | None = None,
        source_message_id: str | None = None,
        created_at: When | None = None,
    ) -> RememberResult:
        """Store a fact in the user's long-term memory (deduplicated at write time)."""
        return self._longterm.remember(user_id, text, kind, importance, metadata, session_id=session_id,
                                       source_message_id=source_message_id, created_at=created_at)

    def recall(self, user_id: str, query: str, k: int = 10, options: RecallOptions | None = None) -> list[Hit]:
        """The user's ``k`` long-term items most relevant to ``query`` (hybrid BM25 +
        embeddings), each explaining its ranks and scores. ``options`` filters (kinds,
        session, dates, metadata) and ranks (fusion, recency, importance, diversity,
        stages): :class:`~hmem.longterm.options.RecallOptions`.

        Example::

            mem.recall("u1", "what food should I avoid?", k=5,
                       options=RecallOptions(kinds="preference", since="2024-01-01"))
        """
        return self._longterm.recall(user_id, query, k, options)

    def forget(
        self,
        user_id: str,
        ids: Sequence[str] | None = None,
        *,
        kinds: Iterable[str] | str | None = None,
        session_id: str | None = None,
        before: When | None = None,
        all: bool = False,
    ) -> int:
        """Delete long-term items by id and/or filter (ANDed) or ``all=True``; returns how many."""
        return self._longterm.forget(user_id, ids, kinds=kinds, session_id=session_id, before=before, all=all)

    def forget_user(self, user_id: str) -> dict[str, int]:
        """Erase everything hmem holds about a user (sessions, summaries, profile, items, and
        background jobs still queued or quarantined: they hold the user's messages); counts
        per tier."""
        user = check_id(user_id, "user_id")
        self.flush()
        counts = transfer.erase_user(self._stores, user)
        return {**counts, "jobs": self._engine.drop(user)}

    def items(
        self,
        user_id: str,
        *,
        ids: Sequence[str] | None = None,
        session_id: str | None = None,
        source_message_id: str | None = None,
        kinds: Iterable[str] | str | None = None,
    ) -> list[MemoryItem]:
        """The user's long-term items (facts and archived turns), oldest first; or those
        with the given ``ids``, in that order. Optional filters (ANDed): ``session_id``,
        ``source_message_id`` (the turn an item came from), ``kinds``."""
        return reads.find_items(self._stores, user_id, ids=ids, session_id=session_id,
                          source_message_id=source_message_id, kinds=kinds)

    # -- sessions -----------------------------------------------------------------------

    def history(self, user_id: str, session_id: str, last_n: int | None = None) -> list[Message]:
        """The session's buffered messages (older ones live in the summary and the
        long-term archive), oldest first."""
        return list(self._sessions.load(check_id(user_id, "user_id"), check_id(session_id, "session_id"), last_n).messages)

    def summary(self, user_id: str, session_id: str) -> SessionSummary | None:
        """The session's rolling summary (what compaction folded out of the buffer), or None."""
        return self._summaries.get(check_id(user_id, "user_id"), check_id(session_id, "session_id"))

    def set_system_prompt(self, user_id: str, session_id: str, prompt: str | None) -> None:
        """Store the session's system prompt (used when :meth:`context` gets none);
        ``None`` removes it. Kept at the head of the buffer, never evicted."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        put_system_prompt(self._sessions, user, session,
                          None if prompt is None else check_text(prompt, "prompt", allow_empty=False))

    def clear_session(self, user_id: str, session_id: str) -> bool:
        """Delete a session's buffer and summary (archived turns stay in long-term
        memory; use :meth:`forget` with ``session_id=`` to drop them too)."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        self.flush()
        existed = self._sessions.delete(user, session)
        return self._summaries.delete(user, session) or existed

    def session_infos(self, user_id: str) -> list[SessionInfo]:
        """The user's sessions with message count, version and last update, most recent first."""
        return self._sessions.list_sessions(check_id(user_id, "user_id"))

    def users(self) -> list[str]:
        """Every user id with at least one session, sorted (users known only by their
        profile or items are not listed: open them by id)."""
        return self._sessions.list_users()

    def export_user(self, user_id: str, path: str | os.PathLike[str]) -> int:
        """Write everything of a user to a JSONL file (lossless); returns records written."""
        self.flush()
        return transfer.export_user(self._stores, check_id(user_id, "user_id"), Path(path))

    def import_user(self, path: str | os.PathLike[str], *, user_id: str | None = None) -> str:
        """Load a file written by :meth:`export_user` into this memory (optionally as
        another user id); the user must have no data yet. Returns the user id."""
        return transfer.import_user(self._stores, Path(path), user_id=user_id)

    def stats(self, user_id: str) -> dict[str, Any]:
        """Counts per tier for one user; ``embedder``: the model in use, ``fallback`` (why it
        stands in for the configured one, else None) and what made the user's vectors; and
        ``background``: the user's jobs waiting, running and quarantined, per kind, with the
        quarantined ones and their errors (:meth:`hmem.jobs.JobEngine.report`)."""
        stats = reads.user_stats(self._stores, user_id)
        return {**stats, "background": self._engine.report(stats["user_id"])}

    def readiness(self, timeout_s: float = 2.0) -> dict[str, BackendReady]:
        """Whether each backend answers a cheap read within ``timeout_s`` (all at once; for ``/readyz``)."""
        return run_probes(probes(self._stores, self._engine), timeout_s)

    def warm_up(self) -> None:
        """Load the embedding model and run it once, load the chat model's tokenizer and
        run the offline rules once, then :func:`gc.freeze` what is loaded, so the first add
        or recall does not pay for them (``HMEM_WARM_UP=true`` / ``hmem serve --warm-up``)."""
        warm_up_models(self._longterm.embedder, self._tokenizer_for(self.options.model))

    def flush(self, timeout: float | None = 60.0) -> bool:
        """Wait until background extraction and compaction have caught up, written vectors
        are in the index and archived turns' sentence keys are built (``timeout`` for each);
        True if they did."""
        caught_up = self._engine.flush(timeout)  # the pipeline first: it writes vectors and keys
        return self._longterm.flush_keys(timeout) and caught_up

    def close(self) -> None:
        """Finish background work and release stores and clients (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._engine.close(timeout=60.0)
        for closer in self._parts.on_close:
            try:
                closer()
            except Exception:  # closing must go on: log and continue
                log.exception("error while closing a hmem backend")

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

