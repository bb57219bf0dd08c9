"""Tier shares that flex (pure): room one tier leaves unused goes to the tiers that want more.

The caps of :class:`~hmem.assembly.assemble.TierCaps` are shares of the budget sized for
the case where every tier has more than it can show. When a tier wants less than its
share (a new session has no history, a new user no profile), the rest would otherwise
sit idle while recalled items that fit are dropped for "tier cap". :func:`flex_caps`
hands that slack to the tiers that want more than their share, in priority order; the
priority order itself does not change, and where every tier is full the caps stay as
they are.

Example::

    >>> flex_caps({"history": 400, "recalled": 600}, {"history": 100, "recalled": 2000}, room=1000)
    {'history': 400, 'recalled': 900}
"""

from __future__ import annotations

from collections.abc import Mapping

from hmem.assembly._state import AssemblyState, block_open_cost
from hmem.types import TIERS, Tier

__all__ = ["flex_caps", "tier_demand"]


def tier_demand(state: AssemblyState) -> dict[Tier, int]:
    """Estimated tokens each optional tier would take if nothing stopped it: its
    candidates (pre-judged ones left out), separators and section header included."""
    template, counter = state.template, state.counter
    item_sep = counter.count(template.item_separator)
    headers = {
        "summary": template.summary_header,
        "profile": template.profile_header,
        "recalled": template.recalled_header,
    }
    demand: dict[Tier, int] = {}
    groups: set[str] = set()
    for candidate in state.candidates:
        if candidate.reason is not None:
            continue
        tier = candidate.tier
        if tier == "history":
            demand[tier] = demand.get(tier, 0) + candidate.cost
            continue
        if tier not in demand:
            header = headers.get(tier, "")
            demand[tier] = (counter.count(header) + item_sep if header else 0) + counter.count(
                template.section_separator)
        demand[tier] += candidate.refs[0][1] + item_sep
        if candidate.group_line and candidate.group_line not in groups:
            groups.add(candidate.group_line)
            demand[tier] += candidate.group_tokens + item_sep
    if any(tier != "history" for tier in demand):
        first = next(t for t in TIERS if t in demand and t != "history")
        demand[first] += block_open_cost(state)
    return demand


def flex_caps(caps: Mapping[Tier, int | None], demand: Mapping[Tier, int], room: int) -> dict[Tier, int | None]:
    """``caps`` (tokens; None = uncapped) raised where a tier wants more than its cap,
    by the room the other tiers leave unused, in priority order.

    ``room`` is what the optional tiers share (the budget minus the system prompt and
    current turn). Unused = ``room`` minus what every tier would take within its cap.

    >>> flex_caps({"history": 400, "recalled": 600}, {"history": 900, "recalled": 900}, room=1000)
    {'history': 400, 'recalled': 600}
    >>> flex_caps({"history": 400, "recalled": 600}, {"history": 900, "recalled": 100}, room=1000)
    {'history': 900, 'recalled': 600}
    """
    out = dict(caps)
    taken = sum(min(want, cap) if (cap := caps.get(tier)) is not None else want for tier, want in demand.items())
    slack = room - taken
    for tier in TIERS:
        cap = out.get(tier)
        want = demand.get(tier, 0)
        if slack <= 0:
            break
        if cap is not None and want > cap:
            extra = min(want - cap, slack)
            out[tier] = cap + extra
            slack -= extra
    return out
