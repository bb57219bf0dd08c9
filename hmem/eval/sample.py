"""Loader for hmem's own sample set (``data/conversations/*.json``).

The format is documented in ``data/SCHEMA.md`` and ``data/schema.json``. The loader
checks everything the JSON Schema says plus what a schema cannot: unique ids, turn
ids that belong to their session, evidence that points at real turns, tool results
that answer an earlier tool call, sessions in date order.

Example::

    >>> from hmem.eval.sample import load_sample
    >>> ds = load_sample()                      # the repository's data/ folder
    >>> len(ds.conversations) >= 6
    True
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from hmem.errors import InvalidInput
from hmem.eval.model import (
    CATEGORIES,
    LANGUAGES,
    EvalConversation,
    EvalDataset,
    EvalQuestion,
    EvalSession,
    EvalToolCall,
    EvalTurn,
    FileContext,
    StatedProfileValue,
)

__all__ = ["SCHEMA_VERSION", "default_sample_dir", "load_sample", "load_sample_file"]

SCHEMA_VERSION = 1
_SESSION_ID = re.compile(r"^S[1-9][0-9]*$")
_TURN_ID = re.compile(r"^(S[1-9][0-9]*):T[1-9][0-9]*$")
_TOP_KEYS = {"schema_version", "id", "language", "title", "description", "speakers", "sessions", "questions", "profile"}
_STATED_KEYS = {"key", "value", "accept", "evidence", "earlier"}
_SESSION_KEYS = {"id", "date", "turns"}
_TURN_KEYS = {"id", "role", "text", "speaker", "tool_calls", "tool_call_id", "name"}
_CALL_KEYS = {"id", "name", "arguments"}
_QUESTION_KEYS = {"id", "question", "answer", "category", "evidence", "previous_evidence", "asked_at", "note"}


def default_sample_dir() -> Path:
    """``data/`` at the root of the source tree this package was imported from."""
    return Path(__file__).resolve().parents[2] / "data"


def load_sample(path: str | Path | None = None) -> EvalDataset:
    """Load and validate the sample set.

    ``path`` may be a data folder (its ``conversations/`` subfolder is read when
    present), a folder of conversation files, or one file. Default: the repository's
    ``data/`` folder. Raises :class:`InvalidInput` naming the file and the field.
    """
    root = Path(path) if path is not None else default_sample_dir()
    if not root.exists():
        raise InvalidInput(
            f"no sample data at {root}: the sample set lives in the data/ folder of an hmem source "
            "checkout; pass path= to such a folder (or to one conversation file)",
            field="path",
        )
    if root.is_dir():
        folder = root / "conversations" if (root / "conversations").is_dir() else root
        files = sorted(p for p in folder.glob("*.json") if p.name != "schema.json")
        if not files:
            raise InvalidInput(f"{folder}: no conversation files (*.json) found", field="path")
    else:
        files = [root]
    conversations: list[EvalConversation] = []
    questions: list[EvalQuestion] = []
    seen_conv: dict[str, Path] = {}
    seen_q: dict[str, Path] = {}
    for file in files:
        conv, qs = load_sample_file(file)
        if conv.id in seen_conv:
            FileContext(file).fail("id", f"conversation id {conv.id!r} is also used by {seen_conv[conv.id]}")
        seen_conv[conv.id] = file
        for i, q in enumerate(qs):
            if q.id in seen_q:
                FileContext(file).fail(f"questions[{i}].id", f"question id {q.id!r} is also used by {seen_q[q.id]}")
            seen_q[q.id] = file
        conversations.append(conv)
        questions.extend(qs)
    return EvalDataset(name="sample", conversations=tuple(conversations), questions=tuple(questions))


def load_sample_file(path: str | Path) -> tuple[EvalConversation, list[EvalQuestion]]:
    """Load one conversation file of the sample format."""
    file = Path(path)
    ctx = FileContext(file)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        ctx.fail("path", "file does not exist")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        ctx.fail("(file)", f"is not valid UTF-8 JSON: {exc}")
    top = ctx.obj(raw, "(root)")
    _no_unknown(ctx, top, _TOP_KEYS, "")
    if top.get("schema_version") != SCHEMA_VERSION:
        ctx.fail("schema_version", f"must be {SCHEMA_VERSION}, got {top.get('schema_version')!r}")
    conv_id = ctx.text(top, "id", "")
    language = ctx.text(top, "language", "")
    if language not in LANGUAGES:
        ctx.fail("language", f"must be one of {list(LANGUAGES)}, got {language!r}")
    title = ctx.text(top, "title", "", allow_empty=True) if "title" in top else ""
    if "description" in top:
        ctx.text(top, "description", "", allow_empty=True)
    speakers = ctx.obj(top.get("speakers"), "speakers")
    _no_unknown(ctx, speakers, {"user", "assistant"}, "speakers")
    user_name = ctx.text(speakers, "user", "speakers")
    assistant_name = ctx.text(speakers, "assistant", "speakers")

    sessions = _sessions(ctx, top, user_name, assistant_name)
    conv = EvalConversation(
        id=conv_id, language=language, speakers=(user_name, assistant_name), sessions=sessions, title=title
    )
    conv = replace(conv, profile=_stated_profile(ctx, top, conv.turn_ids))
    questions = _questions(ctx, top, conv)
    return conv, questions


def _no_unknown(ctx: FileContext, obj: Mapping[str, object], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        path = f"{where}.{unknown[0]}" if where else unknown[0]
        ctx.fail(path, f"unknown field (allowed: {sorted(allowed)})")


def _date(ctx: FileContext, value: object, where: str) -> datetime:
    if not isinstance(value, str):
        ctx.fail(where, "must be an ISO-8601 date-time string")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        ctx.fail(where, f"is not an ISO-8601 date-time: {value!r}")
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def _sessions(
    ctx: FileContext, top: Mapping[str, object], user_name: str, assistant_name: str
) -> tuple[EvalSession, ...]:
    raw_sessions = ctx.arr(top.get("sessions"), "sessions")
    if not raw_sessions:
        ctx.fail("sessions", "must hold at least one session")
    out: list[EvalSession] = []
    turn_ids: set[str] = set()
    for si, raw_s in enumerate(raw_sessions):
        sw = f"sessions[{si}]"
        s = ctx.obj(raw_s, sw)
        _no_unknown(ctx, s, _SESSION_KEYS, sw)
        sid = ctx.text(s, "id", sw)
        if not _SESSION_ID.match(sid):
            ctx.fail(f"{sw}.id", f"must look like 'S1', got {sid!r}")
        if any(prev.id == sid for prev in out):
            ctx.fail(f"{sw}.id", f"session id {sid!r} is used twice")
        date = _date(ctx, s.get("date"), f"{sw}.date")
        if out and date < out[-1].date:
            ctx.fail(f"{sw}.date", f"is earlier than the previous session's date ({out[-1].date.isoformat()})")
        raw_turns = ctx.arr(s.get("turns"), f"{sw}.turns")
        if not raw_turns:
            ctx.fail(f"{sw}.turns", "must hold at least one turn")
        open_calls: set[str] = set()
        turns: list[EvalTurn] = []
        for ti, raw_t in enumerate(raw_turns):
            tw = f"{sw}.turns[{ti}]"
            turn = _turn(
                ctx,
                ctx.obj(raw_t, tw),
                tw,
                sid,
                user_name=user_name,
                assistant_name=assistant_name,
                open_calls=open_calls,
            )
            if turn.id in turn_ids:
                ctx.fail(f"{tw}.id", f"turn id {turn.id!r} is used twice")
            turn_ids.add(turn.id)
            turns.append(turn)
        out.append(EvalSession(id=sid, date=date, turns=tuple(turns)))
    return tuple(out)


def _turn(
    ctx: FileContext,
    t: Mapping[str, object],
    tw: str,
    sid: str,
    *,
    user_name: str,
    assistant_name: str,
    open_calls: set[str],
) -> EvalTurn:
    _no_unknown(ctx, t, _TURN_KEYS, tw)
    tid = ctx.text(t, "id", tw)
    m = _TURN_ID.match(tid)
    if not m or m.group(1) != sid:
        ctx.fail(f"{tw}.id", f"must look like '{sid}:T<n>' (session {sid}), got {tid!r}")
    role = ctx.text(t, "role", tw)
    if role not in ("user", "assistant", "tool"):
        ctx.fail(f"{tw}.role", f"must be 'user', 'assistant' or 'tool', got {role!r}")
    calls: list[EvalToolCall] = []
    if "tool_calls" in t:
        if role != "assistant":
            ctx.fail(f"{tw}.tool_calls", "only assistant turns may call tools")
        for ci, raw_c in enumerate(ctx.arr(t["tool_calls"], f"{tw}.tool_calls")):
            cw = f"{tw}.tool_calls[{ci}]"
            c = ctx.obj(raw_c, cw)
            _no_unknown(ctx, c, _CALL_KEYS, cw)
            call = EvalToolCall(
                id=ctx.text(c, "id", cw), name=ctx.text(c, "name", cw), arguments=ctx.text(c, "arguments", cw)
            )
            try:
                json.loads(call.arguments)
            except json.JSONDecodeError:
                ctx.fail(f"{cw}.arguments", "must be a JSON text (a string holding JSON)")
            if call.id in open_calls or any(x.id == call.id for x in calls):
                ctx.fail(f"{cw}.id", f"tool call id {call.id!r} is used twice in this session")
            calls.append(call)
        if not calls:
            ctx.fail(f"{tw}.tool_calls", "must not be empty when present")
    text = ctx.text(t, "text", tw, allow_empty=bool(calls))
    tool_call_id: str | None = None
    if role == "tool":
        tool_call_id = ctx.text(t, "tool_call_id", tw)
        if tool_call_id not in open_calls:
            ctx.fail(f"{tw}.tool_call_id", f"{tool_call_id!r} answers no earlier tool call of this session")
        open_calls.discard(tool_call_id)
    elif "tool_call_id" in t:
        ctx.fail(f"{tw}.tool_call_id", "only tool turns answer a tool call")
    open_calls.update(c.id for c in calls)
    if "speaker" in t:
        speaker = ctx.text(t, "speaker", tw)
    elif role == "tool":
        speaker = ctx.text(t, "name", tw) if "name" in t else "tool"
    else:
        speaker = user_name if role == "user" else assistant_name
    if "name" in t and role != "tool":
        ctx.fail(f"{tw}.name", "only tool turns carry the tool's name")
    return EvalTurn(
        id=tid,
        speaker=speaker,
        role=role,  # type: ignore[arg-type]  # checked against the three roles above
        text=text,
        tool_calls=tuple(calls),
        tool_call_id=tool_call_id,
    )


def _id_list(ctx: FileContext, q: Mapping[str, object], key: str, qw: str, known: frozenset[str]) -> tuple[str, ...]:
    raw = ctx.arr(q.get(key, []), f"{qw}.{key}")
    out: list[str] = []
    for i, v in enumerate(raw):
        if not isinstance(v, str):
            ctx.fail(f"{qw}.{key}[{i}]", "must be a turn id string")
        if v not in known:
            ctx.fail(f"{qw}.{key}[{i}]", f"turn {v!r} does not exist in this conversation")
        if v in out:
            ctx.fail(f"{qw}.{key}[{i}]", f"turn {v!r} is listed twice")
        out.append(v)
    return tuple(out)


def _questions(ctx: FileContext, top: Mapping[str, object], conv: EvalConversation) -> list[EvalQuestion]:
    raw_qs = ctx.arr(top.get("questions"), "questions")
    known = conv.turn_ids
    out: list[EvalQuestion] = []
    for qi, raw_q in enumerate(raw_qs):
        qw = f"questions[{qi}]"
        q = ctx.obj(raw_q, qw)
        _no_unknown(ctx, q, _QUESTION_KEYS, qw)
        qid = ctx.text(q, "id", qw)
        if any(prev.id == qid for prev in out):
            ctx.fail(f"{qw}.id", f"question id {qid!r} is used twice")
        category = ctx.text(q, "category", qw)
        if category not in CATEGORIES:
            ctx.fail(f"{qw}.category", f"must be one of {list(CATEGORIES)}, got {category!r}")
        if "evidence" not in q:
            ctx.fail(f"{qw}.evidence", "is required (an empty list for abstention questions)")
        evidence = _id_list(ctx, q, "evidence", qw, known)
        previous = _id_list(ctx, q, "previous_evidence", qw, known)
        if (category == "abstention") != (not evidence):
            ctx.fail(f"{qw}.evidence", "must be empty exactly when the category is 'abstention'")
        if category == "knowledge-update" and not previous:
            ctx.fail(f"{qw}.previous_evidence", "a knowledge-update question must name the turn with the old value")
        if set(previous) & set(evidence):
            ctx.fail(f"{qw}.previous_evidence", "must not repeat an evidence turn")
        asked_at = _date(ctx, q["asked_at"], f"{qw}.asked_at") if "asked_at" in q else None
        meta = {"note": ctx.text(q, "note", qw, allow_empty=True)} if "note" in q else {}
        out.append(
            EvalQuestion(
                id=qid,
                conversation_id=conv.id,
                question=ctx.text(q, "question", qw),
                answer=ctx.text(q, "answer", qw),
                evidence=evidence,
                category=category,
                previous_evidence=previous,
                asked_at=asked_at,
                metadata=meta,
            )
        )
    return out


def _strings(ctx: FileContext, parent: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    raw = ctx.arr(parent.get(key, []), f"{where}.{key}")
    if not all(isinstance(v, str) and v.strip() for v in raw):
        ctx.fail(f"{where}.{key}", "must be a list of non-empty strings")
    return tuple(str(v) for v in raw)


def _stated_profile(ctx: FileContext, top: Mapping[str, object], known: frozenset[str]) -> tuple[StatedProfileValue, ...]:
    """The optional ``profile``: what the user states about themselves, one entry per key."""
    from hmem.profile.schema import KEYS

    out: list[StatedProfileValue] = []
    for pi, raw in enumerate(ctx.arr(top.get("profile", []), "profile")):
        where = f"profile[{pi}]"
        entry = ctx.obj(raw, where)
        _no_unknown(ctx, entry, _STATED_KEYS, where)
        key = ctx.text(entry, "key", where)
        if key not in KEYS:
            ctx.fail(f"{where}.key", f"must be a canonical profile key (one of {sorted(KEYS)}), got {key!r}")
        if any(prev.key == key for prev in out):
            ctx.fail(f"{where}.key", f"key {key!r} is listed twice")
        evidence = _id_list(ctx, entry, "evidence", where, known)
        if not evidence:
            ctx.fail(f"{where}.evidence", "must name at least one turn that states the value")
        out.append(StatedProfileValue(key=key, value=ctx.text(entry, "value", where), evidence=evidence,
                                      accept=_strings(ctx, entry, "accept", where),
                                      earlier=_strings(ctx, entry, "earlier", where)))
    return tuple(out)
