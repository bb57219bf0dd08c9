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
from dataclasses import dataclass, replace
from typing import TypeVar

from hmem.core.groups import group_messages, is_orphan_tool, split_current_turn
from hmem.core.render import DEFAULT_TEMPLATE, ContextTemplate
from hmem.errors import BudgetError, InvalidInput
from hmem.protocols import Tokenizer
from hmem.types import (
    TIERS,
    AssembledContext,
    AssemblyReport,
    DropReason,
    Hit,
    Message,
    ProfileEntry,
    ReportItem,
    Tier,
    TierReport,
    check_text,
    coerce_messages,
)

__all__ = ["TRUNCATION_MARKER", "UNCAPPED", "TierCaps", "assemble", "budget_for"]

#: Appended to the current turn's user text when ``truncate_current_turn`` cut it.
TRUNCATION_MARKER = "\n…[truncated by hmem: {n} tokens cut]"

_PINNED_ROLES = frozenset({"system", "developer"})
_T = TypeVar("_T")
_MEMORY_TIERS: tuple[Tier, ...] = ("summary", "profile", "recalled")


def _finite(value: float) -> bool:
    """math.isfinite that says False for an int too large for a float (it would raise)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


@dataclass(frozen=True, slots=True)
class TierCaps:
    """Largest share of the budget each optional tier may take (None = uncapped).

    Shares are maxima, not reservations: unused room goes to the next tier, so they
    may add up to more than 1. Defaults: recent history is the most useful context
    but, uncapped, a long session would crowd out all long-term memory, so it gets at
    most half; recalled items get the next biggest share (0.35) because they carry
    the facts the current question needs from other sessions; the summary (0.15) and
    profile (0.10) are compact by construction and a cap catches a runaway one.

    Example::

        >>> TierCaps(history=0.6).tokens("history", 1000)
        600
    """

    history: float | None = 0.5
    summary: float | None = 0.15
    profile: float | None = 0.10
    recalled: float | None = 0.35

    def __post_init__(self) -> None:
        for name in ("history", "summary", "profile", "recalled"):
            share = getattr(self, name)
            if share is None:
                continue
            if isinstance(share, bool) or not isinstance(share, int | float) or not _finite(share):
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
    window = _int_at_least(model_window, "model_window", 1)
    reserve = _int_at_least(reply_reserve, "reply_reserve", 0)
    room = window - reserve
    if room <= 0:
        raise InvalidInput(
            f"reply_reserve ({reserve}) leaves no prompt room in a {window}-token window; lower it",
            field="reply_reserve",
        )
    if explicit is None:
        return room
    chosen = _int_at_least(explicit, "explicit", 0)
    if chosen > room:
        raise InvalidInput(
            f"explicit budget {chosen} leaves less than reply_reserve={reserve} tokens for the reply "
            f"in a {window}-token window; use at most {room} or lower reply_reserve",
            field="explicit",
        )
    return chosen


@dataclass
class _Candidate:
    """An optional item: a history group or one rendered memory entry."""

    tier: Tier
    refs: list[tuple[str, int]]  # (ref, own tokens) per report line
    cost: int  # estimated tokens it adds to the prompt (separators/header included)
    group: int | None = None  # index into the history groups
    line: str | None = None
    source: str | None = None  # a recalled item's source message id
    kept: bool = False
    reason: DropReason | None = None


@dataclass
class _State:
    """Everything the final rendering needs; mutated only while fitting."""

    template: ContextTemplate
    counter: Tokenizer
    prompt: str | None
    system: Message | None
    before: list[list[Message]]  # groups before the current turn
    pinned: set[int]  # group indices always emitted
    turn: list[Message]  # current turn, orphans removed
    candidates: list[_Candidate]  # optional items in priority order


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
) -> AssembledContext:
    """Fit every tier into ``budget`` tokens; return OpenAI messages and a report.

    ``messages`` is the session buffer (oldest first); its last user message and what
    follows is the current turn. ``recalled`` is best first. Raises
    :class:`~hmem.errors.BudgetError` when the system prompt and current turn alone do
    not fit (unless ``truncate_current_turn``, which cuts the current user text and
    appends :data:`TRUNCATION_MARKER`), :class:`~hmem.errors.InvalidInput` on bad input.
    """
    buffer = coerce_messages(messages)
    counter = _check_tokenizer(tokenizer)
    limit = _int_at_least(budget, "budget", 0)
    prompt = None if system_prompt is None else check_text(system_prompt, "system_prompt")
    summary_text = None if summary is None else check_text(summary, "summary")
    entries = _check_seq(profile, ProfileEntry, "profile")
    hits = _check_seq(recalled, Hit, "recalled")
    for index, hit in enumerate(hits):
        if not _finite(hit.score):
            raise InvalidInput(f"recalled[{index}].score must be finite", field=f"recalled[{index}].score")
    if caps is not None and not isinstance(caps, TierCaps):
        raise InvalidInput("caps must be a TierCaps or None", field="caps")
    if not isinstance(template, ContextTemplate):
        raise InvalidInput("template must be a ContextTemplate", field="template")
    if not isinstance(truncate_current_turn, bool):
        raise InvalidInput("truncate_current_turn must be a bool", field="truncate_current_turn")

    report: list[ReportItem] = []
    before, turn = split_current_turn(buffer)
    system = None if prompt is None else Message(role="system", content=prompt, id="hmem.system_prompt")
    groups = group_messages(before)
    pinned: set[int] = set()
    history: list[_Candidate] = []
    for index, group in enumerate(groups):
        if is_orphan_tool(group):
            report.append(_dropped("history", group[0], counter, "orphan tool"))
        elif group[0].role in _PINNED_ROLES:
            pinned.add(index)
        elif _unanswered(group):
            report.extend(_dropped("history", m, counter, "unanswered tool call") for m in group)
        else:
            refs = [(m.id, counter.count_message(m)) for m in group]
            history.append(_Candidate("history", refs, sum(t for _, t in refs), group=index))
    kept_turn: list[Message] = []
    for group in group_messages(turn):
        if is_orphan_tool(group):
            report.append(_dropped("current_turn", group[0], counter, "orphan tool"))
        elif _unanswered(group):  # the API rejects a tool call without its results
            report.extend(_dropped("current_turn", m, counter, "unanswered tool call") for m in group)
        else:
            kept_turn.extend(group)

    state = _State(template, counter, prompt, system, groups, pinned, kept_turn, [])
    required = counter.count_messages(_render(state))
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
        truncated = _truncate_turn(state, limit, required)
        required = counter.count_messages(_render(state))

    # Priority order: history newest first, then summary, profile, recalled.
    state.candidates.extend(reversed(history))
    state.candidates.extend(_memory_candidates(state, summary_text, entries, hits, report))
    _greedy(state, limit - required, caps, limit)

    final = _render(state)
    total = counter.count_messages(final)
    if total > limit:
        final, total = _drop_until_fits(state, limit)

    report = _report_items(state, counter, report)
    return AssembledContext(
        messages=[m.to_openai() for m in final],
        tokens=total,
        report=_summarize(report, total, limit, caps, truncated),
    )


# -- building blocks ----------------------------------------------------------------


def _memory_candidates(
    state: _State,
    summary: str | None,
    entries: Sequence[ProfileEntry],
    hits: Sequence[Hit],
    report: list[ReportItem],
) -> list[_Candidate]:
    template, counter = state.template, state.counter
    out: list[_Candidate] = []
    if summary is not None:
        if summary.strip():
            line = template.summary(summary)
            out.append(_Candidate("summary", [("summary", counter.count(line))], 0, line=line))
        else:
            report.append(ReportItem("summary", "summary", False, 0, "empty"))
    for entry in entries:
        line = template.profile(entry)
        if entry.is_current:
            out.append(_Candidate("profile", [(entry.key, counter.count(line))], 0, line=line))
        else:
            report.append(ReportItem("profile", entry.key, False, counter.count(line), "not current"))
    emitted = {m.id for m in state.turn} | {m.id for i in state.pinned for m in state.before[i]}
    seen: set[str] = set()
    for hit in hits:
        line = template.recalled(hit)
        candidate = _Candidate(
            "recalled", [(hit.item.id, counter.count(line))], 0, line=line, source=hit.item.source_message_id
        )
        if hit.item.id in seen or (hit.item.source_message_id or "") in emitted:
            candidate.reason = "duplicate"
        seen.add(hit.item.id)
        out.append(candidate)
    return out


def _greedy(state: _State, room: int, caps: TierCaps | None, budget: int) -> None:
    """Decide each optional item on estimated costs, in priority order."""
    template, counter = state.template, state.counter
    used = 0
    spent: dict[Tier, int] = dict.fromkeys(TIERS, 0)
    blocked = False  # a higher tier lost an item for room: lower tiers get nothing
    history_cut = False
    block_open = False
    open_sections: set[Tier] = set()
    item_sep = counter.count(template.item_separator)
    section_sep = counter.count(template.section_separator)
    headers = {
        "summary": template.summary_header,
        "profile": template.profile_header,
        "recalled": template.recalled_header,
    }
    emitted_ids: set[str] = set()
    tier_lost_room: Tier | None = None
    for candidate in state.candidates:
        tier = candidate.tier
        if tier_lost_room is not None and tier != tier_lost_room:
            blocked = True
        cap = None if caps is None else caps.tokens(tier, budget)
        if candidate.reason is not None:  # pre-judged (duplicate)
            continue
        if candidate.source is not None and candidate.source in emitted_ids:
            candidate.reason = "duplicate"  # its source message is already in the kept history
            continue
        if tier == "history":
            if history_cut:
                candidate.reason = "history cut"
                continue
            cost = candidate.cost
        else:
            cost = candidate.refs[0][1]  # count(line), counted once in _memory_candidates
            if tier in open_sections:
                cost += item_sep
            else:
                header = headers[tier]
                cost += (counter.count(header) + item_sep if header else 0) + section_sep
            candidate.cost = cost
            if not block_open:
                cost += _block_open_cost(state)
        if blocked:
            candidate.reason = "budget"
        elif cap is not None and spent[tier] + candidate.cost > cap:
            # Checked before room: an item its own tier cannot hold must not block lower tiers.
            candidate.reason = "tier cap"
        elif used + cost > room:
            candidate.reason = "budget"
            tier_lost_room = tier
        else:
            candidate.kept = True
            used += cost
            spent[tier] += candidate.cost
            if tier == "history":
                assert candidate.group is not None
                emitted_ids.update(m.id for m in state.before[candidate.group])
            else:
                block_open = True
                open_sections.add(tier)
            continue
        if tier == "history":
            history_cut = True


def _drop_until_fits(state: _State, limit: int) -> tuple[list[Message], int]:
    """The greedy's estimates were short (BPE merges across joins): drop the lowest
    priority items until the rendered list fits. Each try costs the history and turn
    messages from their known counts (Tokenizer contract: counts are additive) and
    counts only the re-rendered system/memory messages; the final answer is recounted
    whole, so ``total == count_messages(final)`` exactly."""
    counter = state.counter
    known: dict[int, int] = {id(m): counter.count_message(m) for m in state.turn}
    for candidate in state.candidates:
        if candidate.group is not None:
            known.update((id(m), tokens) for m, (_, tokens) in zip(state.before[candidate.group], candidate.refs,
                                                                  strict=True))
    primer = counter.count_messages([])
    while True:
        victim = next((c for c in reversed(state.candidates) if c.kept), None)
        if victim is None:  # only the required part is left: it fits (checked before the greedy)
            final = _render(state)
            return final, counter.count_messages(final)
        victim.kept, victim.reason = False, "budget"
        final = _render(state)
        estimate = primer + sum(known[id(m)] if id(m) in known else counter.count_message(m) for m in final)
        if estimate <= limit:
            total = counter.count_messages(final)
            if total <= limit:
                return final, total


def _block_open_cost(state: _State) -> int:
    template, counter = state.template, state.counter
    if template.memory_message == "merge" and state.prompt is not None:
        header = counter.count(template.memory_header) if template.memory_header else 0
        return header + counter.count(template.section_separator)
    # A new system message: its overhead plus the header.
    return counter.count_message(Message(role="system", content=template.memory_header or " "))


def _render(state: _State) -> list[Message]:
    """The final message list for the current decisions."""
    template = state.template
    lines: dict[Tier, list[str]] = {tier: [] for tier in _MEMORY_TIERS}
    kept_groups: set[int] = set(state.pinned)
    for candidate in state.candidates:
        if not candidate.kept:
            continue
        if candidate.group is not None:
            kept_groups.add(candidate.group)
        elif candidate.line is not None:
            lines[candidate.tier].append(candidate.line)
    block = template.block(lines["summary"], lines["profile"], lines["recalled"])
    out: list[Message] = []
    if block is not None and template.memory_message == "merge":
        out.append(Message(role="system", content=template.system_text(state.prompt, block), id="hmem.system_prompt"))
    else:
        if state.system is not None:
            out.append(state.system)
        if block is not None:
            out.append(Message(role="system", content=block, id="hmem.memory"))
    for index in sorted(kept_groups):
        out.extend(state.before[index])
    out.extend(state.turn)
    return out


def _truncate_turn(state: _State, limit: int, required: int) -> int:
    """Cut the current user text so the required part fits; return tokens cut."""
    counter = state.counter
    user = state.turn[0]
    original = user.text
    original_tokens = counter.count(original)
    keep = max(0, original_tokens - (required - limit) - counter.count(TRUNCATION_MARKER.format(n=original_tokens)))
    for _ in range(64):
        prefix = counter.truncate(original, keep)
        cut = original_tokens - counter.count(prefix)
        state.turn[0] = replace(user, content=prefix + TRUNCATION_MARKER.format(n=cut))
        total = counter.count_messages(_render(state))
        if total <= limit:
            return cut
        if keep == 0:
            break
        keep = max(0, keep - (total - limit))
    state.turn[0] = user
    raise BudgetError(
        f"the system prompt and current turn need {required} tokens but the budget is {limit}, "
        "and cutting the user message entirely is not enough (the system prompt or tool results "
        "are too long); raise the budget or shorten them",
        required=required,
        budget=limit,
    )


def _report_items(state: _State, counter: Tokenizer, dropped: list[ReportItem]) -> list[ReportItem]:
    items: list[ReportItem] = []
    if state.system is not None:
        items.append(ReportItem("system", "system_prompt", True, counter.count_message(state.system)))
    for index in sorted(state.pinned):
        items.extend(ReportItem("system", m.id, True, counter.count_message(m)) for m in state.before[index])
    items.extend(ReportItem("current_turn", m.id, True, counter.count_message(m)) for m in state.turn)
    history = sorted((c for c in state.candidates if c.group is not None), key=lambda c: c.group or 0)
    for candidate in history:
        items.extend(
            ReportItem("history", ref, candidate.kept, tokens, candidate.reason) for ref, tokens in candidate.refs
        )
    for candidate in state.candidates:
        if candidate.group is None:
            ref, tokens = candidate.refs[0]
            items.append(ReportItem(candidate.tier, ref, candidate.kept, tokens, candidate.reason))
    items.extend(dropped)
    order = {tier: rank for rank, tier in enumerate(TIERS)}
    return sorted(items, key=lambda item: order[item.tier])  # stable: keeps order within a tier


def _summarize(
    items: list[ReportItem], total: int, budget: int, caps: TierCaps | None, truncated: int
) -> AssemblyReport:
    tiers = tuple(
        TierReport(
            tier=tier,
            tokens=sum(i.tokens for i in items if i.tier == tier and i.kept),
            kept=sum(1 for i in items if i.tier == tier and i.kept),
            dropped=sum(1 for i in items if i.tier == tier and not i.kept),
            cap=None if caps is None else caps.tokens(tier, budget),
        )
        for tier in TIERS
    )
    attributed = sum(t.tokens for t in tiers)
    return AssemblyReport(
        budget=budget,
        total=total,
        overhead=total - attributed,
        tiers=tiers,
        items=tuple(items),
        truncated_tokens=truncated,
    )


def _dropped(tier: Tier, message: Message, counter: Tokenizer, reason: DropReason) -> ReportItem:
    return ReportItem(tier, message.id, False, counter.count_message(message), reason)


def _unanswered(group: Sequence[Message]) -> bool:
    """An assistant tool-call group missing a result: the API would reject it."""
    head = group[0]
    if head.role != "assistant" or not head.tool_calls:
        return False
    answered = {m.tool_call_id for m in group[1:]}
    return any(call.id not in answered for call in head.tool_calls)


def _check_tokenizer(tokenizer: object) -> Tokenizer:
    if not isinstance(tokenizer, Tokenizer):
        raise InvalidInput(
            "tokenizer must implement hmem.protocols.Tokenizer (e.g. hmem.tokens.get_tokenizer())",
            field="tokenizer",
        )
    return tokenizer


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


def _int_at_least(value: object, field_name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field_name} must be an integer, got {type(value).__name__}", field=field_name)
    if value < minimum:
        raise InvalidInput(f"{field_name} must be >= {minimum}, got {value}", field=field_name)
    return value
