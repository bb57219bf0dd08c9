"""The value types of prompt assembly (:func:`hmem.assembly.assemble.assemble`): tiers,
drop reasons, the report of what was kept and cut, and the assembled context.

Imports nothing from hmem; :mod:`hmem.types` re-exports every public name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args

if TYPE_CHECKING:  # for the annotation only: hmem.types imports this module
    from hmem.types import Hit

__all__ = [
    "STOP_REASONS",
    "TIERS",
    "AssembledContext",
    "AssemblyReport",
    "DropReason",
    "ReportItem",
    "Tier",
    "TierReport",
]

#: The assembler's tiers, highest priority first ("pinned" = system/developer
#: messages found inside the session buffer, kept like the system prompt).
Tier: TypeAlias = Literal["system", "current_turn", "history", "summary", "profile", "recalled"]
TIERS: tuple[Tier, ...] = get_args(Tier)

#: Why an item was left out of an assembled context (see docs/assembly.md).
DropReason: TypeAlias = Literal[
    "budget",  # no room left in the token budget
    "tier cap",  # its tier reached its share of the budget
    "history cut",  # an older history group than one that did not fit (history stays contiguous)
    "orphan tool",  # a tool result without the assistant call it answers
    "unanswered tool call",  # an assistant tool call whose results are missing
    "not current",  # a profile entry that is superseded or deleted
    "duplicate",  # a recalled item whose source message is already in the prompt
    "empty",  # nothing to render (blank summary)
    "relevance",  # a recalled item scored below the relevance cut-off (a share of the best hit's score)
    "recall limit",  # a recalled item past the caller's explicit ``k``
]

#: The reasons that can stop a tier from growing (see :attr:`TierReport.stopped_by`).
STOP_REASONS: tuple[DropReason, ...] = ("budget", "tier cap", "relevance", "recall limit")


@dataclass(frozen=True, slots=True)
class ReportItem:
    """One candidate of the assembler and its fate.

    ``ref`` names it: a message id, ``"system_prompt"``, ``"summary"``, a profile key,
    or a memory item id. ``tokens`` is its own cost (``count_message`` for a message,
    ``count`` of its rendered line for a memory entry). ``reason`` is None when kept.
    """

    tier: Tier
    ref: str
    kept: bool
    tokens: int
    reason: DropReason | None = None


@dataclass(frozen=True, slots=True)
class TierReport:
    """Totals of one tier: kept tokens, counts and its cap in tokens (None = uncapped).

    ``cap`` is the cap the tier was held to: its share of the budget, plus what other
    tiers left unused (see :class:`~hmem.assembly.assemble.TierCaps`). ``stopped_by``
    says what stopped the tier from taking more: ``"budget"``, ``"tier cap"``,
    ``"relevance"`` (recalled: the next hit fell below the cut-off) or ``"recall
    limit"`` (recalled: the caller's ``k``); None when every candidate was kept or
    the tier had none.
    """

    tier: Tier
    tokens: int
    kept: int
    dropped: int
    cap: int | None = None
    stopped_by: DropReason | None = None


@dataclass(frozen=True, slots=True)
class AssemblyReport:
    """What the assembler kept, what it dropped and why.

    ``total`` is the exact token count of the assembled messages (``<= budget``);
    ``overhead`` is the part not attributed to any item (reply primer, headers,
    separators): ``total == sum(t.tokens for t in tiers) + overhead``.
    ``truncated_tokens`` > 0 when the current turn's user text was cut (opt-in).
    """

    budget: int
    total: int
    overhead: int
    tiers: tuple[TierReport, ...]
    items: tuple[ReportItem, ...]
    truncated_tokens: int = 0

    def tier(self, name: Tier) -> TierReport:
        for report in self.tiers:
            if report.tier == name:
                return report
        raise KeyError(name)

    @property
    def dropped(self) -> tuple[ReportItem, ...]:
        return tuple(item for item in self.items if not item.kept)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (for logs, the CLI and the HTTP API)."""
        return {
            "budget": self.budget,
            "total": self.total,
            "overhead": self.overhead,
            "truncated_tokens": self.truncated_tokens,
            "tiers": [
                {"tier": t.tier, "tokens": t.tokens, "kept": t.kept, "dropped": t.dropped, "cap": t.cap,
                 "stopped_by": t.stopped_by}
                for t in self.tiers
            ],
            "items": [
                {"tier": i.tier, "ref": i.ref, "kept": i.kept, "tokens": i.tokens, "reason": i.reason}
                for i in self.items
            ],
        }


@dataclass(frozen=True, slots=True)
class AssembledContext:
    """A prompt ready for ``client.chat.completions.create(messages=ctx.messages)``.

    ``tokens`` is ``tokenizer.count_messages`` of exactly these messages. ``recalled``
    are the recall candidates the assembler weighed, best first, with their ranks and
    scores (the report's ``"recalled"`` items name them by ``item.id``).
    """

    messages: list[dict[str, Any]]
    tokens: int
    report: AssemblyReport
    recalled: tuple[Hit, ...] = ()
