"""The long-term store's settings and results: :class:`LongTermConfig`,
:class:`RememberResult`, :class:`ArchiveResult`. Re-exported by :mod:`hmem.longterm.store`.

Example::

    >>> LongTermConfig(max_items_per_user=1000).fusion
    'weighted'
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from hmem._checks import RECALL_WEIGHTS, check_weight
from hmem.errors import ConfigError, InvalidInput
from hmem.longterm import fusion as fz
from hmem.longterm.stages import (
    CurrentState,
    Feedback,
    QuestionDemotion,
    RankStage,
    SessionSupport,
    SpeakerPrior,
    SpecificAnswers,
    SupersededDemotion,
    TimeBoost,
    check_stage_names,
    default_stages,
)
from hmem.types import MemoryItem

__all__ = [
    "MAX_FEEDBACK_ROUNDS", "MAX_K", "ArchiveResult", "LongTermConfig", "RememberResult", "RememberStatus", "check_k",
]

RememberStatus = Literal["stored", "updated", "skipped"]

#: The most hits one recall (or single-retriever search) returns; also the most a recall
#: depth (``LongTermConfig.candidates``, ``rerank_depth``) may be.
MAX_K = 1000
#: The most recall rounds ``LongTermConfig.feedback_rounds`` allows: each round costs a
#: BM25 search, and a third did not help on LoCoMo (docs/longterm.md).
MAX_FEEDBACK_ROUNDS = 3


def check_k(k: object) -> int:
    """``k`` of a recall: an integer from 1 to :data:`MAX_K`.

    >>> check_k(10)
    10
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be an integer from 1 to {MAX_K}, got {k!r}", field="k")
    return k


@dataclass(frozen=True, slots=True)
class LongTermConfig:
    """Tunables of :class:`~hmem.longterm.store.LongTermStore` (all optional).

    Writes: ``near_duplicate_threshold`` is the cosine at or above which a new fact of the
    same user and kind, in the same wording (terms overlapping ≥ 80 %), updates the
    existing item (``None`` disables; never applied to archived turns); on such an update ``near_duplicate_policy`` ``"keep"`` keeps the
    stored wording (the dedup anchor never drifts) or ``"replace"`` takes the new one;
    importance becomes the max, metadata is merged. ``max_items_per_user`` caps retention
    (``None`` = unlimited): past it the lowest ``importance × 0.5**(age/retention_half_life)``
    are removed.

    Candidates: ``candidates`` hits from each retriever (``max(candidates, 3k)``) are fused
    (``fusion``: ``"weighted"`` min-max with ``lexical_weight`` : ``dense_weight``, which
    keeps *how much* better the top match is; or ``"rrf"`` with ``rrf_k``). With
    ``lexical_coverage`` (the default) the weighted fusion scales BM25's weight by how much
    of the question its best match covers (:func:`~hmem.longterm.fusion.query_coverage`):
    a paraphrase leans on dense retrieval instead of on chance matches of common words;
    ``cross_lingual`` adds dictionary translations of the question's words to the BM25
    query (:mod:`hmem.longterm.crosslingual`). The stages then re-rank the best
    ``max(rerank_depth, k)``; neither depth depends on ``k`` up to ``rerank_depth``, so the
    first hits of ``recall(q, 10)`` are the first of ``recall(q, 100)``.

    Stages (:mod:`hmem.longterm.stages`, in :attr:`stages` order; a weight of 0 turns one
    off): ``time_weight`` (:class:`~hmem.longterm.stages.TimeBoost`), ``feedback_rounds``
    (1 = off), ``feedback_docs``, ``feedback_terms``, ``feedback_weight``
    (:class:`~hmem.longterm.stages.Feedback`), ``session_weight``
    (:class:`~hmem.longterm.stages.SessionSupport`), ``question_weight``
    (:class:`~hmem.longterm.stages.QuestionDemotion`), ``speaker_weight``
    (:class:`~hmem.longterm.stages.SpeakerPrior`), ``current_weight``
    (:class:`~hmem.longterm.stages.CurrentState`), ``specific_weight`` and
    ``specific_share`` (:class:`~hmem.longterm.stages.SpecificAnswers`),
    ``superseded_weight`` (1 = off; :class:`~hmem.longterm.stages.SupersededDemotion`).
    ``feedback`` and ``specific`` are off by default (``feedback_rounds=2``,
    ``specific_weight=0.3`` turn them on): each cost the assistant-shaped dev chats more
    than a point of R@10 (docs/bench-ablation.md, 2026-12-05).
    ``recall_stages`` runs only the stages it names (``None``: all that are on), e.g.
    ``("session", "superseded")`` for an ablation. docs/longterm.md says why each is there
    and what it measured.
    """

    near_duplicate_threshold: float | None = 0.95
    candidates: int = 300
    rerank_depth: int = 100
    rrf_k: int = fz.RRF_K
    lexical_weight: float = 0.5
    dense_weight: float = 0.5
    lexical_coverage: bool = True
    max_items_per_user: int | None = None
    retention_half_life: timedelta = timedelta(days=30)
    turn_importance: float = 0.3
    archive_roles: frozenset[str] = frozenset({"user", "assistant"})
    near_duplicate_policy: Literal["keep", "replace"] = "keep"
    fusion: Literal["rrf", "weighted"] = "weighted"
    feedback_rounds: int = 1
    feedback_docs: int = 3
    feedback_terms: int = 8
    feedback_weight: float = 0.2
    time_weight: float = 0.2
    session_weight: float = 0.3
    question_weight: float = 0.5
    speaker_weight: float = 0.3
    current_weight: float = 0.2
    specific_weight: float = 0.0
    specific_share: float = 0.008
    superseded_weight: float = 0.5
    cross_lingual: bool = True
    recall_stages: tuple[str, ...] | None = None

    @property
    def stages(self) -> tuple[RankStage, ...]:
        """The ranking stages recall runs after fusion, in order (:mod:`hmem.longterm.stages`):
        those whose weight is on and, when ``recall_stages`` names some, only those."""
        return default_stages(
            only=self.recall_stages, time=TimeBoost(self.time_weight),
            feedback=Feedback(self.feedback_rounds, self.feedback_docs, self.feedback_terms, self.feedback_weight),
            session=SessionSupport(self.session_weight), question=QuestionDemotion(self.question_weight),
            speaker=SpeakerPrior(self.speaker_weight), current=CurrentState(self.current_weight), specific=SpecificAnswers(self.specific_weight, self.specific_share),
            superseded=SupersededDemotion(self.superseded_weight))

    def __post_init__(self) -> None:
        if self.recall_stages is not None:
            object.__setattr__(self, "recall_stages", check_stage_names(self.recall_stages))
        t = self.near_duplicate_threshold
        if t is not None and not 0.0 < t <= 1.0:
            raise ConfigError("near_duplicate_threshold must be in (0, 1] or None")
        if self.rrf_k < 0:
            raise ConfigError(f"rrf_k must be >= 0, got {self.rrf_k!r}")
        if self.max_items_per_user is not None and self.max_items_per_user < 1:
            raise ConfigError("max_items_per_user must be >= 1 or None")
        if self.retention_half_life.total_seconds() <= 0:
            raise ConfigError("retention_half_life must be positive")
        if self.fusion not in ("rrf", "weighted"):
            raise ConfigError("fusion must be 'rrf' or 'weighted'")
        for flag in ("cross_lingual", "lexical_coverage"):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.near_duplicate_policy not in ("keep", "replace"):
            raise ConfigError("near_duplicate_policy must be 'keep' or 'replace'")
        self._check_counts()
        for name, high in RECALL_WEIGHTS.items():
            check_weight(name, getattr(self, name), high, off=" (0 = off)")
        check_weight("specific_share", self.specific_share, 1.0, zero=False)
        check_weight("superseded_weight", self.superseded_weight, 1.0, off=" (1 = off)")

    def _check_counts(self) -> None:
        for name, low, high in (("candidates", 1, MAX_K), ("rerank_depth", 1, MAX_K),
                                ("feedback_rounds", 1, MAX_FEEDBACK_ROUNDS), ("feedback_docs", 1, 50),
                                ("feedback_terms", 1, 50)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"{name} must be an integer from {low} to {high}, got {value!r}")
        check_weight("feedback_weight", self.feedback_weight, 10.0, zero=False)


@dataclass(frozen=True, slots=True)
class RememberResult:
    """What :meth:`~hmem.longterm.store.LongTermStore.remember` did: ``stored`` a new item, ``updated`` a
    near duplicate (``item`` is the updated record), or ``skipped`` an exact duplicate
    (``item`` is the existing record). ``evicted`` lists items the retention cap removed."""

    status: RememberStatus
    item: MemoryItem
    similarity: float | None = None
    evicted: tuple[MemoryItem, ...] = ()


@dataclass(frozen=True, slots=True)
class ArchiveResult:
    """Turns archived, message ids skipped (empty, tool-only, unarchived role, or
    already archived), and items the retention cap removed."""

    stored: tuple[MemoryItem, ...]
    skipped: tuple[str, ...] = ()
    evicted: tuple[MemoryItem, ...] = ()
