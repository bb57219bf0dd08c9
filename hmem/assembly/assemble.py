"""The token-budgeted assembler: every tier in one budget, in a fixed priority order.

Priority (highest first): 1 system prompt (and system/developer messages found in the
buffer), 2 current turn (last user message + its tool calls/results), 3 recent history
(newest first, whole groups, contiguous), 4 rolling summary, 5 profile entries,
6 recalled items (best first). Items are whole or absent. The result never exceeds
the budget counted with ``tokenizer.count_messages`` over the final messages: the
greedy works on per-item estimates, then the rendered list is recounted exactly and
the lowest-priority items are dropped until it fits. See docs/assembly.md.

Example::

    >>> from hmem.tokens import get_tokenizer
    >>> from hmem.types import Message
    >>> ctx = assemble([Message(role="user", content="Where do I live?")],
    ...                tokenizer=get_tokenizer(), budget=500,
    ...                system_prompt="You are helpful.", summary="The user lives in Berlin.")
    >>> [m["role"] for m in ctx.messages], ctx.tokens <= 500
    (['system', 'user'], True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from hmem._checks import check_int_at_least, check_tokenizer, is_finite
from hmem._groups import group_messages, is_orphan_tool, split_current_turn
from hmem.assembly._fit import TRUNCATION_MARKER, drop_until_fits, greedy, memory_candidates, truncate_turn
from hmem.assembly._report import dropped_item, report_items, stop_reasons, summarize
from hmem.assembly._shares import flex_caps, tier_demand
from hmem.assembly._state import AssemblyState, Candidate, render_messages
from hmem.assembly.render import DEFAULT_TEMPLATE, ContextTemplate
from hmem.assembly.stopping import StopRule
from hmem.errors import BudgetError, InvalidInput
from hmem.protocols import Tokenizer
from hmem.types import (
    RELEVANCE_CUTOFF,
    TIERS,
    AssembledContext,
    Hit,
    Message,
    ProfileEntry,
    ReportItem,
    Tier,
    check_text,
    coerce_messages,
)

__all__ = [
    "MIN_EXCERPT_TOKENS",
    "RELEVANCE_CUTOFF",
    "TRUNCATION_MARKER",
    "UNCAPPED",
    "TierCaps",
    "assemble",
    "budget_for",
    "check_relevance_cutoff",
]

_PINNED_ROLES = frozenset({"system", "developer"})
#: Shortest excerpt: a sentence with its date and speaker.
MIN_EXCERPT_TOKENS = 16
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class TierCaps:
    """Largest share of the budget each optional tier may take (None = uncapped).

    Shares are maxima, not reservations: unused room goes to the next tier, so they
    may add up to more than 1. Defaults, measured with ``bench/bench_caps.py`` (gold
    evidence kept in the prompt when asking inside a conversation's last session, on
    our sample set and on LoCoMo): uncapped, a long session's history crowds out all
    long-term memory (LoCoMo, 600-token budget: 0.3% of the evidence kept), so history
    gets at most 0.4; recalled items may take up to 0.6, which kept the most evidence at
    every budget tried among caps that still leave history a large share; the summary
    (0.15) and profile (0.10) are compact by construction and a cap catches a runaway one.

    Example::

        >>> TierCaps(history=0.6).tokens("history", 1000)
        600
    """

    history: float | None = 0.4
    summary: float | None = 0.15
    profile: float | None = 0.10
    recalled: float | None = 0.6

    def __post_init__(self) -> None:
        for name in ("history", "summary", "profile", "recalled"):
            share = getattr(self, name)
            if share is None:
                continue
            if isinstance(share, bool) or not isinstance(share, int | float) or not is_finite(share):
                raise InvalidInput(f"caps.{name} must be a number in (0, 1] or None", field=f"caps.{name}")
            if not 0 < share <= 1:
                raise InvalidInput(f"caps.{name} must be in (0, 1] or None, got {share}", field=f"caps.{name}")

    def tokens(self, tier: Tier, budget: int) -> int | None:
        """The cap of ``tier`` in tokens for ``budget`` (None when uncapped)."""
        share: float | None = getattr(self, tier, None)
        return None if share is None else math.floor(share * budget)


#: No tier caps: strict priority order alone decides.
UNCAPPED = TierCaps(history=None, summary=None, profile=None, recalled=None)


def budget_for(model_window: int, reply_reserve: int = 2000, explicit: int | None = None) -> int:
    """The prompt budget: ``model_window - reply_reserve``, or ``explicit`` when given.

    An explicit budget must still leave ``reply_reserve`` tokens for the reply.

    Example::

        >>> budget_for(128_000), budget_for(8192, 1000), budget_for(8192, explicit=4000)
        (126000, 7192, 4000)
    """
    window = check_int_at_least(model_window, "model_window", 1)
    reserve = check_int_at_least(reply_reserve, "reply_reserve", 0)
    room = window - reserve
    if room <= 0:
        raise InvalidInput(
            f"reply_reserve ({reserve}) leaves no prompt room in a {window}-token window; lower it",
            field="reply_reserve",
        )
    if explicit is None:
        return room
    chosen = check_int_at_least(explicit, "explicit", 0)
    if chosen > room:
        raise InvalidInput(
            f"budget {chosen} leaves less than reply_reserve={reserve} tokens for the reply "
            f"in a {window}-token window; use at most {room} or lower reply_reserve",
            field="explicit",
        )
    return chosen


def assemble(
    messages: Sequence[Message],
    *,
    tokenizer: Tokenizer,
    budget: int,
    system_prompt: str | None = None,
    summary: str | None = None,
    profile: Sequence[ProfileEntry] = (),
    recalled: Sequence[Hit] = (),
    caps: TierCaps | None = TierCaps(),  # frozen, so a shared default is safe
    template: ContextTemplate = DEFAULT_TEMPLATE,
    truncate_current_turn: bool = False,
    relevance_cutoff: float | None = None,
    max_recalled: int | None = None,
    stop: StopRule | None = None,
    memory_budget: int | None = None,
    query: str | None = None,
    excerpt_tokens: int | None = None,
) -> AssembledContext:
    """Fit every tier into ``budget`` tokens; return OpenAI messages and a report.

    ``messages`` is the session buffer (oldest first); its last user message and what
    follows is the current turn. ``recalled`` is best first; the tier takes hits in that
    order until its share of the budget is used, the next hit scores below
    ``relevance_cutoff`` times the best hit's score, its estimated chance of holding the
    answer is not worth its tokens (``stop``, :mod:`hmem.assembly.stopping`), or
    ``max_recalled`` hits are in (the report's ``stopped_by`` says which).
    ``memory_budget`` bounds what summary, profile and recalled items take together.
    With ``excerpt_tokens``, a recalled item longer than that is rendered as its passage
    about ``query`` (:mod:`hmem.assembly.excerpt`). A tier's unused share goes to the
    tiers that want more (:mod:`hmem.assembly._shares`). Raises
    :class:`~hmem.errors.BudgetError` when the system prompt and current turn alone do
    not fit (unless ``truncate_current_turn``, which cuts the current user text and
    appends :data:`TRUNCATION_MARKER`), :class:`~hmem.errors.InvalidInput` on bad input.
    """
    buffer = coerce_messages(messages)
    counter = check_tokenizer(tokenizer)
    limit = check_int_at_least(budget, "budget", 0)
    prompt = None if system_prompt is None else check_text(system_prompt, "system_prompt")
    summary_text = None if summary is None else check_text(summary, "summary")
    entries = _check_seq(profile, ProfileEntry, "profile")
    hits = _check_seq(recalled, Hit, "recalled")
    for index, hit in enumerate(hits):
        if not is_finite(hit.score):
            raise InvalidInput(f"recalled[{index}].score must be finite", field=f"recalled[{index}].score")
    if caps is not None and not isinstance(caps, TierCaps):
        raise InvalidInput("caps must be a TierCaps or None", field="caps")
    if not isinstance(template, ContextTemplate):
        raise InvalidInput("template must be a ContextTemplate", field="template")
    if not isinstance(truncate_current_turn, bool):
        raise InvalidInput("truncate_current_turn must be a bool", field="truncate_current_turn")
    cutoff = check_relevance_cutoff(relevance_cutoff)
    if max_recalled is not None:
        max_recalled = check_int_at_least(max_recalled, "max_recalled", 0)
    if stop is not None and not isinstance(stop, StopRule):
        raise InvalidInput("stop must be a StopRule or None", field="stop")
    if memory_budget is not None:
        memory_budget = check_int_at_least(memory_budget, "memory_budget", 0)
    if excerpt_tokens is not None:
        excerpt_tokens = check_int_at_least(excerpt_tokens, "excerpt_tokens", MIN_EXCERPT_TOKENS)
    if query is not None and not isinstance(query, str):
        raise InvalidInput("query must be a string or None", field="query")

    report: list[ReportItem] = []
    before, turn = split_current_turn(buffer)
    system = None if prompt is None else Message(role="system", content=prompt, id="hmem.system_prompt")
    groups = group_messages(before)
    pinned: set[int] = set()
    history: list[Candidate] = []
    for index, group in enumerate(groups):
        if is_orphan_tool(group):
            report.append(dropped_item("history", group[0], counter, "orphan tool"))
        elif group[0].role in _PINNED_ROLES:
            pinned.add(index)
        elif _unanswered(group):
            report.extend(dropped_item("history", m, counter, "unanswered tool call") for m in group)
        else:
            refs = [(m.id, counter.count_message(m)) for m in group]
            history.append(Candidate("history", refs, sum(t for _, t in refs), group=index))
    kept_turn: list[Message] = []
    for group in group_messages(turn):
        if is_orphan_tool(group):
            report.append(dropped_item("current_turn", group[0], counter, "orphan tool"))
        elif _unanswered(group):  # the API rejects a tool call without its results
            report.extend(dropped_item("current_turn", m, counter, "unanswered tool call") for m in group)
        else:
            kept_turn.extend(group)

    state = AssemblyState(template, counter, prompt, system, groups, pinned, kept_turn, [])
    required = counter.count_messages(render_messages(state))
    truncated = 0
    if required > limit:
        if not truncate_current_turn or not kept_turn:
            raise BudgetError(
                f"the system prompt and current turn need {required} tokens but the budget is {limit}; "
                "raise the budget, shorten the system prompt or the message, "
                "or pass truncate_current_turn=True",
                required=required,
                budget=limit,
            )
        truncated = truncate_turn(state, limit, required)
        required = counter.count_messages(render_messages(state))

    # Priority order: history newest first, then summary, profile, recalled.
    state.candidates.extend(reversed(history))
    state.candidates.extend(memory_candidates(state, summary_text, entries, hits, report,
                                              relevance_cutoff=cutoff, max_recalled=max_recalled, stop=stop,
                                              query=query, excerpt_tokens=excerpt_tokens))
    cap_tokens = {tier: None if caps is None else caps.tokens(tier, limit) for tier in TIERS}
    cap_tokens = flex_caps(cap_tokens, tier_demand(state), limit - required)
    greedy(state, limit - required, cap_tokens, memory_budget)

    final = render_messages(state)
    total = counter.count_messages(final)
    if total > limit:
        final, total = drop_until_fits(state, limit)

    stopped = stop_reasons(state)
    report = report_items(state, counter, report)
    return AssembledContext(
        messages=[m.to_openai() for m in final],
        tokens=total,
        report=summarize(report, total, limit, cap_tokens, truncated, stopped),
        recalled=tuple(hits),
    )


def check_relevance_cutoff(value: object) -> float | None:
    """A relevance cut-off: None (off) or a share of the best hit's score in [0, 1).

    >>> check_relevance_cutoff(0.5), check_relevance_cutoff(None)
    (0.5, None)
    >>> check_relevance_cutoff(1.5)
    Traceback (most recent call last):
    hmem.errors.InvalidInput: relevance_cutoff must be a number in [0, 1) or None (off), got 1.5
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not is_finite(value) or not 0 <= value < 1:
        raise InvalidInput(f"relevance_cutoff must be a number in [0, 1) or None (off), got {value!r}",
                           field="relevance_cutoff")
    return float(value)


def _unanswered(group: Sequence[Message]) -> bool:
    """An assistant tool-call group missing a result: the API would reject it."""
    head = group[0]
    if head.role != "assistant" or not head.tool_calls:
        return False
    answered = {m.tool_call_id for m in group[1:]}
    return any(call.id not in answered for call in head.tool_calls)



def _check_seq(values: object, kind: type[_T], field_name: str) -> list[_T]:
    if isinstance(values, str | bytes | dict) or not isinstance(values, Sequence):
        raise InvalidInput(f"{field_name} must be a list of {kind.__name__}", field=field_name)
    for index, value in enumerate(values):
        if not isinstance(value, kind):
            raise InvalidInput(
                f"{field_name}[{index}] must be a {kind.__name__}, got {type(value).__name__}",
                field=f"{field_name}[{index}]",
            )
    return list(values)
