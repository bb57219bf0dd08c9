"""Loader for the LongMemEval format (Wu et al., ICLR 2025).

Each LongMemEval instance has its *own* haystack, so one instance becomes one
:class:`EvalConversation` (id = ``question_id``) with exactly one question.

- sessions: ``haystack_sessions[i]`` with id ``haystack_session_ids[i]`` and date
  ``haystack_dates[i]`` (``"2023/05/20 (Sat) 02:21"`` → UTC datetime).
- turn ids follow LongMemEval's own turn-level retrieval code:
  ``"<session_id>_<n>"`` with ``n`` the 1-based position in the session.
- evidence: the turns flagged ``has_answer: true``. Abstention instances
  (``question_id`` ending in ``_abs``) get category ``"abstention"`` and no evidence,
  as LongMemEval itself skips them in retrieval scoring.
- category: ``question_type`` (``single-session-user``, ``multi-session``,
  ``temporal-reasoning``, ``knowledge-update`` …); ``answer_session_ids`` is kept in
  ``metadata`` (space separated) for session-level scoring.

Example::

    >>> ds = load_longmemeval("longmemeval_s.json")  # doctest: +SKIP
    >>> ds.questions[0].evidence  # doctest: +SKIP
    ('answer_4be1b6b4_2_1',)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from hmem.errors import InvalidInput
from hmem.eval.model import EvalConversation, EvalDataset, EvalQuestion, EvalSession, EvalTurn, FileContext

__all__ = ["load_longmemeval", "parse_longmemeval_date"]

_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?\s*$")


def parse_longmemeval_date(text: str) -> datetime:
    """Parse ``"2023/05/20 (Sat) 02:21"`` (weekday and time optional) to UTC.

    >>> parse_longmemeval_date("2023/05/20 (Sat) 02:21").isoformat()
    '2023-05-20T02:21:00+00:00'
    """
    m = _DATE.match(text)
    if not m:
        raise ValueError(f"not a LongMemEval date like '2023/05/20 (Sat) 02:21': {text!r}")
    y, mo, d, h, mi = m.groups()
    return datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), tzinfo=UTC)


def load_longmemeval(path: str | Path) -> EvalDataset:
    """Load a LongMemEval file (``longmemeval_s.json``, ``_m``, ``_oracle``).

    Raises :class:`InvalidInput` naming the file and the field on malformed data.
    """
    file = Path(path)
    ctx = FileContext(file)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{file}: file does not exist", field="path") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        ctx.fail("(file)", f"is not valid UTF-8 JSON: {exc}")
    counts: Counter[str] = Counter()
    conversations: list[EvalConversation] = []
    questions: list[EvalQuestion] = []
    seen: set[str] = set()
    for i, raw_entry in enumerate(ctx.arr(raw, "(root)")):
        conv, question = _entry(ctx, ctx.obj(raw_entry, f"[{i}]"), f"[{i}]", counts)
        if conv.id in seen:
            ctx.fail(f"[{i}].question_id", f"question_id {conv.id!r} is used twice")
        seen.add(conv.id)
        conversations.append(conv)
        questions.append(question)
    counts["questions_without_evidence"] = sum(1 for q in questions if not q.evidence)
    return EvalDataset(
        name="longmemeval", conversations=tuple(conversations), questions=tuple(questions), counts=dict(counts)
    )


def _date(ctx: FileContext, value: object, where: str) -> datetime:
    if not isinstance(value, str):
        ctx.fail(where, f"must be a date string, got {type(value).__name__}")
    try:
        return parse_longmemeval_date(value)
    except ValueError as exc:
        ctx.fail(where, str(exc))


def _entry(
    ctx: FileContext, e: Mapping[str, object], ew: str, counts: Counter[str]
) -> tuple[EvalConversation, EvalQuestion]:
    qid = ctx.text(e, "question_id", ew)
    qtype = ctx.text(e, "question_type", ew)
    raw_sessions = ctx.arr(e.get("haystack_sessions"), f"{ew}.haystack_sessions")
    sids = ctx.arr(e.get("haystack_session_ids"), f"{ew}.haystack_session_ids")
    dates = ctx.arr(e.get("haystack_dates"), f"{ew}.haystack_dates")
    if not len(raw_sessions) == len(sids) == len(dates):
        ctx.fail(
            f"{ew}.haystack_sessions",
            f"haystack_sessions ({len(raw_sessions)}), haystack_session_ids ({len(sids)}) and "
            f"haystack_dates ({len(dates)}) must have the same length",
        )
    is_abstention = qid.endswith("_abs")
    sessions: list[EvalSession] = []
    flagged: list[str] = []
    turn_ids: set[str] = set()
    for si, raw_s in enumerate(raw_sessions):
        sw = f"{ew}.haystack_sessions[{si}]"
        sid = sids[si]
        if not isinstance(sid, str) or not sid:
            ctx.fail(f"{ew}.haystack_session_ids[{si}]", "must be a non-empty string")
        turns: list[EvalTurn] = []
        for ti, raw_t in enumerate(ctx.arr(raw_s, sw)):
            tw = f"{sw}[{ti}]"
            t = ctx.obj(raw_t, tw)
            role = ctx.text(t, "role", tw)
            if role not in ("user", "assistant"):
                ctx.fail(f"{tw}.role", f"must be 'user' or 'assistant', got {role!r}")
            tid = f"{sid}_{ti + 1}"
            if tid in turn_ids:
                ctx.fail(f"{ew}.haystack_session_ids[{si}]", f"session id {sid!r} is used twice")
            turn_ids.add(tid)
            has_answer = t.get("has_answer", False)
            if not isinstance(has_answer, bool):
                ctx.fail(f"{tw}.has_answer", f"must be true or false, got {has_answer!r}")
            if has_answer:
                flagged.append(tid)
            turns.append(
                EvalTurn(
                    id=tid,
                    speaker=role,
                    role=role,  # type: ignore[arg-type]  # checked just above
                    text=ctx.text(t, "content", tw, allow_empty=True),
                )
            )
        sessions.append(
            EvalSession(id=sid, date=_date(ctx, dates[si], f"{ew}.haystack_dates[{si}]"), turns=tuple(turns))
        )
    answer = e.get("answer")
    if not isinstance(answer, str | int | float) or isinstance(answer, bool):
        ctx.fail(f"{ew}.answer", f"must be a string or number, got {type(answer).__name__}")
    answer_sids = [
        s for s in ctx.arr(e.get("answer_session_ids", []), f"{ew}.answer_session_ids") if isinstance(s, str)
    ]
    meta = {"question_type": qtype, "answer_session_ids": " ".join(answer_sids)}
    if is_abstention and flagged:
        counts["abstention_flags_ignored"] += len(flagged)
        meta["has_answer_turns"] = " ".join(flagged)
    conv = EvalConversation(id=qid, language="en", speakers=("user", "assistant"), sessions=tuple(sessions), title=qid)
    question = EvalQuestion(
        id=qid,
        conversation_id=qid,
        question=ctx.text(e, "question", ew),
        answer=str(answer),
        evidence=() if is_abstention else tuple(flagged),
        category="abstention" if is_abstention else qtype,
        asked_at=_date(ctx, e["question_date"], f"{ew}.question_date") if "question_date" in e else None,
        metadata=meta,
    )
    return conv, question
