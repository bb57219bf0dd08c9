"""The assembler's report: every candidate's fate and the per-tier totals."""

from __future__ import annotations

from collections.abc import Mapping

from hmem.assembly._state import AssemblyState
from hmem.protocols import Tokenizer
from hmem.types import STOP_REASONS, TIERS, AssemblyReport, DropReason, Message, ReportItem, Tier, TierReport

__all__ = ["dropped_item", "report_items", "stop_reasons", "summarize"]


def dropped_item(tier: Tier, message: Message, counter: Tokenizer, reason: DropReason) -> ReportItem:
    """The report line of a message left out for ``reason``."""
    return ReportItem(tier, message.id, False, counter.count_message(message), reason)


def report_items(state: AssemblyState, counter: Tokenizer, dropped: list[ReportItem]) -> list[ReportItem]:
    """Every item's line, kept and dropped, in tier order (input order within a tier)."""
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
            items.append(ReportItem(candidate.tier, ref, candidate.kept, tokens, candidate.reason,
                                    candidate.chance, candidate.whole_tokens))
    items.extend(dropped)
    order = {tier: rank for rank, tier in enumerate(TIERS)}
    return sorted(items, key=lambda item: order[item.tier])  # stable: keeps order within a tier


def stop_reasons(state: AssemblyState) -> dict[Tier, tuple[DropReason, float | None]]:
    """Per tier, why it stopped growing: the reason of its first candidate, in
    priority order, that was left out for room, cap, relevance, the recall limit, the
    calibrated threshold or the memory budget, with that candidate's estimated chance."""
    stopped: dict[Tier, tuple[DropReason, float | None]] = {}
    for candidate in state.candidates:
        if candidate.tier not in stopped and candidate.reason in STOP_REASONS:
            stopped[candidate.tier] = (candidate.reason, candidate.chance)
    return stopped


def summarize(  # noqa: PLR0917  # the parts of one report
    items: list[ReportItem], total: int, budget: int, caps: Mapping[Tier, int | None], truncated: int,
    stopped: Mapping[Tier, tuple[DropReason, float | None]] | None = None,
) -> AssemblyReport:
    """The report: per-tier totals (``caps`` in tokens, ``stopped`` per tier: reason and
    estimate) over ``items``."""
    tiers = tuple(
        TierReport(
            tier=tier,
            tokens=sum(i.tokens for i in items if i.tier == tier and i.kept),
            kept=sum(1 for i in items if i.tier == tier and i.kept),
            dropped=sum(1 for i in items if i.tier == tier and not i.kept),
            cap=caps[tier],
            stopped_by=(stopped or {}).get(tier, (None, None))[0],
            estimate=(stopped or {}).get(tier, (None, None))[1],
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
