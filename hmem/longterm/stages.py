"""Recall's ranking stages: what happens to the fused candidates, one small object each.

Recall fetches candidates (dense vectors and sentence keys, BM25 with its query
expansions), fuses the two rankings and scores them (recency and importance when the
call asks); then each stage of :attr:`LongTermConfig.stages
<hmem.longterm.types.LongTermConfig.stages>`, in order, works on the :class:`Ranking`:

==============  =========================================================================
``time``        items said in a period the question names, or about it, score more
``feedback``    a second BM25 round with the top hits' own words (off by default)
``session``     a hit gains from the best other hit of its sitting
``question``    a turn that asks scores down (the answer is the next turn)
``speaker``     about the asker, or asking advice: the assistant's turns score down
``current``     asked how things stand now, newer items of the head score up
``specific``    a hit holding words rare in the user's archive scores up (off by default)
``superseded``  a fact a newer version replaced scores down
``mmr``         diversity (only when a call passes ``mmr_lambda``)
==============  =========================================================================

A stage's ``name`` is the key it writes in :attr:`Hit.boosts <hmem.types.Hit.boosts>`
(``feedback`` writes :attr:`Hit.round <hmem.types.Hit.round>` instead). The stages after
``feedback`` reorder the head (the best ``rerank_depth``) and never change who is in it.
The pure scoring rules they apply live in :mod:`hmem.longterm._rank` and
:mod:`hmem.longterm.feedback`; a stage only gathers what its rule reads.

Example::

    >>> [s.name for s in default_stages()]
    ['time', 'session', 'question', 'speaker', 'current', 'superseded']
    >>> [s.name for s in default_stages(feedback=Feedback(rounds=2), specific=SpecificAnswers(0.3))]
    ['time', 'feedback', 'session', 'question', 'speaker', 'current', 'specific', 'superseded']
    >>> [s.name for s in default_stages(only=("session", "superseded"))]
    ['session', 'superseded']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol

from hmem.errors import ConfigError
from hmem.longterm import fusion as fz
from hmem.longterm._rank import (
    SESSION_SPAN,
    Scored,
    answered_by_the_user,
    asks_about_now,
    best_first,
    boosted_scores,
    boosts_read_items,
    demote_questions,
    demote_speaker,
    favour_newer,
    promote_specific,
    question_share,
    session_support,
    specificity,
)
from hmem.longterm.dates import query_period
from hmem.longterm.feedback import SCAN_CHARS, expansion_terms, merge_round
from hmem.longterm.index_text import MAX_INDEX_CHARS, dense_text
from hmem.longterm.supersede import is_superseded
from hmem.types import MemoryItem

if TYPE_CHECKING:
    from hmem.protocols import Embedder, LexicalIndex

__all__ = [
    "STAGE_NAMES", "CurrentState", "Diversity", "Feedback", "QuestionDemotion", "RankStage", "Ranking", "SessionSupport",
    "SpeakerPrior", "SpecificAnswers", "SupersededDemotion", "TimeBoost", "check_stage_names", "default_stages",
]

#: A feedback round contrasts its top hits with this many of the previous round's best
#: candidates (the background of :func:`~hmem.longterm.feedback.expansion_terms`).
FEEDBACK_BACKGROUND = 30


class Candidates(Protocol):
    """The confirmed candidates of one recall and their items, read when first needed."""

    def __contains__(self, doc_id: object) -> bool: ...
    def __getitem__(self, doc_id: str) -> MemoryItem: ...
    def get(self, doc_id: str) -> MemoryItem | None: ...
    def confirm(self, ids: Iterable[str]) -> None: ...
    def fetch(self, ids: Iterable[str]) -> None: ...
    def first(self, order: Sequence[str], n: int) -> list[str]: ...


@dataclass(eq=False)
class Ranking:
    """One recall's working state after fusion: what the stages read and reorder.

    ``fused``: each candidate's fused score; ``scored``: its score after boosts and the
    boosts applied; ``order``: the ids best first; ``head``: how many of the best the
    stages re-rank; ``heads``/``kept``: each feedback round's head and the last round
    kept (:attr:`Hit.round <hmem.types.Hit.round>`). ``rescore`` turns fused scores into
    scored ones with the boosts of this recall (recency, importance, a period).
    """

    user_id: str
    query: str
    lexical_query: str
    k: int
    head: int
    depth: int
    now: datetime
    fusion: Literal["rrf", "weighted"]
    rrf_k: int
    allowed: set[str] | None
    candidates: Candidates
    lexical: LexicalIndex
    embedder: Embedder
    fused: dict[str, float]
    half_life: timedelta | None = None
    importance_weight: float = 0.0
    period: tuple[date, date] | None = None
    time_weight: float = 0.0
    scored: Scored = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    heads: list[tuple[int, set[str]]] = field(default_factory=list)
    kept: int = 1
    _said_in_period: dict[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.scored = self.rescore(self.fused)
        self.order = best_first(self.scored)
        self.heads = [(1, set(self.order[: self.head]))]

    def rescore(self, fused: Mapping[str, float]) -> Scored:
        """``fused`` with this recall's boosts applied (:func:`~hmem.longterm._rank.boosted_scores`)."""
        if boosts_read_items(self.half_life, self.importance_weight, period=self.period, time_weight=self.time_weight):
            self.candidates.fetch(fused)  # in one read, not one per item
        return boosted_scores(fused, self.candidates, self.now, self.half_life, self.importance_weight,  # type: ignore[arg-type]
                              period=self.period, time_weight=self.time_weight, said_in_period=self._said_in_period)

    def reorder_head(self, reorder: Callable[[list[str]], list[str]], extra: int = 0) -> None:
        """Put the first ``head + extra`` readable ids in the order ``reorder`` gives them."""
        pool = self.candidates.first(self.order, self.head + extra)
        held = set(pool)
        self.order = reorder(pool) + [d for d in self.order if d not in held]


class RankStage(Protocol):
    """One step of recall's ranking: reads and reorders a :class:`Ranking` in place."""

    name: ClassVar[str]

    def apply(self, ranking: Ranking) -> None: ...


@dataclass(frozen=True, slots=True)
class TimeBoost:
    """When the question names a date ("in July 2023", "last week", 上个月), items said
    in that period or referring to it score ``1 + weight`` times more. A boost, not a
    filter: old evidence is never buried."""

    weight: float = 0.2
    name: ClassVar[str] = "time"

    def apply(self, ranking: Ranking) -> None:
        period = query_period(ranking.query, ranking.now.date())
        if period is None:
            return
        ranking.candidates.fetch(ranking.fused)  # every candidate is dated: read them in one call
        ranking.period, ranking.time_weight = period, self.weight
        ranking.scored = ranking.rescore(ranking.fused)
        ranking.order = best_first(ranking.scored)
        ranking.heads = [(1, set(ranking.order[: ranking.head]))]


@dataclass(frozen=True, slots=True)
class Feedback:
    """Up to ``rounds - 1`` further rounds: BM25 again with the query expanded by
    ``terms`` words of the ``docs`` best hits, adding ``weight`` × what it finds
    (:func:`~hmem.longterm.feedback.merge_round`). A round that brings nothing new into
    the head is dropped and ends the loop."""

    rounds: int = 2
    docs: int = 3
    terms: int = 8
    weight: float = 0.2
    name: ClassVar[str] = "feedback"

    def apply(self, ranking: Ranking) -> None:
        r = ranking
        for round_no in range(2, self.rounds + 1):
            r.candidates.fetch(r.order[: max(r.k, FEEDBACK_BACKGROUND)])  # the leads and background, in one read
            leads = _distinct_sources(r.order, r.candidates, self.docs)
            more = self._search(r, leads)
            if not more:
                return  # no expansion words, or the search found nothing besides the leads
            merged = merge_round(r.fused, more, self.weight, leads=leads,
                                 rrf_k=r.rrf_k if r.fusion == "rrf" else None)
            merged = {d: v for d, v in merged.items() if d in r.candidates}  # drops the unconfirmed (see _search)
            rescored = r.rescore(merged)
            reordered = best_first(rescored)
            new_head = set(reordered[: r.head])
            if new_head <= set().union(*(held for _, held in r.heads)):
                return  # nothing new: not kept, and a next round would repeat it
            r.fused, r.scored, r.order, r.kept = merged, rescored, reordered, round_no
            r.heads.append((round_no, new_head))

    def _search(self, r: Ranking, leads: Sequence[str]) -> list[tuple[str, float]]:
        """BM25 (id, score) pairs, the ``leads`` left out, for the query expanded by the
        leads' words against the rest of the order. Items met for the first time among the
        round's head are confirmed; the deeper ones are not (the caller drops them after
        normalising): an item the first round did not find starts from 0, so it trails the
        head above it and cannot reach the head (unless a boost reorders them)."""
        background = [it.text for d in r.order[:FEEDBACK_BACKGROUND]
                      if d not in leads and (it := r.candidates.get(d)) is not None]  # None: deleted meanwhile
        terms = expansion_terms(r.lexical_query, [r.candidates[d].text for d in leads], background, self.terms)
        if not terms:
            return []
        extra = " ".join(terms)
        expanded = f"{r.lexical_query[: MAX_INDEX_CHARS - len(extra) - 1]} {extra}"
        found = [h for h in r.lexical.search(r.user_id, expanded, r.depth, allowed_ids=r.allowed) if h.id not in leads]
        r.candidates.confirm(h.id for h in found[: r.head])
        return [(h.id, h.score) for h in found]


@dataclass(frozen=True, slots=True)
class SessionSupport:
    """Each hit of the head gains ``weight`` × the score of the best other hit of its
    session said within ``span`` of it: the turn that answers often shares no word with
    the question but sits beside one that does (:func:`~hmem.longterm._rank.session_support`)."""

    weight: float = 0.3
    span: timedelta = SESSION_SPAN
    name: ClassVar[str] = "session"

    def apply(self, ranking: Ranking) -> None:
        def support(pool: list[str]) -> list[str]:
            places = {d: (it.session_id, it.created_at) if (it := ranking.candidates[d]).session_id else None
                      for d in pool}
            return session_support(pool, ranking.scored, places, self.weight, self.span)
        ranking.reorder_head(support)


@dataclass(frozen=True, slots=True)
class QuestionDemotion:
    """A turn that asks ("How did the kids like it?") scores ``1 - weight × share`` times
    its score, share being the part of its sentences that are questions. After session
    support: a question still tells which session is on the topic, it is only a poor answer.

    When what the user said answers the question (about the asker, or a request for
    advice: :func:`~hmem.longterm._rank.answered_by_the_user`), the user's own turns are
    left alone: a user's request ("is swimming any good for this? I hate gyms") says what
    they want and like, and the turn after it is the assistant's reply, not theirs."""

    weight: float = 0.5
    name: ClassVar[str] = "question"

    def apply(self, ranking: Ranking) -> None:
        spare_user = answered_by_the_user(ranking.query)

        def demote(pool: list[str]) -> list[str]:
            shares = {d: question_share(it.text) for d in pool
                      if (it := ranking.candidates[d]).kind == "turn" and not (spare_user and _role(it) == "user")}
            return demote_questions(pool, ranking.scored, shares, self.weight)
        ranking.reorder_head(demote)


@dataclass(frozen=True, slots=True)
class SpeakerPrior:
    """A question about the one asking ("Which roaster did I buy from?", 我住在哪里?;
    :func:`~hmem.longterm._rank.asks_about_the_user`), or a request for advice that suits
    them ("what would you suggest for me?"; :func:`~hmem.longterm._rank.asks_for_advice`),
    is answered by what the user said: the assistant's turns of the head score
    ``1 - weight`` times theirs. A question about what the assistant said ("the plan you
    drew up", "what did you recommend"), or in the third person, is left alone; so are
    items without a role (facts) and the user's turns.
    After session support: an assistant reply still tells which sitting is on the topic."""

    weight: float = 0.3
    name: ClassVar[str] = "speaker"

    def apply(self, ranking: Ranking) -> None:
        if not answered_by_the_user(ranking.query):
            return

        def demote(pool: list[str]) -> list[str]:
            roles = {d: _role(ranking.candidates[d]) for d in pool}
            return demote_speaker(pool, ranking.scored, roles, self.weight)
        ranking.reorder_head(demote)


@dataclass(frozen=True, slots=True)
class CurrentState:
    """A question about how things stand now ("What phone am I using these days?", 我现在
    住在哪里？; :func:`~hmem.longterm._rank.asks_about_now`) is answered by the newest
    of what was said on it: each hit of the head scores up to ``1 + weight`` times more,
    by where it was said between the head's oldest and newest item
    (:func:`~hmem.longterm._rank.favour_newer`). A tilt, not a filter: the head's order
    by topic stays, and an old statement the question matches far better keeps its place.
    ``superseded`` does this for facts a newer version replaced; a turn has no such link."""

    weight: float = 0.2
    name: ClassVar[str] = "current"

    def apply(self, ranking: Ranking) -> None:
        if not asks_about_now(ranking.query):
            return

        def tilt(pool: list[str]) -> list[str]:
            said_at = {d: ranking.candidates[d].created_at for d in pool}
            return favour_newer(pool, ranking.scored, said_at, self.weight)
        ranking.reorder_head(tilt)


def _role(item: MemoryItem) -> str | None:
    role = item.metadata.get("role") if item.kind == "turn" else None
    return role if isinstance(role, str) else None


@dataclass(frozen=True, slots=True)
class SpecificAnswers:
    """A hit holding words rare in the user's archive (held by at most ``share`` of
    their documents, and not in the question) scores up to ``1 + weight`` times more
    (:func:`~hmem.longterm._rank.specificity`). In a small archive no word is rare."""

    weight: float = 0.3
    share: float = 0.008
    name: ClassVar[str] = "specific"

    def apply(self, ranking: Ranking) -> None:
        def promote(pool: list[str]) -> list[str]:
            texts = [ranking.query[:SCAN_CHARS], *(ranking.candidates[d].text[:SCAN_CHARS] for d in pool)]
            stats = ranking.lexical.term_stats(ranking.user_id, texts)
            asked = stats.terms[0].keys()
            specific = {d: specificity(terms, stats.documents, asked, self.share)
                        for d, terms in zip(pool, stats.terms[1:], strict=True)}
            return promote_specific(pool, ranking.scored, specific, self.weight)
        ranking.reorder_head(promote)


@dataclass(frozen=True, slots=True)
class SupersededDemotion:
    """A fact a newer version of its claim superseded (:mod:`hmem.longterm.supersede`)
    scores ``weight`` times its score: the newer version ranks first, the old stays
    findable. The head grows by as many items as it demotes (those below may move up)."""

    weight: float = 0.5
    name: ClassVar[str] = "superseded"

    def apply(self, ranking: Ranking) -> None:
        shown = ranking.candidates.first(ranking.order, ranking.head)
        stale = sum(is_superseded(ranking.candidates[d]) for d in shown)
        if not stale or self.weight >= 1.0:
            return

        def demote(pool: list[str]) -> list[str]:
            for d in pool:
                if is_superseded(ranking.candidates[d]):
                    score, boosts = ranking.scored[d]
                    ranking.scored[d] = (score * self.weight, {**boosts, "superseded": self.weight})
            return sorted(pool, key=lambda d: (-ranking.scored[d][0], d))
        ranking.reorder_head(demote, extra=stale)


@dataclass(frozen=True, slots=True)
class Diversity:
    """Maximal marginal relevance over the best ``max(3k, 30)``: ``lambda_`` 1 is pure
    relevance, 0 pure novelty (``Hit.boosts["mmr"]``: the MMR score). Per call
    (``mmr_lambda``), never a default stage."""

    lambda_: float
    name: ClassVar[str] = "mmr"

    def apply(self, ranking: Ranking) -> None:
        if not ranking.order:
            return
        r = ranking
        pool = r.candidates.first(r.order, max(r.k * 3, 30))
        vecs = dict(zip(pool, r.embedder.embed([dense_text(r.candidates[d]) for d in pool]), strict=True))
        picked = fz.mmr(pool, {d: r.scored[d][0] for d in pool}, vecs, r.k, self.lambda_)
        for d, mmr_score in picked:
            r.scored[d][1]["mmr"] = mmr_score
        r.order = [d for d, _ in picked]


#: The default stages' names, in the order they run.
STAGE_NAMES = ("time", "feedback", "session", "question", "speaker", "current", "specific", "superseded")


def check_stage_names(names: object, what: str = "recall_stages") -> tuple[str, ...]:
    """``names`` (a sequence, or one comma-separated string) as a tuple of known stage
    names; a :class:`~hmem.errors.ConfigError` names an unknown one and lists the rest.

    >>> check_stage_names("session, time")
    ('session', 'time')
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not isinstance(names, list | tuple | frozenset | set):
        raise ConfigError(f"{what} must be a list of stage names from {list(STAGE_NAMES)}, got {names!r}")
    out = tuple(str(n) for n in names)
    unknown = [n for n in out if n not in STAGE_NAMES]
    if unknown:
        raise ConfigError(f"{what}: unknown stage(s) {unknown}; the stages are {list(STAGE_NAMES)}")
    return out


def default_stages(
    *, only: Iterable[str] | None = None, time: TimeBoost = TimeBoost(), feedback: Feedback = Feedback(rounds=1),
    session: SessionSupport = SessionSupport(), question: QuestionDemotion = QuestionDemotion(),
    speaker: SpeakerPrior = SpeakerPrior(), current: CurrentState = CurrentState(),
    specific: SpecificAnswers = SpecificAnswers(weight=0.0), superseded: SupersededDemotion = SupersededDemotion(),
) -> tuple[RankStage, ...]:
    """The stages recall runs, in order: the one place that lists them. A stage whose
    weight turns it off (0; ``superseded`` 1; ``feedback`` one round: the defaults of
    ``feedback`` and ``specific``) is left out, and so is one not named in ``only``."""
    chosen = None if only is None else set(check_stage_names(tuple(only)))
    stages: tuple[tuple[RankStage, bool], ...] = (
        (time, bool(time.weight)),
        (feedback, feedback.rounds > 1),
        (session, bool(session.weight)),
        (question, bool(question.weight)),
        (speaker, bool(speaker.weight)),
        (current, bool(current.weight)),
        (specific, bool(specific.weight)),
        (superseded, superseded.weight < 1.0),
    )
    return tuple(s for s, on in stages if on and (chosen is None or s.name in chosen))


def _distinct_sources(order: Sequence[str], candidates: Candidates, n: int) -> list[str]:
    # A fact and the turn it was extracted from say the same thing twice: counting both
    # would double their words' weight and leave one fewer lead.
    out: list[str] = []
    sources: set[str] = set()
    for d in order:
        item = candidates.get(d)
        if item is None:
            continue  # deleted since it was confirmed
        source = item.source_message_id or d
        if source not in sources:
            sources.add(source)
            out.append(d)
            if len(out) == n:
                break
    return out
