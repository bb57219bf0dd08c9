"""``hmem demo``: the README's main job, end to end on the embedded default.

1. Replays the sample multi-session conversations of ``data/`` (English, Chinese,
   mixed) into an embedded store (SQLite + Chroma + the default embedder, the packaged
   int8 ONNX MiniLM, in a temporary folder unless ``--data``/``--keep``) through
   :meth:`Memory.add`: the real write path with the offline extractors and a small
   hybrid buffer, so summaries and archiving really happen.
2. For a few later questions whose evidence lies in an early session, asks them in
   a fresh session and prints the assembled context and the budget report: tiers,
   tokens, what was recalled (from which session and date, and whether it is the
   gold evidence), what was dropped and why.
3. Prints, per conversation, the profile the offline rules built for the user: the
   canonical keys name, location, occupation, diet, allergies and pets (where
   present), each with its current value and the earlier values with the date of the
   session that stated them, checked against what the user stated (``profile`` in the
   sample file): "held" says whether the value and its history are there.
4. Prints how long each phase took.

The demo is deterministic and offline: it ignores a configured LLM (``HMEM_LLM_*``)
and embedder (``HMEM_EMBED_*``: it embeds with the default, as ``hmem serve`` does when
nothing is set), and always uses SQLite for sessions, summaries, profile and
items (never a configured Redis).

Example::

    hmem demo                       # all sample conversations, ~30 s on 2 cores
    hmem demo -c en_01 -c zh_01 --questions 2 --json
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from contextlib import ExitStack
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from hmem.cli.common import Output, common_parent, non_negative_int, open_memory, positive_int
from hmem.cli.views import render_context, table, text
from hmem.views import context_to_dict, short

if TYPE_CHECKING:
    from rich.console import Console

    from hmem.eval.model import EvalConversation, EvalQuestion
    from hmem.memory import Memory
    from hmem.types import ProfileEntry

__all__ = ["DEMO_SYSTEM_PROMPT", "PROFILE_KEYS", "demo_overrides", "pick_questions", "profile_rows", "register"]

#: Sample sessions hold 270-410 tokens each: a 300-token buffer overflows in every
#: session, so each one gets a rolling summary and archives its older turns.
DEFAULT_BUFFER_TOKENS = 300
DEFAULT_BUDGET = 1200
DEMO_SYSTEM_PROMPT = "You are a helpful personal assistant. Answer from memory when it helps."
_CATEGORY_ORDER = ("single-hop", "preference", "temporal", "multi-hop", "knowledge-update")
#: The profile keys the demo's table shows (issue 13: what a user states about themselves).
PROFILE_KEYS = ("name", "location", "occupation", "diet", "allergies", "pets")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "demo",
        parents=[common_parent()],
        help="replay the sample conversations and show assembled contexts with budget reports",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary store and print its path")
    p.add_argument("--conversation", "-c", action="append", default=None,
                   help="sample conversation id or prefix (repeatable; default: all)")
    p.add_argument("--questions", type=non_negative_int, default=1, help="questions per conversation (default 1)")
    p.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET,
                   help=f"prompt budget per question in tokens (default {DEFAULT_BUDGET})")
    p.add_argument("-k", type=positive_int, default=None,
                   help="upper bound of recalled items per question (default: the budget and relevance decide)")
    p.add_argument("--buffer-tokens", type=positive_int, default=DEFAULT_BUFFER_TOKENS,
                   help=f"short-term buffer per session (default {DEFAULT_BUFFER_TOKENS})")
    p.add_argument("--archive-on-evict", action="store_true",
                   help="archive a turn only when compaction evicts it (default: every turn as it is added)")
    p.add_argument("--model", default=None, help="model whose tokenizer and window apply (default: HMEM_MODEL)")
    p.add_argument("--samples", default=None, help="folder or file of sample conversations (default: data/)")
    p.set_defaults(func=run)


def pick_questions(conversation: EvalConversation, questions: tuple[EvalQuestion, ...], n: int) -> list[EvalQuestion]:
    """Up to ``n`` questions whose evidence all lies in the first half of the
    conversation (at least S1-S2), earliest evidence and simplest category first."""
    order = {s.id: i for i, s in enumerate(conversation.sessions)}
    early = max(2, len(conversation.sessions) // 2)

    def last_session(q: EvalQuestion) -> int:
        return max(order[e.split(":", 1)[0]] for e in q.evidence)

    eligible = [q for q in questions if q.evidence and last_session(q) < early and q.category in _CATEGORY_ORDER]
    eligible.sort(key=lambda q: (last_session(q), _CATEGORY_ORDER.index(q.category)))
    return eligible[:n]


def demo_overrides(args: argparse.Namespace, folder: str) -> dict[str, Any]:
    """Settings the demo pins whatever ``HMEM_*`` says: embedded stores only (it must never
    write sample data into a configured Redis), no LLM and the default embedder (packaged,
    deterministic and offline) — the one every other entry point uses by default, so
    ``hmem serve --data`` answers from a kept demo store as it is."""
    from hmem.config import Settings

    overrides: dict[str, Any] = {
        "data_dir": folder, "sessions": "sqlite", "summaries": "sqlite", "profile": "sqlite", "items": "sqlite",
        "llm_model": None, "summary_model": None, "embed_provider": Settings().embed_provider, "embed_model": None,
        "window_policy": "hybrid", "buffer_tokens": args.buffer_tokens, "compaction": "foreground",
        "extract_profile": True, "extract_facts": True,
        "archive_turns": "on_evict" if args.archive_on_evict else "on_add",
    }
    if args.model:
        overrides["model"] = args.model
    return overrides


def run(args: argparse.Namespace) -> int:
    from hmem.cli.samples import load_conversations, load_dataset

    started = time.perf_counter()
    out = Output(args.json)
    dataset = load_dataset(args.samples)
    conversations = load_conversations(None, args.conversation, dataset)
    with ExitStack() as stack:
        folder = args.data
        if folder is None:
            folder = tempfile.mkdtemp(prefix="hmem-demo-")
            if not args.keep:
                stack.callback(shutil.rmtree, folder, True)
        overrides = demo_overrides(args, folder)
        mem = stack.enter_context(open_memory(args, **overrides))
        t_open = time.perf_counter()
        mem.warm_up()  # load the model now, so its cost is measured apart
        t_model = time.perf_counter()
        ingested = _ingest(mem, conversations, out)
        t_ingest = time.perf_counter()
        answers = []
        for conv in conversations:
            for q in pick_questions(conv, dataset.questions_for(conv.id), args.questions):
                answers.append(_ask(mem, conv, q, args.budget, args.k))
        t_done = time.perf_counter()
    data = {
        "data_dir": folder if (args.keep or args.data) else None,
        "settings": {"buffer_tokens": args.buffer_tokens, "budget": args.budget, "k": args.k, "model": mem.options.model,
                     "window_policy": "hybrid", "vectors": _vectors_name(args),
                     "embedder": ingested[0]["stats"]["embedder"]["model"]},  # what a kept store's vectors are made with
        "conversations": ingested,
        "questions": answers,
        "timing_s": {
            "open": round(t_open - started, 2), "model_load": round(t_model - t_open, 2),
            "ingest": round(t_ingest - t_model, 2), "questions": round(t_done - t_ingest, 2),
            "total": round(time.perf_counter() - started, 2),
        },
    }
    out.emit(data, lambda console: _render(console, data))
    return 0


def _vectors_name(args: argparse.Namespace) -> str:
    from hmem.cli.common import settings_from_args

    return settings_from_args(args).vectors


def _ingest(mem: Memory, conversations: list[EvalConversation], out: Output) -> list[dict[str, Any]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from hmem.cli.samples import session_messages

    err = out.err
    total = sum(len(c.sessions) for c in conversations)
    results: list[dict[str, Any]] = []
    progress = Progress(
        TextColumn("ingest {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, disable=not err.is_terminal, transient=False,
    )
    with progress:
        task = progress.add_task("", total=total)
        for conv in conversations:
            started = time.perf_counter()
            reused = bool(mem.session_infos(conv.id))  # a kept --data folder: ask again without re-adding
            evicted = 0
            for session in conv.sessions:
                progress.update(task, description=f"{conv.id} {session.id}")
                if not reused:
                    result = mem.add(conv.id, session.id, session_messages(session))  # one batch per session
                    evicted += result.compaction.evicted if result.compaction else 0
                progress.advance(task)
            results.append({
                "id": conv.id, "language": conv.language, "title": conv.title, "sessions": len(conv.sessions),
                "turns": conv.turn_count, "evicted_from_buffers": evicted, "reused": reused,
                "seconds": round(time.perf_counter() - started, 2), "stats": mem.stats(conv.id),
                "profile": profile_rows(mem, conv),
            })
    return results


def profile_rows(mem: Memory, conv: EvalConversation) -> list[dict[str, Any]]:
    """The :data:`PROFILE_KEYS` and the keys the user stated (``conv.profile``), each
    ``{key, value, since, history: [{value, date}], stated, held}``. Dates are the dates
    of the sample sessions that stated the values (the replay itself happens today);
    ``value`` None: the key was deleted, superseded or never set. ``stated`` is what the
    user said (None if nothing); ``held`` whether the profile has it now and every earlier
    stated value in its history (None when nothing was stated)."""
    from hmem.profile.model import format_value

    dates = {s.id: s.date.date().isoformat() for s in conv.sessions}
    stated = {v.key: v for v in conv.profile}

    def when(entry: ProfileEntry) -> str:
        return dates.get(entry.provenance.session_id or "", entry.valid_from.date().isoformat())

    rows: list[dict[str, Any]] = []
    for key in [*PROFILE_KEYS, *(k for k in stated if k not in PROFILE_KEYS)]:
        versions = mem.profile.history(conv.id, key)
        want = stated.get(key)
        if not versions and want is None:
            continue
        current = versions[-1] if versions and versions[-1].is_current else None
        earlier = versions[:-1] if current else versions
        value = format_value(current.value) if current and current.value is not None else None
        history = [{"value": None if e.value is None else format_value(e.value), "date": when(e)} for e in earlier]
        held = None
        if want is not None:
            past = " | ".join(h["value"] or "" for h in history).casefold()
            held = want.matches(value) and all(old.casefold() in past for old in want.earlier)
        rows.append({"key": key, "value": value, "since": when(current) if current else None, "history": history,
                     "stated": None if want is None else _stated_text(want.value, want.earlier), "held": held})
    return rows


def _stated_text(value: str, earlier: tuple[str, ...]) -> str:
    return " → ".join([*earlier, value])


def _ask(mem: Memory, conv: EvalConversation, q: EvalQuestion, budget: int, k: int | None) -> dict[str, Any]:
    session = "ask-" + q.id.rsplit(":", 1)[-1]
    asked_at = q.asked_at or conv.sessions[-1].date + timedelta(days=7)
    started = time.perf_counter()
    if not mem.history(conv.id, session):
        mem.add(conv.id, session, [{"role": "user", "content": q.question, "created_at": asked_at.isoformat()}])
    ctx = mem.context(conv.id, session, budget=budget, system_prompt=DEMO_SYSTEM_PROMPT, k=k)
    view = context_to_dict(ctx, mem, conv.id, evidence=q.evidence)
    dates = {s.id: s.date.date().isoformat() for s in conv.sessions}
    kept_gold = [r for r in view["recalled"] if r["kept"] and r.get("is_evidence")]
    where = {e: _locate(mem, conv.id, e, view["recalled"]) for e in q.evidence}
    return {
        "conversation_id": conv.id, "question_id": q.id, "category": q.category, "question": q.question,
        "answer": q.answer, "session_id": session,
        "evidence": [{"turn": e, "session": e.split(":", 1)[0], "date": dates[e.split(":", 1)[0]],
                      "text": conv.turn(e).text, "found": where[e]} for e in q.evidence],
        "evidence_recalled": sorted({r["source_message_id"] for r in kept_gold}),
        "seconds": round(time.perf_counter() - started, 3),
        **view,
    }


def _locate(mem: Memory, user: str, turn_id: str, recalled: list[dict[str, Any]]) -> str:
    """Where a gold evidence turn ended up, in words: why it is (not) in the prompt."""
    rows = [r for r in recalled if r.get("source_message_id") == turn_id]
    kept = [r for r in rows if r["kept"]]
    if kept:
        return f"in the prompt: recalled at rank {kept[0]['rank']} ({kept[0]['kind']})"
    if rows:
        return f"recalled at rank {rows[0]['rank']} but dropped: {rows[0]['reason']}"
    session = turn_id.split(":", 1)[0]
    items = mem.items(user, source_message_id=turn_id)
    if items:
        return f"in long-term memory ({', '.join(sorted({i.kind for i in items}))}) but not among the top k for this query"
    if any(m.id == turn_id for m in mem.history(user, session)):
        return (f"still in session {session}'s short-term buffer: with --archive-on-evict only turns evicted "
                "from a buffer are archived for other sessions to recall")
    summary = mem.summary(user, session)
    return f"only in session {session}'s summary" if summary else "not stored (nothing extracted from it)"


def _render_profile(console: Console, conv: dict[str, Any]) -> None:
    rows = conv.get("profile") or []
    checked = [r for r in rows if r["held"] is not None]
    grid = table(f"Profile of {conv['id']} ({conv['title']})",
                 ["key", "the user said", "current value", "since", "earlier values (session date)", "held"])
    for r in rows:
        earlier = "; ".join(f"{h['value'] if h['value'] is not None else '(deleted)'} ({h['date']})"
                            for h in r["history"]) or "-"
        mark = "-" if r["held"] is None else ("yes" if r["held"] else "NO")
        grid.add_row(text(r["key"]), text(r["stated"] or "-"), text(r["value"] if r["value"] is not None else "(none)"),
                     text(r["since"] or "-"), text(earlier), text(mark))
    missed = [r["key"] for r in checked if not r["held"]]
    grid.caption = (f"stated keys held: {len(checked) - len(missed)}/{len(checked)}"
                    + (f" (missed: {', '.join(missed)})" if missed else ""))
    console.print(grid)


def _render(console: Console, data: dict[str, Any]) -> None:
    s = data["settings"]
    convs = table(
        f"Ingested through Memory.add (hybrid buffer {s['buffer_tokens']} tokens, offline extractors, "
        f"vectors: {s['vectors']})",
        ["conversation", "lang", ("sessions", "right"), ("turns", "right"), ("summaries", "right"),
         ("folded", "right"), ("buffered", "right"), ("profile keys", "right"), "long-term items", ("s", "right")],
    )
    for c in data["conversations"]:
        st = c["stats"]
        kinds = ", ".join(f"{k} {v}" for k, v in st["items_by_kind"].items())
        convs.add_row(text(c["id"]), text(c["language"]), text(c["sessions"]), text(c["turns"]), text(st["summaries"]),
                      text(st["summarized_messages"]), text(st["buffered_messages"]), text(st["profile_keys"]),
                      text(f"{st['items']} ({kinds})"), text(c["seconds"]))
    console.print(convs)
    for c in data["conversations"]:
        _render_profile(console, c)
    for q in data["questions"]:
        console.print()
        console.rule(text(f"{q['question_id']} ({q['category']}), asked in new session {q['session_id']}", "bold cyan"))
        console.print(text(f"Q: {q['question']}", "bold"))
        console.print(text(f"Gold answer: {q['answer']}"))
        render_context(console, q)
        found = ", ".join(q["evidence_recalled"]) or "none"
        console.print(text(f"Gold evidence in the prompt: {found} of {len(q['evidence'])}",
                           "bold green" if q["evidence_recalled"] else "bold red"))
        for e in q["evidence"]:
            console.print(text(f"  {e['turn']} (session {e['session']}, {e['date']}): {short(e['text'], 90)}"))
            console.print(text(f"    → {e['found']}", "green" if e["found"].startswith("in the prompt") else "yellow"))
    t = data["timing_s"]
    console.print()
    console.print(text(
        f"Elapsed {t['total']:.1f} s: open {t['open']:.1f} s, model load {t['model_load']:.1f} s, "
        f"ingest {t['ingest']:.1f} s ({sum(c['turns'] for c in data['conversations'])} turns), "
        f"questions {t['questions']:.1f} s", "bold",
    ))
    if data["data_dir"]:
        console.print(text(f"Store kept in {data['data_dir']}, its vectors made with {s['embedder']} (the default "
                           f"embedder; try: hmem inspect --data {data['data_dir']} {data['conversations'][0]['id']} S1, "
                           f"or hmem serve --data {data['data_dir']})"))
