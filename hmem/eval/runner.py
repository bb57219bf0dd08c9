"""Replay a dataset through hmem's public API and score what comes back, per turn.

One run = one :class:`~hmem.memory.Memory` in a (temporary) folder. Each conversation
is one user (``user_id`` = conversation id), each session one ``session_id``, each turn
one :class:`~hmem.types.Message` added with :meth:`Memory.add` — the real write path
(archiving, offline fact and profile extraction, compaction):

- ``id`` = the turn id (``"D3:7"``, ``"S1:T3"``; unique within its user, which scopes it),
- ``created_at`` = the session date (+ the turn's index in seconds, to keep order),
- ``name`` = the speaker's name, ``role`` = the turn's role (LoCoMo: ``speaker_a`` →
  ``user``, ``speaker_b`` → ``assistant``),
- a shared photo's caption is part of what was said: ``"… [shares a photo: <caption>]"``.

Then every question is asked under each configuration (:data:`CONFIGS`); every
returned :class:`~hmem.types.Hit` maps to its source turn (``item.source_message_id``:
an archived turn, or a fact extracted from that turn), the list is de-duplicated and
scored with :mod:`hmem.eval.metrics`.

Example::

    >>> from hmem.eval.datasets import load_sample
    >>> run = run_eval(load_sample(), configs=["default"], limit_conversations=1)  # doctest: +SKIP
    >>> run.configs["default"].report.overall.recall[10] > 0.5                   # doctest: +SKIP
    True
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hmem.errors import InvalidInput
from hmem.eval.answer_run import (
    ANSWER_BUDGETS,
    AnswerResult,
    ask_answers,
    check_answer_budgets,
    check_context_k,
    recalled_turns,
)
from hmem.eval.metrics import DEFAULT_KS, QuestionResult, Report, aggregate
from hmem.eval.model import EvalConversation, EvalDataset, EvalQuestion, EvalSession, EvalTurn
from hmem.eval.opener import check_settings, default_opener
from hmem.longterm.options import RecallOptions
from hmem.longterm.stages import STAGE_NAMES
from hmem.types import Hit, Message, ToolCall

if TYPE_CHECKING:
    from hmem.memory import Memory
    from hmem.protocols import Embedder

__all__ = [
    "ABLATIONS",
    "ANSWER_BUDGETS",
    "CONFIGS",
    "CONFIG_NAMES",
    "DEFAULT_CONTEXT_BUDGET",
    "ConfigResult",
    "EvalConfig",
    "EvalRun",
    "IngestStats",
    "conversation_batches",
    "run_eval",
    "select_configs",
    "turn_content",
]

ConfigKind = Literal["recall", "context", "answer"]

#: Token budget of the ``context`` configuration (a small model's prompt).
DEFAULT_CONTEXT_BUDGET = 4000
#: Session id under which the ``context`` configuration asks (holds no messages, so
#: the prompt is system + profile + recalled items: what long-term memory brings).
QUERY_SESSION = "hmem-eval-query"
#: Half-life of the ``hybrid+recency`` configuration (LoCoMo spans months).
RECENCY_HALF_LIFE = timedelta(days=90)


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """One way of retrieving: ``kind`` picks the call; ``fusion``, ``recency_half_life``
    and ``importance_weight`` are passed to :meth:`Memory.recall` (``kind="recall"``)."""

    name: str
    kind: ConfigKind
    description: str
    fusion: Literal["rrf", "weighted", "lexical", "dense"] | None = None
    recency_half_life: timedelta | None = None
    importance_weight: float = 0.0
    stages: tuple[str, ...] | None = None  # the ranking stages recall runs (None: the store's)


#: The configurations compared side by side, in report order.
CONFIGS: Mapping[str, EvalConfig] = {
    c.name: c
    for c in (
        EvalConfig("bm25", "recall", "BM25 only (hmem's lexical index)", fusion="lexical"),
        EvalConfig("dense", "recall", "dense only (the embedder's query vs stored vectors, cosine)", fusion="dense"),
        EvalConfig("hybrid", "recall", "hybrid, plain RRF (k=60, equal weights)", fusion="rrf"),
        EvalConfig(
            "hybrid+recency",
            "recall",
            "hybrid RRF x recency (half-life 90 days) x importance (weight 0.5)",
            fusion="rrf", recency_half_life=RECENCY_HALF_LIFE, importance_weight=0.5,
        ),
        EvalConfig("default", "recall", "Memory.recall with hmem's defaults"),
        EvalConfig("context", "context", "gold turns inside Memory.context() at the token budget"),
        EvalConfig("answer", "answer", "gold answer inside Memory.context() per budget (recall: largest budget)"),
    )
}
CONFIG_NAMES: tuple[str, ...] = tuple(CONFIGS)

#: The ranking-stage ablations (``--configs ablation`` runs ``default`` and all of them):
#: ``default`` without one stage each, and fusion alone.
ABLATIONS: Mapping[str, EvalConfig] = {
    c.name: c
    for c in (
        *(EvalConfig(f"without-{name}", "recall", f"default without the {name!r} ranking stage",
                     stages=tuple(s for s in STAGE_NAMES if s != name)) for name in STAGE_NAMES),
        EvalConfig("no-stages", "recall", "fusion alone: no ranking stage", stages=()),
    )
}


def select_configs(names: Iterable[str] | None) -> list[EvalConfig]:
    """The named configurations (default: all), or :class:`InvalidInput` naming the unknown one."""
    if names is None:
        return list(CONFIGS.values())
    known = {**CONFIGS, **ABLATIONS}
    out: list[EvalConfig] = []
    for name in names:
        chosen = [CONFIGS["default"], *ABLATIONS.values()] if name == "ablation" else [known.get(name)]
        if chosen[0] is None:
            raise InvalidInput(f"unknown configuration {name!r}; choose from {', '.join(CONFIG_NAMES)}, ablation "
                               f"(default and {', '.join(ABLATIONS)})", field="configs")
        out += [c for c in chosen if c is not None and c not in out]
    if not out:
        raise InvalidInput("choose at least one configuration", field="configs")
    return out


@dataclass(frozen=True, slots=True)
class IngestStats:
    """What the write phase did and how long it took."""

    conversations: int
    sessions: int
    turns: int
    items: int
    seconds: float

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversations": self.conversations, "sessions": self.sessions, "turns": self.turns,
            "items": self.items, "seconds": round(self.seconds, 3), "turns_per_s": round(self.turns_per_s, 1),
        }


@dataclass(frozen=True, slots=True)
class ConfigResult:
    """Scores of one configuration plus what it retrieved per question (``answers``:
    the answer-in-context measure, only for the ``answer`` configuration)."""

    config: EvalConfig
    report: Report
    results: tuple[QuestionResult, ...]
    extra: Mapping[str, float] = field(default_factory=dict)
    answers: AnswerResult | None = None


@dataclass(frozen=True, slots=True)
class EvalRun:
    """Everything one evaluation run measured."""

    dataset: str
    ks: tuple[int, ...]
    configs: Mapping[str, ConfigResult]
    ingest: IngestStats
    questions: int
    context_budget: int
    dataset_counts: Mapping[str, int] = field(default_factory=dict)
    #: The settings the run's Memory was opened with beyond the embedded default (``settings=``
    #: of :func:`run_eval`, ``hmem eval --set``), as a report may show them (secrets hidden).
    settings: Mapping[str, Any] = field(default_factory=dict)


# -- turns → messages ------------------------------------------------------------------


def turn_content(turn: EvalTurn) -> str | None:
    """What the speaker said, with a shared photo's caption in brackets (the caption is
    the only trace of the photo; questions ask about what it shows)."""
    text = turn.text
    if turn.image_caption:
        text = f"{text} [shares a photo: {turn.image_caption}]".strip()
    return text if text or not turn.tool_calls else None


def _session_messages(session: EvalSession) -> list[Message]:
    return [
        Message(
            role=turn.role,
            content=turn_content(turn),
            name=turn.speaker if turn.speaker.strip() == turn.speaker and turn.speaker else None,
            tool_calls=tuple(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in turn.tool_calls),
            tool_call_id=turn.tool_call_id,
            id=turn.id,
            created_at=session.date + timedelta(seconds=index),
        )
        for index, turn in enumerate(session.turns)
    ]


def conversation_batches(conversation: EvalConversation) -> list[tuple[str, list[Message]]]:
    """``(session_id, messages)`` per session, in order: what :func:`run_eval` adds."""
    return [(s.id, _session_messages(s)) for s in conversation.sessions]


# -- the run -----------------------------------------------------------------------------


def _bar(iterable: Iterable[Any], *, total: int, desc: str, enabled: bool) -> Iterable[Any]:
    if not enabled:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="q" if desc.startswith("ask") else "turn",
                file=sys.stderr, leave=False, dynamic_ncols=True)


def _subset(
    dataset: EvalDataset, limit_conversations: int | None, limit_questions: int | None
) -> tuple[list[EvalConversation], list[EvalQuestion]]:
    for name, value in (("limit_conversations", limit_conversations), ("limit_questions", limit_questions)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InvalidInput(f"{name} must be a positive integer or None, got {value!r}", field=name)
    convs = list(dataset.conversations[:limit_conversations])
    questions: list[EvalQuestion] = []
    for conv in convs:
        questions.extend(dataset.questions_for(conv.id)[:limit_questions])
    return convs, questions


def run_eval(
    dataset: EvalDataset,
    *,
    configs: Iterable[str] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    open_memory: Callable[[Path], Memory] | None = None,
    embedder: Embedder | None = None,
    workdir: str | os.PathLike[str] | None = None,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    context_budget: int = DEFAULT_CONTEXT_BUDGET,
    answer_budgets: Sequence[int] = ANSWER_BUDGETS,
    context_k: int | None = None,
    settings: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> EvalRun:
    """Ingest ``dataset`` through :meth:`Memory.add`, then ask every question under each
    configuration and score at turn level.

    ``open_memory(path)`` builds the Memory (default: ``Memory.open(path,
    embedder=embedder)``, the embedded default; pass ``embedder=`` to compare models —
    the ``dense`` configuration embeds each question with ``embed_query``, as recall
    does). ``settings`` (:class:`~hmem.config.Settings` fields, e.g. ``{"session_weight": 0}``
    or ``{"embed_provider": "e5"}``) open the default Memory with those instead of the
    embedded default's; the environment is never read, so a run means the same on every
    machine, and the report records them. ``workdir`` keeps the store (default:
    a temporary folder, deleted afterwards). ``limit_questions`` caps the questions
    *per conversation*. The ``answer`` configuration asks :meth:`Memory.context` at each
    of ``answer_budgets`` with ``k=context_k`` (None: context's own depth). Raises
    :class:`InvalidInput` for unknown configurations, bad limits, budgets or k, and
    :class:`~hmem.errors.ConfigError` for bad settings, before anything is written.
    """
    chosen = select_configs(configs)
    ks_t = tuple(sorted(dict.fromkeys(ks)))
    aggregate([], ks_t)  # validates ks up front
    if isinstance(context_budget, bool) or not isinstance(context_budget, int) or context_budget < 1:
        raise InvalidInput(f"context_budget must be a positive integer, got {context_budget!r}", field="context_budget")
    budgets, depth = check_answer_budgets(answer_budgets), check_context_k(context_k)
    convs, questions = _subset(dataset, limit_conversations, limit_questions)
    shown = check_settings(settings, open_memory=open_memory)
    opener = open_memory or default_opener(embedder, settings or {})
    with tempfile.TemporaryDirectory(prefix="hmem-eval-") as tmp:
        folder = Path(workdir) if workdir is not None else Path(tmp)
        mem = opener(folder)
        try:
            ingest = _ingest(mem, convs, progress)
            results = {
                cfg.name: _ask_all(mem, cfg, questions, ks_t, budget=context_budget, progress=progress)
                if cfg.kind != "answer" else _ask_answers(mem, cfg, questions, ks_t, budgets=budgets, k=depth, progress=progress)
                for cfg in chosen
            }
        finally:
            mem.close()
    return EvalRun(
        dataset=dataset.name, ks=ks_t, configs=results, ingest=ingest, questions=len(questions),
        context_budget=context_budget, dataset_counts=dict(dataset.counts), settings=shown,
    )


def _ingest(mem: Memory, convs: Sequence[EvalConversation], progress: bool) -> IngestStats:
    total = sum(c.turn_count for c in convs)
    start = time.perf_counter()
    bar = _bar(range(total), total=total, desc="ingest", enabled=progress)
    tick = getattr(bar, "update", None)
    sessions = 0
    for conv in convs:
        for session_id, messages in conversation_batches(conv):
            mem.add(conv.id, session_id, messages)
            sessions += 1
            if tick is not None:
                tick(len(messages))
    mem.flush()
    seconds = time.perf_counter() - start
    close = getattr(bar, "close", None)
    if close is not None:
        close()
    items = sum(mem.stats(c.id)["items"] for c in convs)
    return IngestStats(len(convs), sessions, total, items, seconds)


def _ask_all(
    mem: Memory, cfg: EvalConfig, questions: Sequence[EvalQuestion], ks: tuple[int, ...], *, budget: int,
    progress: bool,
) -> ConfigResult:
    want = max(ks)
    out: list[QuestionResult] = []
    kept_turns: list[int] = []
    tokens: list[int] = []
    for q in _bar(questions, total=len(questions), desc=f"ask {cfg.name}", enabled=progress):
        start = time.perf_counter()
        if cfg.kind == "context":
            turns, used = _context_turns(mem, q, want, budget)
            tokens.append(used)
            kept_turns.append(len(turns))
        else:
            turns = _retrieve(mem, cfg, q, want)
        elapsed = time.perf_counter() - start
        out.append(QuestionResult(q.id, q.category, tuple(q.evidence), tuple(turns[:want]), elapsed))
    extra: dict[str, float] = {}
    if kept_turns:
        extra = {"mean_turns_in_context": sum(kept_turns) / len(kept_turns), "mean_context_tokens": sum(tokens) / len(tokens)}
    return ConfigResult(cfg, aggregate(out, ks), tuple(out), extra)


def _ask_answers(
    mem: Memory, cfg: EvalConfig, questions: Sequence[EvalQuestion], ks: tuple[int, ...], *,
    budgets: tuple[int, ...], k: int | None, progress: bool,
) -> ConfigResult:
    asked = _bar(questions, total=len(questions), desc=f"ask {cfg.name}", enabled=progress)
    out, answers = ask_answers(mem, asked, budgets=budgets, k=k, session_id=QUERY_SESSION)
    return ConfigResult(cfg, aggregate(out, ks), tuple(out), answers=answers)


def _distinct_turns(source_ids: Iterable[str | None]) -> list[str]:
    return list(dict.fromkeys(s for s in source_ids if s))


def _retrieve(mem: Memory, cfg: EvalConfig, q: EvalQuestion, want: int) -> list[str]:
    user = q.conversation_id
    # Facts extracted from a turn map back to that turn and count once: ask for twice as
    # many items so the first ``want`` *distinct* turns are usually all there.
    depth = min(2 * want, 1000)
    # The single-retriever configurations (fusion "lexical"/"dense") rank with the indexes
    # default recall fuses, so they rank exactly what it sees.
    hits: list[Hit] = mem.recall(user, q.question, depth, RecallOptions(
        fusion=cfg.fusion, recency_half_life=cfg.recency_half_life, importance_weight=cfg.importance_weight,
        stages=cfg.stages))
    return _distinct_turns(h.item.source_message_id for h in hits)


def _context_turns(mem: Memory, q: EvalQuestion, want: int, budget: int) -> tuple[list[str], int]:
    ctx = mem.context(q.conversation_id, QUERY_SESSION, query=q.question, budget=budget, k=want)
    return recalled_turns(mem, q.conversation_id, ctx), ctx.tokens
