"""Ranking of hybrid recall (pure): fuse the two retrievers, boost, order, report.

:meth:`hmem.longterm.store.LongTermStore.recall` fetches the candidates (I/O); these
functions turn them into :class:`~hmem.types.Hit` values best first.

Example::

    >>> from hmem.protocols import ScoredId
    >>> fused = fusion_weighted([ScoredId("a", 3.0), ScoredId("b", 1.0)], [ScoredId("b", 0.9)], 0.6, 0.4)
    >>> fused
    {'a': 0.6, 'b': 0.4}
    >>> best_first({"a": (0.4, {}), "b": (0.6, {})})
    ['b', 'a']
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from datetime import date, datetime, timedelta

from hmem.longterm import fusion as fz
from hmem.longterm.dates import mentions_period
from hmem.longterm.index_text import sentences
from hmem.protocols import ScoredId
from hmem.session.extractive import FIRST_PERSON
from hmem.types import Hit, MemoryItem

__all__ = [
    "SESSION_SPAN", "SPECIFIC_TERMS", "Scored", "answered_by_the_user", "asks_about_now", "asks_about_the_user",
    "asks_for_advice", "best_first", "boosted_scores", "boosts_read_items", "demote_questions", "demote_speaker", "favour_newer",
    "fusion_rrf", "fusion_weighted", "promote_specific", "question_share", "session_support", "specificity", "to_hits",
]

#: Per item id: the score after boosts, and the boosts applied (name -> factor).
Scored = dict[str, tuple[float, dict[str, float]]]


def fusion_rrf(lexical: Sequence[ScoredId], dense: Sequence[ScoredId], k: int) -> dict[str, float]:
    """Reciprocal rank fusion of the two rankings."""
    return fz.rrf({"lexical": [h.id for h in lexical], "dense": [h.id for h in dense]}, k)


def fusion_weighted(
    lexical: Sequence[ScoredId], dense: Sequence[ScoredId], lexical_weight: float, dense_weight: float
) -> dict[str, float]:
    """Min-max weighted fusion of the two retrievers' scores."""
    # A negative BM25 score (query terms in over half of a tiny corpus: rank_bm25's idf
    # floor) is no evidence; min-max would stretch those near-ties to the full [0, 1].
    return fz.weighted(
        {"lexical": {h.id: max(h.score, 0.0) for h in lexical}, "dense": {h.id: h.score for h in dense}},
        {"lexical": lexical_weight, "dense": dense_weight},
    )


def boosted_scores(
    fused: Mapping[str, float],
    items: Mapping[str, MemoryItem],
    now: datetime,
    half_life: timedelta | None,
    importance_weight: float,
    *,
    period: tuple[date, date] | None = None,
    time_weight: float = 0.0,
    said_in_period: dict[str, bool] | None = None,
) -> Scored:
    """Each fused score multiplied by the recency factor (when ``half_life`` is given),
    the importance boost (when ``importance_weight`` is not 0) and, when the question
    names a ``period``, ``1 + time_weight`` for items said in it or referring to it
    (:func:`~hmem.longterm.dates.mentions_period`; ``said_in_period`` caches that answer
    by item id across the rounds of one recall).

    >>> from datetime import UTC
    >>> july = MemoryItem("a", "u", "Last week I went camping.", created_at=datetime(2023, 8, 3, tzinfo=UTC))
    >>> boosted_scores({"a": 0.5}, {"a": july}, now=datetime(2024, 1, 1, tzinfo=UTC), half_life=None,
    ...                importance_weight=0.0, period=(date(2023, 7, 1), date(2023, 7, 31)), time_weight=0.5)
    {'a': (0.75, {'time': 1.5})}
    """
    if not boosts_read_items(half_life, importance_weight, period=period, time_weight=time_weight):
        return {doc_id: (base, {}) for doc_id, base in fused.items()}  # ``items`` is not read
    scored: Scored = {}
    for doc_id, base in fused.items():
        boosts: dict[str, float] = {}
        score = base
        item = items[doc_id]
        in_period = None if said_in_period is None else said_in_period.get(doc_id)
        if in_period is None and period is not None and time_weight:
            # Dates are resolved once per item and recall: the feedback round scores the same items again.
            in_period = mentions_period(item.text, item.created_at.date(), period)
            if said_in_period is not None:
                said_in_period[doc_id] = in_period
        if in_period:
            boosts["time"] = 1.0 + time_weight
            score *= boosts["time"]
        if half_life is not None:
            boosts["recency"] = fz.recency_factor((now - item.created_at).total_seconds(), half_life.total_seconds())
            score *= boosts["recency"]
        if importance_weight:
            boosts["importance"] = fz.importance_factor(item.importance, importance_weight)
            score *= boosts["importance"]
        scored[doc_id] = (score, boosts)
    return scored


def boosts_read_items(
    half_life: timedelta | None, importance_weight: float, *, period: tuple[date, date] | None, time_weight: float
) -> bool:
    """Whether :func:`boosted_scores` with these knobs reads the items (to boost them);
    when not, recall needs only the candidates' ids to rank them.

    >>> boosts_read_items(None, 0.0, period=None, time_weight=0.2)
    False
    """
    return half_life is not None or bool(importance_weight) or (period is not None and bool(time_weight))


#: Session support counts only hits said this close in time: one sitting. A deployment
#: that keeps one session per user for months (the proxy's ``default`` session) would
#: otherwise lift every hit by the best one, and the relevance cut-off would cut nothing.
SESSION_SPAN = timedelta(hours=1)


def session_support(
    pool: Sequence[str], scored: Scored, place_of: Mapping[str, tuple[str, datetime] | None], weight: float,
    span: timedelta = SESSION_SPAN,
) -> list[str]:
    """``pool`` best first after each hit gains ``weight`` × the score of the best *other*
    hit of its session said within ``span`` of it (``place_of``: session id and time; an
    item without a session gains nothing).

    A conversation stays on a topic for a while: the turn that answers a question often
    shares no word with it, but sits in the session of the turn that does. The gain is
    recorded in ``scored`` as the factor ``boosts["session"]`` (score after / before); a
    hit scored 0 stays at 0 (no evidence of its own). Pure; ``scored`` is updated in place.

    >>> t = datetime(2024, 5, 1, 20, 0)
    >>> scored = {"q": (1.0, {}), "a": (0.4, {}), "x": (0.5, {})}
    >>> session_support(["q", "x", "a"], scored, {"q": ("s1", t), "a": ("s1", t), "x": ("s2", t)}, 0.3)
    ['q', 'a', 'x']
    >>> scored["a"]
    (0.7, {'session': 1.75})
    """
    by_session: dict[str, list[tuple[datetime, float, str]]] = {}
    for d in pool:
        if (place := place_of.get(d)) is not None:
            by_session.setdefault(place[0], []).append((place[1], scored[d][0], d))
    gains: dict[str, float] = {}
    for said in by_session.values():
        said.sort()
        one_sitting = said[-1][0] - said[0][0] <= span  # the usual case: the two best serve every hit
        top = sorted((v for _, v, _ in said), reverse=True)[:2] if one_sitting else []
        for i, (_when, own, d) in enumerate(said):
            if own <= 0:
                continue  # no evidence of its own
            if not one_sitting:
                best = _best_within(said, i, span)
            elif own < top[0]:
                best = top[0]
            else:  # it is the best (or tied for it): the second best supports it
                best = top[1] if len(top) > 1 else 0.0
            if best > 0:
                gains[d] = weight * best
    for d, gain in gains.items():  # applied after: a gain never feeds another hit's gain
        own, boosts = scored[d]
        scored[d] = (own + gain, {**boosts, "session": round((own + gain) / own, 6)})
    return sorted(pool, key=lambda d: (-scored[d][0], d))


def question_share(text: str) -> float:
    """The share of ``text``'s sentences that are questions (end in ``?`` or ``？``) about
    someone other than the speaker.

    A turn that asks ("How did the kids like it?") says little that answers a later
    question about its topic: the answer is the next turn, whose BM25 key already holds
    the question (:mod:`hmem.longterm.index_text`). A question in the first person ("how
    do I turn the scale red below 92%, our SLA?") is how a user tells an assistant about
    themselves: it counts as a statement. (In the assistant-shaped dev chats a third of
    the evidence turns ask something; in LoCoMo's, questions about the other speaker are
    the ones evidence avoids: docs/bench-ablation.md.)

    >>> question_share("Wow, Mel! How'd they like it?"), question_share("We went camping."), question_share("")
    (0.5, 0.0, 0.0)
    >>> question_share("Can I swap the oat milk in my flat white?")
    0.0
    """
    said = sentences(text)
    if not said:
        return 0.0
    return sum(1 for s in said if ("?" in s[-3:] or "\uff1f" in s[-3:]) and not FIRST_PERSON.search(s)) / len(said)


def demote_questions(pool: Sequence[str], scored: Scored, share_of: Mapping[str, float], weight: float) -> list[str]:
    """``pool`` best first after each hit's score is multiplied by ``1 - weight × share``
    (``share_of``: its :func:`question_share`; a hit not in it is left alone), recorded
    as the factor ``boosts["question"]``. Pure; ``scored`` is updated in place.

    >>> scored = {"ask": (1.0, {}), "tell": (0.8, {})}
    >>> demote_questions(["ask", "tell"], scored, {"ask": 1.0, "tell": 0.0}, 0.3)
    ['tell', 'ask']
    >>> scored["ask"]
    (0.7, {'question': 0.7})
    """
    return _rescale(pool, scored, {d: 1.0 - weight * share for d, share in share_of.items()}, "question")


#: The asker in the first person singular ("we" may be the user and the assistant: "when
#: we worked through the formula…"; 我们 likewise).
_ASKER = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|me|my|mine|myself)\b|我(?!们)", re.IGNORECASE)
#: A question that addresses the assistant ("the plan you drew up", 你推荐的) asks for
#: what the assistant said.
_ADDRESSED = re.compile(r"\b(?:you|you're|you've|you'll|you'd|your|yours|yourself)\b|你|您", re.IGNORECASE)


def asks_about_the_user(question: str) -> bool:
    """Whether ``question`` asks about the one asking and not about what the other side
    said: it holds a first-person singular word (I, my, me, 我) and no second-person one
    (you, your, 你, 您).

    In a user↔assistant chat, what the user lives, owns, plans and likes was said by the
    user; the assistant's replies echo it at length ("Since your Gaggia…") and crowd the
    user's own statement out of the first hits. A question that addresses the assistant
    ("which tune did you set for week 3?") asks for the assistant's words, and is left alone.

    >>> asks_about_the_user("Which herb should I leave out for Maya?"), asks_about_the_user("我住在哪里？")
    (True, True)
    >>> asks_about_the_user("Which routine did you draw up for me?"), asks_about_the_user("When did we meet?")
    (False, False)
    >>> asks_about_the_user("What does Caroline paint?")
    False
    """
    return bool(_ASKER.search(question)) and not _ADDRESSED.search(question)


#: A request for advice or a recommendation ("what would you suggest?", 有咩建議).
_ADVICE = re.compile(r"\b(?:recommend|recommendations?|suggest|suggestions?|ideas?|advice|advise|tips?)\b"
                     r"|推荐|推介|推薦|建议|建議|主意|点子|點子", re.IGNORECASE)
#: Words that ask back about advice already given ("what did you recommend", 你当时建议).
_GIVEN = re.compile(r"\b(?:did|had|earlier|before|previously|last time|gave|suggested|recommended)\b"
                    r"|当时|當時|之前|上次|那次|以前|那时|那時", re.IGNORECASE)


def asks_for_advice(question: str) -> bool:
    """Whether ``question`` asks the assistant for a recommendation for the asker: it
    asks for advice, a suggestion or ideas, in the first or second person, and does not
    ask back about advice already given.

    What suits the user was said by the user: their likes, dislikes, gear and plans. The
    assistant's earlier replies on the topic echo those at length and crowd them out;
    "what did you recommend for…" asks for the reply itself, and is left alone. A
    question in the third person ("What advice does Caroline give?") is a question about
    someone, not a request.

    >>> asks_for_advice("Which tool would you recommend for drilling my vocabulary?")
    True
    >>> asks_for_advice("最近想找点连续剧看，你会推荐什么样的？")
    True
    >>> asks_for_advice("你当时建议温度和时长怎么设？"), asks_for_advice("What advice does Caroline give?")
    (False, False)
    """
    return (bool(_ADVICE.search(question)) and not _GIVEN.search(question)
            and bool(_ASKER.search(question) or _ADDRESSED.search(question)))


def answered_by_the_user(question: str) -> bool:
    """Whether what the user said answers ``question``: it asks about the asker
    (:func:`asks_about_the_user`) or for advice that suits them (:func:`asks_for_advice`)."""
    return asks_about_the_user(question) or asks_for_advice(question)


#: A question about how things stand now ("these days", "at the moment", 现在, 而家).
_NOW = re.compile(r"\b(?:now|nowadays|currently|current|these days|at the moment|at present|latest|most recent"
                  r"|any ?more)\b|现在|現在|目前|眼下|如今|而家|最新|当前|當前", re.IGNORECASE)


def asks_about_now(question: str) -> bool:
    """Whether ``question`` asks how things stand now: "What phone am I using these
    days?", "Who do I work for now?", 我现在住在哪里？

    >>> asks_about_now("Which city am I living in at the moment?"), asks_about_now("我目前每天吃什么药？")
    (True, True)
    >>> asks_about_now("Where did Caroline move from?"), asks_about_now("What do I know about snowboarding?")
    (False, False)
    """
    return bool(_NOW.search(question))


def favour_newer(pool: Sequence[str], scored: Scored, said_at: Mapping[str, datetime], weight: float) -> list[str]:
    """``pool`` best first after each hit's score is multiplied by ``1 + weight × t``,
    ``t`` being where it was said between the oldest (0) and the newest (1) hit of
    ``said_at`` — recorded as the factor ``boosts["current"]``. Pure; ``scored`` is
    updated in place; a pool said all at once is left alone.

    >>> from datetime import UTC
    >>> scored = {"old": (1.0, {}), "new": (0.9, {})}
    >>> said = {"old": datetime(2024, 1, 1, tzinfo=UTC), "new": datetime(2024, 6, 1, tzinfo=UTC)}
    >>> favour_newer(["old", "new"], scored, said, 0.2), scored["new"]
    (['new', 'old'], (1.08, {'current': 1.2}))
    """
    if not said_at:
        return list(pool)
    first, last = min(said_at.values()), max(said_at.values())
    if last <= first:
        return list(pool)
    span = (last - first).total_seconds()
    factors = {d: 1.0 + weight * (when - first).total_seconds() / span for d, when in said_at.items()}
    return _rescale(pool, scored, factors, "current")


def demote_speaker(pool: Sequence[str], scored: Scored, roles: Mapping[str, str | None], weight: float) -> list[str]:
    """``pool`` best first after each hit said by the assistant (``roles``: its role)
    is multiplied by ``1 - weight``, recorded as the factor ``boosts["speaker"]``. Pure;
    ``scored`` is updated in place.

    >>> scored = {"reply": (1.0, {}), "said": (0.8, {})}
    >>> demote_speaker(["reply", "said"], scored, {"reply": "assistant", "said": "user"}, 0.3)
    ['said', 'reply']
    >>> scored["reply"]
    (0.7, {'speaker': 0.7})
    """
    return _rescale(pool, scored, {d: 1.0 - weight for d, role in roles.items() if role == "assistant"}, "speaker")


#: At most this many rare words count towards :func:`specificity`: a long turn is not
#: more specific for being long.
SPECIFIC_TERMS = 3
#: ... counted per this many index terms of the text (about a two-sentence chat turn): a
#: 600-word reply holds a few rare words by chance, a short statement only when it names
#: something.
SPECIFIC_SPAN = 20


def specificity(terms: Mapping[str, int], documents: int, asked: Collection[str], share: float) -> float:
    """How specific a text is, 0 to 1: the part of :data:`SPECIFIC_TERMS` among its index
    ``terms`` (term → how many of the user's ``documents`` hold it) that are rare (held by
    at most ``share × documents``, and by at least one) and not ``asked`` (the question's
    own terms). In a small archive no word is rare and every text scores 0.

    "I'm reading *The Name of the Wind* by Patrick Rothfuss" holds words few turns hold;
    "Books can really inspire us!" holds none: asked for books, the first is the answer.

    >>> specificity({"rothfuss": 1, "wind": 2, "book": 40}, 500, {"book"}, 0.008)
    0.6666666666666666
    >>> specificity({"inspir": 30, "book": 40}, 500, {"book"}, 0.008)
    0.0

    A long text's rare words count per :data:`SPECIFIC_SPAN` terms (three rare words in
    a reply of 120 terms weigh half a rare word):

    >>> specificity({"rothfuss": 1, "wind": 2, "quill": 1, **{f"w{i}": 60 for i in range(117)}}, 500, set(), 0.008)
    0.16666666666666666
    """
    limit = share * documents
    rare = sum(1 for term, held in terms.items() if 0 < held <= limit and term not in asked)
    per_span = rare / max(1.0, len(terms) / SPECIFIC_SPAN)
    return min(per_span, SPECIFIC_TERMS) / SPECIFIC_TERMS


def promote_specific(pool: Sequence[str], scored: Scored, specificity_of: Mapping[str, float],
                     weight: float) -> list[str]:
    """``pool`` best first after each hit's score is multiplied by ``1 + weight ×
    specificity`` (:func:`specificity`; a hit not in ``specificity_of`` is left alone),
    recorded as the factor ``boosts["specific"]``. Pure; ``scored`` is updated in place.

    >>> scored = {"vague": (0.6, {}), "exact": (0.5, {})}
    >>> promote_specific(["vague", "exact"], scored, {"vague": 0.0, "exact": 1.0}, 0.3)
    ['exact', 'vague']
    >>> scored["exact"]
    (0.65, {'specific': 1.3})
    """
    return _rescale(pool, scored, {d: 1.0 + weight * spec for d, spec in specificity_of.items()}, "specific")


def _rescale(pool: Sequence[str], scored: Scored, factor_of: Mapping[str, float], name: str) -> list[str]:
    """``pool`` best first after the scores of the hits in ``factor_of`` are multiplied by
    their factor (1 leaves a hit alone), recorded as ``boosts[name]``."""
    for d in pool:
        factor = round(factor_of.get(d, 1.0), 6)
        if factor != 1.0:
            own, boosts = scored[d]
            scored[d] = (own * factor, {**boosts, name: factor})
    return sorted(pool, key=lambda d: (-scored[d][0], d))


def _best_within(said: Sequence[tuple[datetime, float, str]], i: int, span: timedelta) -> float:
    """The best score of ``said`` (sorted by time) other than ``i``'s, within ``span`` of it."""
    when, best = said[i][0], 0.0
    for j in range(i - 1, -1, -1):  # earlier
        if when - said[j][0] > span:
            break
        best = max(best, said[j][1])
    for j in range(i + 1, len(said)):  # later
        if said[j][0] - when > span:
            break
        best = max(best, said[j][1])
    return best


def best_first(scored: Scored) -> list[str]:
    """Item ids by score, highest first (ties by id, so the order is deterministic)."""
    return sorted(scored, key=lambda d: (-scored[d][0], d))


def to_hits(
    order: Sequence[str],
    scored: Scored,
    fused: Mapping[str, float],
    items: Mapping[str, MemoryItem],
    *,
    lexical: Sequence[ScoredId],
    dense: Sequence[ScoredId],
    rounds: Mapping[str, int] | None = None,
) -> list[Hit]:
    """The hits in ``order``, each with both retrievers' ranks and scores (of the first
    round) and the round that found it (``rounds``; 1 when not given)."""
    lex_pos = {h.id: (r, h.score) for r, h in enumerate(lexical, start=1)}
    dense_pos = {h.id: (r, h.score) for r, h in enumerate(dense, start=1)}
    hits = []
    for d in order:
        lr, ls = lex_pos.get(d, (None, None))
        dr, ds = dense_pos.get(d, (None, None))
        hits.append(Hit(item=items[d], score=scored[d][0], lexical_rank=lr, lexical_score=ls, dense_rank=dr,
                        dense_score=ds, boosts=scored[d][1], fused_score=fused[d],
                        round=rounds.get(d, 1) if rounds else 1))
    return hits
