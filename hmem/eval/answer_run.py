"""The ``answer`` configuration of ``hmem eval``: is the gold answer in the prompt?

For every question with gold evidence and a real answer (abstention and LoCoMo
adversarial questions are skipped: their "answer" is that nothing was said), and for
every budget, :meth:`Memory.context` assembles a prompt in a fresh session with the
question as query. Per question and budget it records:

- ``strict`` / ``loose``: :func:`hmem.eval.answers.containment` of the gold answer in
  the joined ``content`` of every returned message;
- ``evidence``: the share of the question's gold turns whose archived turn, or a fact
  extracted from it, was kept in the recalled tier;
- ``tokens``: the prompt's size (``ctx.tokens``).

:func:`summarise_answers` averages them per budget, overall and per category.

Example::

    >>> r = AnswerRecord("q1", "temporal", 500, strict=True, loose=True, evidence=1.0, tokens=420)
    >>> s = summarise_answers([r], (500,))[500]
    >>> s.overall.loose, s.overall.mean_tokens, s.per_category["temporal"].questions
    (1.0, 420.0, 1)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hmem.errors import InvalidInput
from hmem.eval.answers import containment
from hmem.eval.locomo import ADVERSARIAL_ANSWER
from hmem.eval.metrics import QuestionResult
from hmem.eval.model import EvalQuestion
from hmem.longterm.types import check_k
from hmem.types import renamed

if TYPE_CHECKING:
    from hmem.memory import Memory
    from hmem.types import AssembledContext

__all__ = [
    "ANSWER_BUDGETS",
    "AnswerRecord",
    "AnswerResult",
    "AnswerStats",
    "AnswerSummary",
    "answerable",
    "ask_answers",
    "check_answer_budgets",
    "check_context_k",
    "context_text",
    "recalled_turns",
    "summarise_answers",
]

#: Budgets of the ``answer`` configuration (tokens): a small prompt up to Mem0's
#: ~1.8K tokens per question and beyond.
ANSWER_BUDGETS: tuple[int, ...] = (500, 1000, 2000, 4000)
_NO_ANSWER_CATEGORIES = frozenset({"abstention", "adversarial"})


def check_answer_budgets(budgets: object) -> tuple[int, ...]:
    """Distinct positive integer budgets, ascending, or :class:`InvalidInput`.

    >>> check_answer_budgets([2000, 500, 2000])
    (500, 2000)
    """
    if isinstance(budgets, str | bytes) or not isinstance(budgets, Iterable):
        raise InvalidInput(f"answer_budgets must be a list of positive integers, got {budgets!r}",
                           field="answer_budgets")
    values = list(budgets)
    for b in values:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise InvalidInput(f"answer_budgets must be positive integers (tokens), got {b!r}", field="answer_budgets")
    if not values:
        raise InvalidInput("answer_budgets must hold at least one budget, e.g. (500, 1000, 2000, 4000)",
                           field="answer_budgets")
    return tuple(sorted(set(values)))


def check_context_k(k: object) -> int | None:
    """``None`` (``Memory.context``'s own depth) or a recall ``k`` (1 to ``MAX_K``).

    >>> check_context_k(None), check_context_k(100)
    (None, 100)
    """
    if k is None:
        return None
    try:
        return check_k(k)
    except InvalidInput as exc:
        raise renamed(exc, {"k": "context_k"}) from None


def answerable(question: EvalQuestion) -> bool:
    """True when the question has gold evidence and an answer that says something.

    >>> answerable(EvalQuestion("q", "c", "Where?", "Lisbon", ("D1:1",), "single-hop"))
    True
    >>> answerable(EvalQuestion("q", "c", "Where?", ADVERSARIAL_ANSWER, ("D1:1",), "adversarial"))
    False
    """
    answer = question.answer.strip()
    return (bool(question.evidence) and bool(answer) and question.category not in _NO_ANSWER_CATEGORIES
            and answer.casefold() != ADVERSARIAL_ANSWER)


def context_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text a model reads: every message's ``content`` (plain or text parts), joined.

    >>> context_text([{"role": "system", "content": "a"}, {"role": "user", "content": [{"type": "text", "text": "b"}]}])
    'a\\nb'
    """
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return "\n".join(parts)


def recalled_turns(mem: Memory, user_id: str, ctx: AssembledContext) -> list[str]:
    """Source turn ids of the items kept in the recalled tier, distinct, best first
    (a fact extracted from a turn maps to that turn; ``items(ids=)`` keeps the order)."""
    kept = [r.ref for r in ctx.report.items if r.tier == "recalled" and r.kept]
    found = mem.items(user_id, ids=kept)
    return list(dict.fromkeys(item.source_message_id for item in found if item.source_message_id))


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """What the prompt at one budget held for one question."""

    question_id: str
    category: str
    budget: int
    strict: bool
    loose: bool
    evidence: float
    tokens: int


@dataclass(frozen=True, slots=True)
class AnswerStats:
    """Means over ``questions`` records; every mean is None when there are none."""

    questions: int
    strict: float | None
    loose: float | None
    evidence: float | None
    mean_tokens: float | None

    def to_dict(self) -> dict[str, float | int | None]:
        return {"strict": self.strict, "loose": self.loose, "evidence": self.evidence,
                "mean_tokens": self.mean_tokens, "questions": self.questions}


@dataclass(frozen=True, slots=True)
class AnswerSummary:
    """One budget: overall and per category (first-seen order)."""

    budget: int
    overall: AnswerStats
    per_category: Mapping[str, AnswerStats]

    def to_dict(self) -> dict[str, Any]:
        return {**self.overall.to_dict(), "per_category": {c: s.to_dict() for c, s in self.per_category.items()}}


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """Everything the ``answer`` configuration measured: ``k`` None = context's default depth."""

    budgets: tuple[int, ...]
    k: int | None
    summaries: Mapping[int, AnswerSummary]
    records: tuple[AnswerRecord, ...] = field(default=())


def _stats(records: Sequence[AnswerRecord]) -> AnswerStats:
    n = len(records)
    if not n:
        return AnswerStats(0, None, None, None, None)
    return AnswerStats(
        questions=n,
        strict=sum(r.strict for r in records) / n,
        loose=sum(r.loose for r in records) / n,
        evidence=sum(r.evidence for r in records) / n,
        mean_tokens=sum(r.tokens for r in records) / n,
    )


def summarise_answers(records: Iterable[AnswerRecord], budgets: Sequence[int]) -> dict[int, AnswerSummary]:
    """Means per budget (every budget in ``budgets`` appears, even without records)."""
    by_budget: dict[int, list[AnswerRecord]] = {b: [] for b in check_answer_budgets(budgets)}
    for r in records:
        if r.budget not in by_budget:
            raise InvalidInput(f"record of {r.question_id!r} has budget {r.budget}, not one of {list(by_budget)}",
                               field="budget")
        by_budget[r.budget].append(r)
    out: dict[int, AnswerSummary] = {}
    for budget, rows in by_budget.items():
        cats: dict[str, list[AnswerRecord]] = {}
        for r in rows:
            cats.setdefault(r.category, []).append(r)
        out[budget] = AnswerSummary(budget, _stats(rows), {c: _stats(v) for c, v in cats.items()})
    return out


def ask_answers(
    mem: Memory, questions: Iterable[EvalQuestion], *, budgets: Sequence[int], k: int | None, session_id: str
) -> tuple[list[QuestionResult], AnswerResult]:
    """Ask every question at every budget; return per-question recall inputs (the turns
    kept at the largest budget, latency of that call) and the answer measure.

    Unanswerable questions are asked once, at the largest budget, so the recall report
    covers the same questions as every other configuration.
    """
    ordered = check_answer_budgets(budgets)
    depth = check_context_k(k)
    results: list[QuestionResult] = []
    records: list[AnswerRecord] = []
    for q in questions:
        scored = answerable(q)
        asked = ordered if scored else ordered[-1:]
        gold = set(q.evidence)
        turns: list[str] = []
        elapsed = 0.0
        for budget in asked:
            start = time.perf_counter()
            ctx = mem.context(q.conversation_id, session_id, query=q.question, budget=budget, k=depth)
            elapsed = time.perf_counter() - start
            turns = recalled_turns(mem, q.conversation_id, ctx)
            if scored:
                found = containment(q.answer, context_text(ctx.messages))
                records.append(AnswerRecord(q.id, q.category, budget, found.strict, found.loose,
                                            len(gold.intersection(turns)) / len(gold), ctx.tokens))
        results.append(QuestionResult(q.id, q.category, tuple(q.evidence), tuple(turns), elapsed))
    return results, AnswerResult(ordered, depth, summarise_answers(records, ordered), tuple(records))
