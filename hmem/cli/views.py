"""Turning results into JSON-ready dicts and rich renderings (shared by commands).

Each view is built as a plain dict first (that is what ``--json`` prints) and the
text rendering reads that dict, so both outputs always say the same thing. Text
from memory is wrapped in :class:`rich.text.Text`, never parsed as markup (a
recalled line such as ``[2024-05-01, session S1]`` must print as written).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hmem.cli.common import hit_to_dict, item_to_dict, profile_entry_to_dict, short
from hmem.longterm.supersede import SUPERSEDED_BY, SUPERSEDES

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.memory import Memory
    from hmem.types import AssembledContext

__all__ = ["context_to_dict", "render_context", "render_messages", "render_report", "session_view", "table", "text",
           "with_versions"]

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


def context_to_dict(
    ctx: AssembledContext, mem: Memory, user_id: str, *, evidence: Iterable[str] = ()
) -> dict[str, Any]:
    """The assembled messages, the report and, for every recalled candidate (kept or
    dropped), the item it came from (text, session, date, kind) and how it ranked
    (BM25 and dense ranks, fusion score, boosts). ``evidence`` (gold source message
    ids, for the demo) marks the recalled items that answer."""
    report = ctx.report.to_dict()
    recalled_refs = [i for i in report["items"] if i["tier"] == "recalled"]
    hits = {h.item.id: h for h in ctx.recalled}
    missing = [i["ref"] for i in recalled_refs if i["ref"] not in hits]  # a context assembled without its hits
    found = {it.id: it for it in mem.items(user_id, ids=missing)} if missing else {}
    gold = set(evidence)
    recalled = []
    for rank, entry in enumerate(recalled_refs, start=1):
        hit = hits.get(entry["ref"])
        item = hit.item if hit else found.get(entry["ref"])
        row: dict[str, Any] = {"rank": rank, "kept": entry["kept"], "tokens": entry["tokens"], "reason": entry["reason"]}
        if hit:
            row.update(hit_to_dict(hit))
        else:
            row.update(item_to_dict(item) if item else {"id": entry["ref"], "text": None})
        if gold:
            row["is_evidence"] = bool(item and item.source_message_id in gold)
        recalled.append(row)
    return {
        "messages": ctx.messages,
        "tokens": ctx.tokens,
        "report": report,
        "recalled": recalled,
        "dropped": [i for i in report["items"] if not i["kept"]],
    }


def session_view(mem: Memory, user_id: str, session_id: str) -> dict[str, Any]:
    """Every tier of one session as a dict (what ``hmem inspect`` prints and the
    ``/ui`` session page shows): the buffer with token counts, the rolling summary
    with its watermark, the user's profile, the session's long-term items (facts and
    archived turns) and the user's totals."""
    from hmem.tokens import get_tokenizer
    from hmem.types import check_id

    user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
    tokenizer = get_tokenizer(mem.options.model)
    buffer = mem.history(user, session)
    summary = mem.summary(user, session)
    return {
        "user_id": user,
        "session_id": session,
        "tokenizer": tokenizer.name,
        "buffer": [
            {**m.to_openai(include_meta=True), "tokens": tokenizer.count_message(m)} for m in buffer
        ],
        "buffer_tokens": tokenizer.count_messages(buffer) if buffer else 0,
        "summary": None if summary is None else {
            "text": summary.text, "method": summary.method, "covers_until": summary.covers_until,
            "folded_count": summary.folded_count, "tokens": summary.tokens, "updated_at": summary.updated_at,
        },
        "profile": [profile_entry_to_dict(e) for e in mem.profile.all(user)],
        "items": with_versions(mem, user, [item_to_dict(i) for i in mem.items(user, session_id=session)]),
        "stats": mem.stats(user),
    }


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


def with_versions(memory: Memory, user: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row with the versions its claim links to (``newer``: what superseded it,
    ``older``: what it superseded), read in one call, so both show wherever one does."""
    links = {row["id"]: {name: row["metadata"].get(key) for name, key in (("newer", SUPERSEDED_BY),
                                                                        ("older", SUPERSEDES))} for row in rows}
    wanted = {i for pair in links.values() for i in pair.values() if isinstance(i, str) and i}
    found = {it.id: it for it in memory.items(user, ids=sorted(wanted))} if wanted else {}
    for row in rows:
        for name, linked in links[row["id"]].items():
            item = found.get(linked) if isinstance(linked, str) else None
            # A version deleted since still shows as a link target that is gone.
            row[name] = None if not linked else {"id": linked, "text": item.text if item else None,
                                                 "created_at": item.created_at.isoformat() if item else None}
    return rows
