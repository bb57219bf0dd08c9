"""JSON views of a user's memory, shared by every surface that shows one: the CLI's
``--json`` and ``hmem inspect``, the ``/ui`` inspector and the MCP tools. Built only
from :class:`~hmem.memory.Memory`'s methods and the types' ``to_dict()``.

Example::

    >>> short("a   long  text", 8)
    'a long …'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from hmem.longterm.supersede import SUPERSEDED_BY, SUPERSEDES

if TYPE_CHECKING:
    from hmem.memory import Memory
    from hmem.types import AssembledContext

__all__ = ["context_to_dict", "session_view", "short", "with_versions"]


def short(text: str | None, limit: int = 100) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
        row: dict[str, Any] = {"rank": rank, "kept": entry["kept"], "tokens": entry["tokens"], "reason": entry["reason"],
                               "chance": entry["chance"], "whole_tokens": entry["whole_tokens"]}
        if hit:
            row.update(hit.to_dict())
        else:
            row.update(item.to_dict() if item else {"id": entry["ref"], "text": None})
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
        "profile": [e.to_dict() for e in mem.profile.all(user)],
        "items": with_versions(mem, user, [i.to_dict() for i in mem.items(user, session_id=session)]),
        "stats": mem.stats(user),
    }


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
