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

    ``near_duplicate_threshold``: cosine at or above which a new fact of the same
    user and kind updates the existing item (``None`` disables; never applied to
    archived turns). ``near_duplicate_policy``: on such an update ``"keep"`` the
    stored wording (the dedup anchor never drifts) or ``"replace"`` it by the new one;
    importance becomes the max, metadata is merged, ``updated_at`` refreshed. ``max_items_per_user``: retention cap (``None`` = unlimited);
    past it the lowest ``importance × 0.5**(age/retention_half_life)`` are removed.

    ``candidates``: how many hits each retriever (BM25, vectors) returns to be fused
    (``max(candidates, 3k)``), and ``rerank_depth``: how many of the best fused hits the
    steps after fusion re-rank (session support, question demotion, specific answers,
    superseded facts) and a feedback round must bring something new into
    (``max(rerank_depth, k)``). Up to ``k = rerank_depth`` neither depends on ``k``, so the
    first hits of ``recall(q, 10)`` are the first of ``recall(q, 100)``: what an evaluation
    asking 100 measures is what a caller asking 10 gets (docs/longterm.md, "Ranking depth").

    ``fusion`` (default for :meth:`~hmem.longterm.store.LongTermStore.recall`): ``"weighted"`` min-max
    fusion with ``lexical_weight`` 0.5 : ``dense_weight`` 0.5. Min-max keeps *how much*
    better the top BM25 match is, which RRF's ranks throw away (docs/eval.md). The dense
    side had 0.4 until turns were also found by their sentences (sentence keys,
    :mod:`hmem.longterm.keys`), which made it the stronger half on LoCoMo's list and
    open-domain questions (docs/longterm.md, "Sentence keys").

    ``feedback_rounds``: recall rounds (1 to :data:`MAX_FEEDBACK_ROUNDS`; 1 = no feedback).
    Each round after the first expands the query with ``feedback_terms`` words of the
    previous round's ``feedback_docs`` best hits (pseudo-relevance feedback, offline:
    :mod:`hmem.longterm.feedback`), searches BM25 again and adds ``feedback_weight`` × its
    evidence (full for those hits, normalised scores or, under RRF, reciprocal ranks for
    the rest) to the fused scores; a round that brings no new item into the re-ranked head is
    dropped and ends the loop. :attr:`Hit.round <hmem.types.Hit.round>` says which round
    found each hit. Two rounds are the default: LoCoMo R@10 +2.0 on the conversations the
    knobs were chosen on, +1.2 on the others (docs/longterm.md).

    ``time_weight``: when the question names a date ("in July 2023", "last week", 上个月),
    items said in that period or referring to it (their resolved relative dates) score
    ``1 + time_weight`` times more (``Hit.boosts["time"]``); 0 turns it off. A boost, not a
    filter, and no recency multiplier: old evidence is never buried.

    ``session_weight``: each of the re-ranked hits gains this much of
    the score of the best other hit of its session said within an hour of it
    (:data:`~hmem.longterm._rank.SESSION_SPAN`; ``Hit.boosts["session"]``: the factor
    it made); 0 turns it off. The turn that answers often shares no word with the question
    but sits beside one that does: LoCoMo R@10 +3.2 on the conversations it was chosen on,
    +4.4 on the others (docs/longterm.md, "Session support").

    ``question_weight``: a turn that asks ("How did the kids like it?") is a poor answer
    to a later question about its topic (the answer is the next turn): each of the
    re-ranked hits scores ``1 - question_weight × share`` times its score, where
    share is the part of its sentences that are questions (``Hit.boosts["question"]``);
    0 turns it off. LoCoMo R@10 +1.3 on the conversations it was chosen on, +0.9 on the
    others (docs/longterm.md, "Questions are poor answers").

    ``specific_weight``: a hit that holds words rare in the user's archive (held by at most
    ``specific_share`` of their documents, and not in the question) says something
    specific ("I'm reading *The Name of the Wind*"), where one of common words only
    ("Books can really inspire us!") talks around the topic: each of the
    re-ranked hits scores ``1 + specific_weight × specificity`` times its score
    (:func:`~hmem.longterm._rank.specificity`: up to three rare words; ``Hit.boosts
    ["specific"]``); 0 turns it off. In an archive of fewer than 125 documents no word
    is that rare and nothing changes (below 250, only a word held by one document is;
    docs/longterm.md, "Specific answers").

    ``superseded_weight``: a fact a newer version of its claim superseded
    (:mod:`hmem.longterm.supersede`) scores this many times its score (``Hit.boosts
    ["superseded"]``; 1 turns it off): the newer version ranks first, the old stays findable.

    ``cross_lingual``: the lexical query also holds the translations of the question's
    words (CC-CEDICT, English ↔ Chinese: :mod:`hmem.longterm.crosslingual`), so a question
    in one language finds a turn said in the other. English → Chinese only for a user whose
    archive holds Chinese (the dictionary is not even read for an English-only one).
    """

    near_duplicate_threshold: float | None = 0.95
    candidates: int = 300
    rerank_depth: int = 100
    rrf_k: int = fz.RRF_K
    lexical_weight: float = 0.5
    dense_weight: float = 0.5
    max_items_per_user: int | None = None
    retention_half_life: timedelta = timedelta(days=30)
    turn_importance: float = 0.3
    archive_roles: frozenset[str] = frozenset({"user", "assistant"})
    near_duplicate_policy: Literal["keep", "replace"] = "keep"
    fusion: Literal["rrf", "weighted"] = "weighted"
    feedback_rounds: int = 2
    feedback_docs: int = 3
    feedback_terms: int = 8
    feedback_weight: float = 0.2
    time_weight: float = 0.2
    session_weight: float = 0.3
    question_weight: float = 0.5
    specific_weight: float = 0.3
    specific_share: float = 0.008
    superseded_weight: float = 0.5
    cross_lingual: bool = True

    def __post_init__(self) -> None:
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
        if not isinstance(self.cross_lingual, bool):
            raise ConfigError(f"cross_lingual must be True or False, got {self.cross_lingual!r}")
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
