"""The assembler's decisions: which optional items fit the budget.

* :func:`memory_candidates` — summary, profile and recalled items as rendered lines;
* :func:`greedy` — keep or drop each candidate on estimated costs, in priority order;
* :func:`drop_until_fits` — drop the lowest priority items until the exact count fits;
* :func:`truncate_turn` — the opt-in cut of the current user text.

All work on an :class:`~hmem.assembly._state.AssemblyState`; see
:mod:`hmem.assembly.assemble` for the rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial

from hmem.assembly._state import AssemblyState, Candidate, block_open_cost, render_messages
from hmem.assembly.excerpt import SeenTexts, excerpt
from hmem.assembly.stopping import StopRule, features
from hmem.errors import BudgetError
from hmem.longterm.text import term_set
from hmem.protocols import Tokenizer
from hmem.types import TIERS, DropReason, Hit, Message, ProfileEntry, ReportItem, Tier

__all__ = ["TRUNCATION_MARKER", "drop_until_fits", "greedy", "memory_candidates", "relevance_floor", "truncate_turn"]

#: Appended to the current turn's user text when ``truncate_current_turn`` cut it.
TRUNCATION_MARKER = "\n…[truncated by hmem: {n} tokens cut]"


def memory_candidates(
    state: AssemblyState,
    summary: str | None,
    entries: Sequence[ProfileEntry],
    hits: Sequence[Hit],
    report: list[ReportItem],
    *,
    relevance_cutoff: float | None = None,
    max_recalled: int | None = None,
    stop: StopRule | None = None,
    query: str | None = None,
    excerpt_tokens: int | None = None,
) -> list[Candidate]:
    """Summary, profile and recalled items as candidates, each rendered and counted once.

    Blank summaries and non-current profile entries go to ``report`` as dropped;
    recalled items already in the prompt (or repeated, or near-duplicates of a better
    hit's text) are pre-judged duplicates, hits scoring below ``relevance_cutoff`` times
    the best hit's score are pre-judged ``"relevance"``, hits whose estimated chance of
    holding the answer is not worth their tokens under ``stop`` ``"threshold"``, and
    distinct hits past ``max_recalled`` ``"recall limit"``. With ``excerpt_tokens``, a
    longer recalled item is rendered as its passage about ``query`` (:func:`excerpt`).
    A turn's relative dates (``template.resolve_dates``) are written out later, by
    :func:`greedy`, and only on a hit whose plain line would fit."""
    template, counter = state.template, state.counter
    out: list[Candidate] = []
    if summary is not None:
        if summary.strip():
            line = template.summary(summary)
            out.append(Candidate("summary", [("summary", counter.count(line))], 0, line=line))
        else:
            report.append(ReportItem("summary", "summary", False, 0, "empty"))
    for entry in entries:
        line = template.profile(entry)
        if entry.is_current:
            out.append(Candidate("profile", [(entry.key, counter.count(line))], 0, line=line))
        else:
            report.append(ReportItem("profile", entry.key, False, counter.count(line), "not current"))
    emitted = {m.id for m in state.turn} | {m.id for i in state.pinned for m in state.before[i]}
    floor = relevance_floor(hits, relevance_cutoff)
    chances = [stop.chance(x) for x in features(hits)] if stop is not None else [None] * len(hits)
    seen: set[str] = set()
    said = SeenTexts()  # the terms of each distinct hit taken so far
    group_tokens: dict[str, int] = {}
    distinct = 0
    for hit, chance in zip(hits, chances, strict=True):
        item = hit.item
        whole_tokens = None
        shown = hit
        if excerpt_tokens is not None and query:
            passage = excerpt(item.text, query, excerpt_tokens, counter, hit.passage)
            if passage != item.text:
                whole_tokens = counter.count(template.recalled(hit, as_said=True))
                shown = replace(hit, item=replace(item, text=passage))
        line = template.recalled(shown, as_said=True)
        group = template.recalled_group_line(shown)
        if group not in group_tokens:
            group_tokens[group] = counter.count(group) if group else 0
        tokens = counter.count(line)
        candidate = Candidate(
            "recalled", [(item.id, tokens)], 0, line=line, source=item.source_message_id,
            when=(item.created_at, item.id), group_line=group, group_tokens=group_tokens[group],
            chance=chance, whole_tokens=whole_tokens, whole_turn=item.kind == "turn" and whole_tokens is None,
        )
        if item.id in seen or (item.source_message_id or "") in emitted:
            candidate.reason = "duplicate"
        elif floor is not None and hit.score < floor:
            candidate.reason = "relevance"
        elif stop is not None and chance is not None and not stop.pays(chance, tokens):
            candidate.reason = "threshold"
        elif max_recalled is not None and distinct >= max_recalled:
            candidate.reason = "recall limit"
        elif said.repeats(words := term_set(item.text)):  # only hits that would be taken
            candidate.reason = "duplicate"
        else:
            distinct += 1
            said.add(words)
            if template.writes_dates(item):
                candidate.dated = partial(template.recalled, shown)
        seen.add(item.id)
        out.append(candidate)
    return out


def relevance_floor(hits: Sequence[Hit], cutoff: float | None) -> float | None:
    """The lowest score a hit may have: ``cutoff`` times the best hit's score (None:
    no cut-off, or no positive score to measure against).

    >>> from datetime import datetime, UTC
    >>> from hmem.types import MemoryItem
    >>> item = MemoryItem(id="m", user_id="u", text="t", created_at=datetime(2024, 1, 1, tzinfo=UTC))
    >>> relevance_floor([Hit(item=item, score=0.8), Hit(item=item, score=0.3)], 0.5)
    0.4
    """
    if cutoff is None or not hits:
        return None
    best = max(hit.score for hit in hits)
    return cutoff * best if best > 0 else None


def greedy(state: AssemblyState, room: int, caps: Mapping[Tier, int | None], memory_room: int | None = None) -> None:
    """Decide each optional item on estimated costs, in priority order.

    ``caps`` is each tier's cap in tokens (None = uncapped); ``memory_room``, when
    given, is what the memory tiers (summary, profile, recalled) may take together."""
    template, counter = state.template, state.counter
    used = 0
    memory_used = 0
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
    open_groups: set[str] = set()  # recalled group lines already paid for
    tier_lost_room: Tier | None = None

    def over(tier: Tier, own: int, cost: int) -> DropReason | None:
        """Why an item of ``own`` tokens (``cost`` with what opening it adds) cannot be kept now."""
        cap = caps[tier]
        if cap is not None and spent[tier] + own > cap:
            # Checked before room: an item its own tier cannot hold must not block lower tiers.
            return "tier cap"
        if used + cost > room:
            return "budget"
        if tier != "history" and memory_room is not None and memory_used + cost > memory_room:
            return "memory budget"  # like a cap: a smaller item further down may still fit
        return None

    for candidate in state.candidates:
        tier = candidate.tier
        if tier_lost_room is not None and tier != tier_lost_room:
            blocked = True
        if candidate.reason is not None:  # pre-judged (duplicate)
            continue
        if candidate.source is not None and candidate.source in emitted_ids:
            # Its source message is already in the prompt: in the kept history, or recalled
            # whole (a fact restates part of the turn it was drawn from).
            candidate.reason = "duplicate"
            continue
        if tier == "history":
            if history_cut:
                candidate.reason = "history cut"
                continue
            cost = candidate.cost
        else:
            cost = candidate.refs[0][1]  # count(line), counted once in memory_candidates
            if tier in open_sections:
                cost += item_sep
            else:
                header = headers[tier]
                cost += (counter.count(header) + item_sep if header else 0) + section_sep
            if candidate.group_line and candidate.group_line not in open_groups:
                # Estimated once per group; an order that splits a group is caught by the exact recount.
                cost += candidate.group_tokens + item_sep
            candidate.cost = cost
            if not block_open:
                cost += block_open_cost(state)
            if candidate.dated is not None and not blocked and over(tier, candidate.cost, cost) is None:
                # Dates only add words: a line too long plain is judged as it is, unscanned.
                extra = _write_dates(candidate, counter)
                candidate.cost, cost = candidate.cost + extra, cost + extra
        reason = "budget" if blocked else over(tier, candidate.cost, cost)
        if reason is None:
            candidate.kept = True
            used += cost
            if tier != "history":
                memory_used += cost
            spent[tier] += candidate.cost
            if tier == "history":
                assert candidate.group is not None
                emitted_ids.update(m.id for m in state.before[candidate.group])
            else:
                block_open = True
                open_sections.add(tier)
                if candidate.whole_turn and candidate.source is not None:
                    emitted_ids.add(candidate.source)
                if candidate.group_line:
                    open_groups.add(candidate.group_line)
            continue
        candidate.reason = reason
        if reason == "budget" and not blocked:
            tier_lost_room = tier
        if tier == "history":
            history_cut = True


def _write_dates(candidate: Candidate, counter: Tokenizer) -> int:
    """Render ``candidate``'s line with its relative dates written out; the tokens added."""
    assert candidate.dated is not None and candidate.line is not None
    dated, candidate.dated = candidate.dated(), None
    if dated == candidate.line:
        return 0
    ref, tokens = candidate.refs[0]
    extra = counter.count(dated) - tokens
    candidate.line, candidate.refs = dated, [(ref, tokens + extra)]
    return extra


def drop_until_fits(state: AssemblyState, limit: int) -> tuple[list[Message], int]:
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
            final = render_messages(state)
            return final, counter.count_messages(final)
        victim.kept, victim.reason = False, "budget"
        final = render_messages(state)
        estimate = primer + sum(known[id(m)] if id(m) in known else counter.count_message(m) for m in final)
        if estimate <= limit:
            total = counter.count_messages(final)
            if total <= limit:
                return final, total


def truncate_turn(state: AssemblyState, limit: int, required: int) -> int:
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
        total = counter.count_messages(render_messages(state))
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
