"""The assembler's working state and how it renders to messages.

:class:`AssemblyState` holds the required part of the prompt (system prompt, pinned
messages, current turn) and the optional :class:`Candidate` items in priority order;
:func:`render_messages` turns the current keep/drop decisions into the message list.
Used by :mod:`hmem.assembly.assemble` (the entry point) and :mod:`hmem.assembly._fit`
(the decisions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hmem.assembly.render import ContextTemplate
from hmem.protocols import Tokenizer
from hmem.types import DropReason, Message, Tier

__all__ = ["AssemblyState", "Candidate", "block_open_cost", "recalled_lines", "render_messages"]

_MEMORY_TIERS: tuple[Tier, ...] = ("summary", "profile", "recalled")


@dataclass
class Candidate:
    """An optional item: a history group or one rendered memory entry."""

    tier: Tier
    refs: list[tuple[str, int]]  # (ref, own tokens) per report line
    cost: int  # estimated tokens it adds to the prompt (separators/header included)
    group: int | None = None  # index into the history groups
    line: str | None = None
    source: str | None = None  # a recalled item's source message id
    whole_turn: bool = False  # a recalled turn shown whole: a fact drawn from it says nothing more
    when: tuple[datetime, str] | None = None  # a recalled item's (created_at, id): chronological order
    group_line: str = ""  # a recalled item's group line (date and session), "" = none
    group_tokens: int = 0  # count(group_line)
    kept: bool = False
    reason: DropReason | None = None
    chance: float | None = None  # a recalled item's estimated chance of holding the answer (calibrated stop)
    whole_tokens: int | None = None  # the whole item's tokens when ``line`` renders an excerpt
    # A recalled turn's line with its relative dates written out, rendered only when the
    # greedy finds that the plain line would fit (scanning a long reply costs ~0.2 ms).
    dated: Callable[[], str] | None = None


@dataclass
class AssemblyState:
    """Everything the final rendering needs; mutated only while fitting."""

    template: ContextTemplate
    counter: Tokenizer
    prompt: str | None
    system: Message | None
    before: list[list[Message]]  # groups before the current turn
    pinned: set[int]  # group indices always emitted
    turn: list[Message]  # current turn, orphans removed
    candidates: list[Candidate]  # optional items in priority order


def render_messages(state: AssemblyState) -> list[Message]:
    """The final message list for the current decisions."""
    template = state.template
    lines: dict[Tier, list[str]] = {tier: [] for tier in _MEMORY_TIERS}
    kept_groups: set[int] = set(state.pinned)
    recalled: list[Candidate] = []
    for candidate in state.candidates:
        if not candidate.kept:
            continue
        if candidate.group is not None:
            kept_groups.add(candidate.group)
        elif candidate.tier == "recalled":
            recalled.append(candidate)
        elif candidate.line is not None:
            lines[candidate.tier].append(candidate.line)
    if template.recalled_order == "chronological":
        # Turns of one session end up next to each other, in the order they were said.
        recalled.sort(key=lambda c: c.when or (datetime.max, ""))
    lines["recalled"] = recalled_lines(recalled)
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


def recalled_lines(recalled: list[Candidate]) -> list[str]:
    """The recalled section's lines in order: a group line (date, session) before each
    run of items that share it, then the items."""
    out: list[str] = []
    current = ""
    for candidate in recalled:
        if candidate.group_line and candidate.group_line != current:
            out.append(candidate.group_line)
        current = candidate.group_line
        if candidate.line is not None:
            out.append(candidate.line)
    return out


def block_open_cost(state: AssemblyState) -> int:
    """Tokens the memory block adds before its first section (header, separator or
    a message of its own)."""
    template, counter = state.template, state.counter
    if template.memory_message == "merge" and state.prompt is not None:
        header = counter.count(template.memory_header) if template.memory_header else 0
        return header + counter.count(template.section_separator)
    # A new system message: its overhead plus the header.
    return counter.count_message(Message(role="system", content=template.memory_header or " "))
