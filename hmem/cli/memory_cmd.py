"""``hmem add | context | recall | inspect``: the per-turn API from the shell.

Examples::

    hmem add u1 s1 "I'm allergic to peanuts."
    hmem add u1 s1 --file messages.json        # an OpenAI message list ('-' = stdin)
    hmem context u1 s1 --query "what should I cook?" --budget 800
    hmem recall u1 "food allergy" -k 5
    hmem inspect u1 s1
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hmem.cli.common import (
    Output,
    add_intermixed_parser,
    common_parent,
    non_negative_int,
    open_memory,
    positive_int,
    read_json_file,
    read_text_arg,
)
from hmem.cli.views import render_context, table, text
from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.views import context_to_dict, session_view, short

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.memory import AddResult

__all__ = ["add_result_to_dict", "register"]


def register(subparsers: Any) -> None:
    parent = common_parent()

    p = add_intermixed_parser(subparsers, "add", parents=[parent], help="append messages to a session and run the memory pipeline")
    p.add_argument("user")
    p.add_argument("session")
    p.add_argument("text", nargs="?", default=None, help="message text ('-' reads it from stdin)")
    p.add_argument("--role", default="user", help="role of TEXT (default: user)")
    p.add_argument("--file", default=None, help="JSON file with an OpenAI message list ('-' = stdin)")
    p.set_defaults(func=run_add)

    p = subparsers.add_parser("context", parents=[parent], help="assemble the prompt for the next model call")
    p.add_argument("user")
    p.add_argument("session")
    p.add_argument("--query", "-q", default=None, help="recall query (default: the session's last user message)")
    p.add_argument("--model", default=None, help="model whose tokenizer and window apply (default: HMEM_MODEL)")
    p.add_argument("--budget", type=non_negative_int, default=None, help="prompt budget in tokens")
    p.add_argument("--system", default=None, help="system prompt (default: the one stored for the session)")
    p.add_argument("-k", type=non_negative_int, default=None, help="how many items to recall (default 10)")
    p.add_argument("--truncate", action="store_true", help="cut the current turn (with a marker) if it cannot fit")
    p.set_defaults(func=run_context)

    p = subparsers.add_parser("recall", parents=[parent], help="search a user's long-term memory")
    p.add_argument("user")
    p.add_argument("query")
    p.add_argument("-k", type=positive_int, default=10)
    p.add_argument("--kind", action="append", default=None, help="only items of this kind (repeatable: fact, turn …)")
    p.add_argument("--session", default=None, help="only items from this session")
    p.set_defaults(func=run_recall)

    p = subparsers.add_parser("inspect", parents=[parent], help="every tier of one session, readable")
    p.add_argument("user")
    p.add_argument("session")
    p.set_defaults(func=run_inspect)


# -- add -----------------------------------------------------------------------------


def _messages_from_args(args: argparse.Namespace) -> list[Any]:
    if args.file is not None and args.text is not None:
        raise InvalidInput("give either TEXT or --file, not both", field="text")
    if args.file is not None:
        data = read_json_file(args.file, "file")
        if isinstance(data, Mapping) and "messages" in data:
            data = data["messages"]
        if isinstance(data, Mapping):
            data = [data]
        if not isinstance(data, list) or not data:
            raise InvalidInput("file: expected a non-empty JSON list of OpenAI messages", field="file")
        return data
    if args.text is None:
        raise InvalidInput("nothing to add: give TEXT, '-' for stdin, or --file messages.json", field="text")
    return [{"role": args.role, "content": read_text_arg(args.text)}]


def add_result_to_dict(result: AddResult) -> dict[str, Any]:
    compaction = result.compaction
    return {
        "version": result.version,
        "message_ids": list(result.message_ids),
        "profile": None if result.profile is None else {
            "changed": list(result.profile.changed),
            "confirmed": list(result.profile.confirmed),
            "deleted": list(result.profile.deleted),
        },
        "facts": [{"status": f.status, **f.item.to_dict()} for f in result.facts],
        "compaction": None if compaction is None else {
            "evicted": compaction.evicted,
            "kept": compaction.kept,
            "summary_method": compaction.summary.method if compaction.summary else None,
            "summary_tokens": compaction.summary.tokens if compaction.summary else None,
        },
    }


def run_add(args: argparse.Namespace) -> int:
    raw = _messages_from_args(args)
    with open_memory(args) as mem:
        result = mem.add(args.user, args.session, raw)
    data = {"user_id": args.user, "session_id": args.session, **add_result_to_dict(result)}

    def render(console: Console) -> None:
        console.print(text(f"added {len(result.message_ids)} message(s) to {args.user}/{args.session} "
                           f"(version {result.version})", "bold green"))
        prof = data["profile"]
        if prof and (prof["changed"] or prof["deleted"]):
            console.print(text(f"profile: changed {prof['changed']}, deleted {prof['deleted']}"))
        for fact in data["facts"]:
            console.print(text(f"fact {fact['status']}: [{fact['kind']}] {short(fact['text'], 90)}"))
        comp = data["compaction"]
        if comp and comp["evicted"]:
            console.print(text(f"compaction: {comp['evicted']} message(s) summarized ({comp['summary_method']}) "
                               f"and archived, {comp['kept']} kept in the buffer"))

    Output(args.json).emit(data, render)
    return 0


# -- context ---------------------------------------------------------------------------


def run_context(args: argparse.Namespace) -> int:
    with open_memory(args) as mem:
        ctx = mem.context(
            args.user, args.session, args.query, model=args.model, budget=args.budget, system_prompt=args.system,
            k=args.k, truncate_current_turn=args.truncate,
        )
        data = {"user_id": args.user, "session_id": args.session, **context_to_dict(ctx, mem, args.user)}
    Output(args.json).emit(data, lambda console: render_context(console, data))
    return 0


# -- recall ----------------------------------------------------------------------------


def run_recall(args: argparse.Namespace) -> int:
    options = RecallOptions(kinds=args.kind or None, session_id=args.session or None)
    with open_memory(args) as mem:
        hits = mem.recall(args.user, args.query, args.k, options)
    data = {"user_id": args.user, "query": args.query, "k": args.k, "hits": [h.to_dict() for h in hits]}

    def render(console: Console) -> None:
        rows = table(
            f"Recall for {args.user!r}: {args.query!r} ({len(hits)} hits)",
            [("#", "right"), ("score", "right"), ("round", "right"), "lexical rank/score", "dense rank/score",
             "boosts", "date", "session", "kind", "text"],
        )
        for rank, h in enumerate(data["hits"], start=1):
            lex = "-" if h["lexical_rank"] is None else f"{h['lexical_rank']} / {h['lexical_score']:.3f}"
            dense = "-" if h["dense_rank"] is None else f"{h['dense_rank']} / {h['dense_score']:.3f}"
            boosts = ", ".join(f"{k}×{v:.2f}" for k, v in h["boosts"].items()) or "-"
            rows.add_row(
                text(rank), text(f"{h['score']:.4f}"), text(h["round"]), text(lex), text(dense), text(boosts), text(h["created_at"][:10]),
                text(h["session_id"] or "-"), text(h["kind"]), text(short(h["text"], 70)),
            )
        console.print(rows)
        console.print(text("score = fusion of the lexical (BM25) and dense rankings (weighted by default, or RRF), times "
                           "boosts; round 2 = found by the feedback round (the query expanded with the top hits' words)",
                           "dim"))

    Output(args.json).emit(data, render)
    return 0


# -- inspect ---------------------------------------------------------------------------


def run_inspect(args: argparse.Namespace) -> int:
    from hmem.types import check_id

    user, session = check_id(args.user, "user_id"), check_id(args.session, "session_id")  # before opening a store
    with open_memory(args) as mem:
        data = session_view(mem, user, session)
    Output(args.json).emit(data, lambda console: _render_inspect(console, data))
    return 0


def _render_inspect(console: Console, data: dict[str, Any]) -> None:
    from rich.panel import Panel

    console.rule(text(f"{data['user_id']} / {data['session_id']}", "bold"))
    buf = table(
        f"Buffer: {len(data['buffer'])} messages, {data['buffer_tokens']} tokens ({data['tokenizer']})",
        ["id", "role", ("tokens", "right"), "date", "content"],
    )
    for m in data["buffer"]:
        content = m.get("content") or " ".join(f"→ {c['function']['name']}" for c in m.get("tool_calls") or [])
        buf.add_row(text(short(m["id"], 20)), text(m["role"]), text(m["tokens"]), text(str(m.get("created_at", ""))[:16]),
                    text(short(content, 80)))
    console.print(buf)
    s = data["summary"]
    if s is None:
        console.print(text("Summary: none yet (the buffer has not overflowed)", "dim"))
    else:
        console.print(Panel(
            text(s["text"]),
            title=text(f"Summary ({s['method']}, {s['tokens']} tokens, {s['folded_count']} messages folded, "
                       f"watermark {s['covers_until']})", "bold"),
            title_align="left",
        ))
    prof = table(f"Profile of {data['user_id']} ({len(data['profile'])} keys)", ["key", "value", "since", "source"])
    for e in data["profile"]:
        value = ", ".join(e["value"]) if isinstance(e["value"], list) else e["value"]
        src = e["provenance"]
        prof.add_row(text(e["key"]), text(value), text(e["valid_from"][:10]),
                     text(src["source"] + (f" {src['session_id']}/{src['message_id']}" if src["message_id"] else "")))
    console.print(prof)
    items = table(f"Long-term items from this session ({len(data['items'])})",
                  ["kind", ("importance", "right"), "date", "source", "text"])
    for i in data["items"]:
        shown = short(i["text"], 80)
        for name, label in (("newer", "superseded by"), ("older", "supersedes")):
            v = i.get(name)
            if v:  # the other version of the claim, which may sit in another session
                said = short(v["text"], 60) if v["text"] is not None else "deleted since"
                shown += f"\n  {label} {v['id'][:8]} ({(v['created_at'] or '')[:10]}): {said}"
        items.add_row(text(i["kind"]), text(f"{i['importance']:.2f}"), text(i["created_at"][:10]),
                      text(i["source_message_id"] or "-"), text(shown, "dim" if i.get("newer") else ""))
    console.print(items)
    st = data["stats"]
    console.print(text(
        f"User totals: {st['sessions']} sessions, {st['buffered_messages']} buffered messages, {st['summaries']} "
        f"summaries ({st['summarized_messages']} messages folded), {st['profile_keys']} profile keys, "
        f"{st['items']} long-term items {st['items_by_kind']}",
    ))
    if st["sentence_keys_waiting"]:
        console.print(text(f"{st['sentence_keys_waiting']} turn(s) wait for their sentence keys (built in the "
                           "background; until then they are found by their own text and vector)", "yellow"))
    if st["query_planner"] != "off":
        console.print(text(f"Query planner: {st['query_planner']} (recall also searches the queries it writes)"))
    _render_embedder(console, st["embedder"])


def _render_embedder(console: Console, emb: dict[str, Any]) -> None:
    console.print(text(f"Embedder: {emb['model']}"))
    if emb["fallback"]:
        console.print(text(f"  fallback: {emb['fallback']}", "bold yellow"))
    if emb.get("pending"):
        console.print(text(f"  reindex pending: {emb['pending']}", "yellow"))
    vecs = emb["vectors"]
    if vecs is not None and emb["reindex"]:
        made = vecs["embedder"] or "an unrecorded embedder"
        console.print(text(f"  this user's vectors were made with {made} (dim {vecs['dimension']}): "
                           f"run `{emb['reindex']}` before recalling", "bold red"))
