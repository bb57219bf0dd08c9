"""Turning results into JSON-ready dicts and rich renderings (shared by commands).

Each view is built as a plain dict first (that is what ``--json`` prints) and the
text rendering reads that dict, so both outputs always say the same thing. Text
from memory is wrapped in :class:`rich.text.Text`, never parsed as markup (a
recalled line such as ``[2024-05-01, session S1]`` must print as written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hmem.views import short

if TYPE_CHECKING:
    from rich.console import Console


__all__ = ["render_context", "render_messages", "render_report", "table", "text"]

_ROLE_STYLE = {"system": "magenta", "user": "cyan", "assistant": "green", "tool": "yellow", "developer": "magenta"}


def text(value: object, style: str = "") -> Any:
    """A rich Text (no markup parsing) of ``value``; '' for None."""
    from rich.text import Text

    return Text("" if value is None else str(value), style=style)


def table(title: str | None, columns: Sequence[str | tuple[str, str]]) -> Any:
    """A rich Table; a column given as ``(name, "right")`` is right-aligned."""
    from rich.table import Table

    out = Table(title=title, title_justify="left", show_lines=False, expand=False)
    for col in columns:
        name, justify = (col, "left") if isinstance(col, str) else col
        out.add_column(name, justify=justify)  # type: ignore[arg-type]
    return out






def render_messages(console: Console, messages: Sequence[Mapping[str, Any]], *, title: str = "Assembled messages") -> None:
    from rich.panel import Panel

    console.rule(text(title, "bold"))
    for message in messages:
        role = str(message.get("role", "?"))
        body = message.get("content") or ""
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            body += f"\n→ {fn.get('name')}({fn.get('arguments')})"
        if message.get("tool_call_id"):
            body = f"(result of {message['tool_call_id']}) {body}"
        console.print(Panel(text(body), title=text(role, f"bold {_ROLE_STYLE.get(role, '')}"), title_align="left"))


def render_report(console: Console, data: Mapping[str, Any]) -> None:
    """The budget report: tiers, recalled items (with session/date), drops."""
    report = data["report"]
    tiers = table(
        f"Budget: {report['total']} of {report['budget']} tokens used "
        f"(overhead {report['overhead']}" + (f", current turn cut by {report['truncated_tokens']}" if report["truncated_tokens"] else "")
        + ")",
        ["tier", ("tokens", "right"), ("kept", "right"), ("dropped", "right"), ("cap", "right")],
    )
    for tier in report["tiers"]:
        dim = "" if tier["kept"] or tier["dropped"] else "dim"
        tiers.add_row(
            text(tier["tier"], dim), text(tier["tokens"], dim), text(tier["kept"], dim), text(tier["dropped"], dim),
            text("-" if tier["cap"] is None else tier["cap"], dim),
        )
    console.print(tiers)
    recalled = data.get("recalled") or []
    if recalled:
        with_gold = any("is_evidence" in r for r in recalled)
        cols: list[str | tuple[str, str]] = ["#", "kept", ("tokens", "right"), "session", "date", "kind", "text", "why dropped"]
        if with_gold:
            cols.insert(1, "gold")
        rows = table("Recalled from long-term memory (best first)", cols)
        for r in recalled:
            style = "" if r["kept"] else "dim"
            cells = [
                text(r["rank"], style), text("yes" if r["kept"] else "no", "green" if r["kept"] else "red"),
                text(r["tokens"], style), text(r.get("session_id") or "-", style),
                text((r.get("created_at") or "")[:10], style), text(r.get("kind") or "", style),
                text(short(r.get("text"), 70), style), text(r["reason"] or "", "yellow"),
            ]
            if with_gold:
                cells.insert(1, text("✓" if r.get("is_evidence") else "", "bold green"))
            rows.add_row(*cells)
        console.print(rows)
    others = [d for d in data.get("dropped", []) if d["tier"] != "recalled"]
    if others:
        drops = table("Dropped (other tiers)", ["tier", "ref", ("tokens", "right"), "reason"])
        for d in others:
            drops.add_row(text(d["tier"]), text(d["ref"]), text(d["tokens"]), text(d["reason"], "yellow"))
        console.print(drops)


def render_context(console: Console, data: Mapping[str, Any]) -> None:
    render_messages(console, data["messages"])
    render_report(console, data)


