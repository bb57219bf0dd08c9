"""Loader for the LoCoMo benchmark format (Maharana et al., 2024).

The data is CC BY-NC: it is read from where it lies (``../shared/data/locomo/`` next
to a checkout), never copied into the repository.

Mapping to :mod:`hmem.eval.model`:

- one sample → one :class:`EvalConversation` (id = ``sample_id``); ``speaker_a`` plays
  the ``user`` role, ``speaker_b`` the ``assistant`` role; sessions are
  ``session_<n>`` in numeric order, dated from ``session_<n>_date_time``
  (``"1:56 pm on 8 May, 2023"`` → a UTC datetime). Date keys without turns are ignored.
- turn ids are the ``dia_id`` values (``"D3:7"``); a shared photo's ``blip_caption``
  becomes :attr:`EvalTurn.image_caption`.
- ``qa`` rows → :class:`EvalQuestion` with id ``"<sample_id>:q<n>"`` (1-based) and the
  category names of :data:`LOCOMO_CATEGORIES`. Adversarial questions have no
  ``answer``; they get ``"not mentioned in the conversation"`` and keep
  ``adversarial_answer`` in metadata.

Evidence normalisation (see :func:`normalise_evidence`): ``"D8:6; D9:17"`` and
``"D9:1 D4:4"`` are split; ``"D:11:26"`` → ``"D11:26"``; ``"D30:05"`` → ``"D30:5"``;
tokens that are not turn ids (``"D"``) are dropped; ids of turns that do not exist are
dropped. Every fix is counted in :attr:`EvalDataset.counts` and listed in ``warnings``.

Example::

    >>> ds = load_locomo("../shared/data/locomo/locomo_dev.json",
    ...                  corrections_path="../shared/data/locomo/audit_corrections_dev.json")  # doctest: +SKIP
    >>> ds.counts["corrections_applied"]  # doctest: +SKIP
    32
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from hmem.errors import InvalidInput
from hmem.eval.model import (
    EvalConversation,
    EvalDataset,
    EvalQuestion,
    EvalSession,
    EvalTurn,
    FileContext,
)

__all__ = [
    "LOCOMO_CATEGORIES",
    "default_locomo_dir",
    "load_locomo",
    "normalise_evidence",
    "parse_locomo_date",
]

LOCOMO_CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL_ANSWER = "not mentioned in the conversation"

_SESSION_KEY = re.compile(r"^session_([1-9][0-9]*)$")
_TOKEN = re.compile(r"^D:?([0-9]+):([0-9]+)$")
_SPLIT = re.compile(r"[;,\s]+")
_DATE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.IGNORECASE
)
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}


def default_locomo_dir() -> Path:
    """``../shared/data/locomo`` relative to the source tree (where CI and the
    development machines keep the licensed data)."""
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo"


def normalise_evidence(raw: str) -> tuple[list[str], list[str]]:
    """Split one LoCoMo evidence string into canonical turn ids.

    Returns ``(ids, rejected)``: ``ids`` like ``"D11:26"`` (no leading zeros), and
    the tokens that are not turn ids at all.

    >>> normalise_evidence("D8:6; D9:17")
    (['D8:6', 'D9:17'], [])
    >>> normalise_evidence("D:11:26")
    (['D11:26'], [])
    >>> normalise_evidence("D30:05")
    (['D30:5'], [])
    >>> normalise_evidence("D")
    ([], ['D'])
    """
    ids: list[str] = []
    rejected: list[str] = []
    for token in _SPLIT.split(raw.strip()):
        if not token:
            continue
        m = _TOKEN.match(token)
        if m and int(m.group(1)) > 0 and int(m.group(2)) > 0:
            ids.append(f"D{int(m.group(1))}:{int(m.group(2))}")
        else:
            rejected.append(token)
    return ids, rejected


def parse_locomo_date(text: str) -> datetime:
    """Parse LoCoMo's ``"1:56 pm on 8 May, 2023"`` to an aware UTC datetime.

    Raises :class:`ValueError` on anything else.

    >>> parse_locomo_date("1:56 pm on 8 May, 2023").isoformat()
    '2023-05-08T13:56:00+00:00'
    """
    m = _DATE.match(text)
    if not m:
        raise ValueError(f"not a LoCoMo date like '1:56 pm on 8 May, 2023': {text!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month {month_name!r} in {text!r}")
    h = int(hour)
    if not 1 <= h <= 12:
        raise ValueError(f"hour must be 1..12 in a 12-hour time: {text!r}")
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute), tzinfo=UTC)


def load_locomo(path: str | Path, *, corrections_path: str | Path | None = None) -> EvalDataset:
    """Load a LoCoMo file (a JSON list of samples) into an :class:`EvalDataset`.

    ``corrections_path``: an audit file whose ``WRONG_CITATION`` rows replace a
    question's evidence with ``correct_evidence`` (matched by ``sample_id`` and the
    exact ``question`` text). Other rows are recorded as ``metadata["audit"]``.
    Raises :class:`InvalidInput` naming the file and the field on malformed data.
    """
    file = Path(path)
    ctx = FileContext(file)
    samples = ctx.arr(_read_json(ctx), "(root)")
    counts: Counter[str] = Counter()
    warnings: list[str] = []
    conversations: list[EvalConversation] = []
    questions: list[EvalQuestion] = []
    for i, raw in enumerate(samples):
        conv = _conversation(ctx, ctx.obj(raw, f"[{i}]"), f"[{i}]", counts)
        if any(c.id == conv.id for c in conversations):
            ctx.fail(f"[{i}].sample_id", f"sample_id {conv.id!r} is used twice")
        conversations.append(conv)
        questions.extend(_questions(ctx, ctx.obj(raw, f"[{i}]"), f"[{i}]", conv, counts=counts, warnings=warnings))
    if corrections_path is not None:
        questions = _apply_corrections(Path(corrections_path), conversations, questions, counts, warnings)
    counts["questions_without_evidence"] = sum(1 for q in questions if not q.evidence)
    return EvalDataset(
        name="locomo",
        conversations=tuple(conversations),
        questions=tuple(questions),
        counts=dict(counts),
        warnings=tuple(warnings),
    )


def _read_json(ctx: FileContext) -> object:
    try:
        return json.loads(ctx.path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(
            f"{ctx.path}: file does not exist (LoCoMo is not shipped with hmem; see docs/eval.md)", field="path"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        ctx.fail("(file)", f"is not valid UTF-8 JSON: {exc}")


def _conversation(ctx: FileContext, sample: Mapping[str, object], sw: str, counts: Counter[str]) -> EvalConversation:
    sample_id = ctx.text(sample, "sample_id", sw)
    cw = f"{sw}.conversation"
    conv = ctx.obj(sample.get("conversation"), cw)
    speaker_a = ctx.text(conv, "speaker_a", cw)
    speaker_b = ctx.text(conv, "speaker_b", cw)
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.match(k)))
    counts["sessions_without_turns"] += sum(
        1 for k in conv if k.endswith("_date_time") and k.removesuffix("_date_time") not in conv
    )
    sessions: list[EvalSession] = []
    seen: set[str] = set()
    for n in numbers:
        key = f"session_{n}"
        dkey = f"{key}_date_time"
        date_text = ctx.text(conv, dkey, cw)
        try:
            date = parse_locomo_date(date_text)
        except ValueError as exc:
            ctx.fail(f"{cw}.{dkey}", str(exc))
        turns: list[EvalTurn] = []
        for ti, raw_t in enumerate(ctx.arr(conv[key], f"{cw}.{key}")):
            tw = f"{cw}.{key}[{ti}]"
            t = ctx.obj(raw_t, tw)
            raw_id = ctx.text(t, "dia_id", tw)
            ids, _ = normalise_evidence(raw_id)
            if len(ids) != 1:
                ctx.fail(f"{tw}.dia_id", f"is not a turn id like 'D1:3': {raw_id!r}")
            if ids[0] in seen:
                ctx.fail(f"{tw}.dia_id", f"turn id {ids[0]!r} is used twice")
            seen.add(ids[0])
            speaker = ctx.text(t, "speaker", tw)
            caption = t.get("blip_caption")
            turns.append(
                EvalTurn(
                    id=ids[0],
                    speaker=speaker,
                    role="user" if speaker == speaker_a else "assistant",
                    text=ctx.text(t, "text", tw, allow_empty=True),
                    image_caption=caption if isinstance(caption, str) and caption.strip() else None,
                )
            )
        if turns:
            sessions.append(EvalSession(id=key, date=date, turns=tuple(turns)))
        else:
            counts["sessions_without_turns"] += 1
    if not sessions:
        ctx.fail(cw, "holds no session with turns")
    return EvalConversation(
        id=sample_id, language="en", speakers=(speaker_a, speaker_b), sessions=tuple(sessions), title=sample_id
    )


def _clean_evidence(
    raw_list: list[object],
    where: str,
    *,
    ctx: FileContext,
    known: frozenset[str],
    counts: Counter[str],
    warnings: list[str],
) -> tuple[str, ...]:
    out: list[str] = []
    for ei, raw in enumerate(raw_list):
        if not isinstance(raw, str):
            ctx.fail(f"{where}[{ei}]", f"must be a string, got {type(raw).__name__}")
        ids, rejected = normalise_evidence(raw)
        if rejected:
            counts["evidence_malformed_dropped"] += len(rejected)
            warnings.append(f"{where}[{ei}]: dropped malformed evidence {rejected} from {raw!r}")
        if ids and (len(ids) > 1 or ids[0] != raw):
            counts["evidence_reformatted"] += 1
            warnings.append(f"{where}[{ei}]: normalised {raw!r} -> {ids}")
        for eid in ids:
            if eid not in known:
                counts["evidence_missing_turn_dropped"] += 1
                warnings.append(f"{where}[{ei}]: dropped {eid!r}: no such turn")
            elif eid not in out:
                out.append(eid)
    return tuple(out)


def _questions(
    ctx: FileContext,
    sample: Mapping[str, object],
    sw: str,
    conv: EvalConversation,
    *,
    counts: Counter[str],
    warnings: list[str],
) -> list[EvalQuestion]:
    known = conv.turn_ids
    out: list[EvalQuestion] = []
    for qi, raw_q in enumerate(ctx.arr(sample.get("qa", []), f"{sw}.qa")):
        qw = f"{sw}.qa[{qi}]"
        q = ctx.obj(raw_q, qw)
        category = q.get("category")
        if not isinstance(category, int) or isinstance(category, bool) or category not in LOCOMO_CATEGORIES:
            ctx.fail(f"{qw}.category", f"must be one of {sorted(LOCOMO_CATEGORIES)}, got {category!r}")
        meta: dict[str, str] = {"locomo_category": str(category)}
        answer = q.get("answer")
        if answer is None:
            if category != 5:
                ctx.fail(f"{qw}.answer", "is required (only adversarial questions may omit it)")
            answer = ADVERSARIAL_ANSWER
        elif not isinstance(answer, str | int | float) or isinstance(answer, bool):
            ctx.fail(f"{qw}.answer", f"must be a string or number, got {type(answer).__name__}")
        if isinstance(q.get("adversarial_answer"), str):
            meta["adversarial_answer"] = str(q["adversarial_answer"])
        evidence = _clean_evidence(
            ctx.arr(q.get("evidence", []), f"{qw}.evidence"),
            f"{qw}.evidence",
            ctx=ctx,
            known=known,
            counts=counts,
            warnings=warnings,
        )
        out.append(
            EvalQuestion(
                id=f"{conv.id}:q{qi + 1}",
                conversation_id=conv.id,
                question=ctx.text(q, "question", qw),
                answer=str(answer),
                evidence=evidence,
                category=LOCOMO_CATEGORIES[category],
                metadata=meta,
            )
        )
    return out


def _apply_corrections(
    file: Path,
    conversations: list[EvalConversation],
    questions: list[EvalQuestion],
    counts: Counter[str],
    warnings: list[str],
) -> list[EvalQuestion]:
    ctx = FileContext(file)
    rows = ctx.arr(_read_json(ctx), "(root)")
    index: dict[tuple[str, str], list[int]] = {}
    for i, q in enumerate(questions):
        index.setdefault((q.conversation_id, q.question.strip()), []).append(i)
    known = {c.id: c.turn_ids for c in conversations}
    out = list(questions)
    for ri, raw in enumerate(rows):
        rw = f"[{ri}]"
        row = ctx.obj(raw, rw)
        sample_id = ctx.text(row, "sample_id", rw)
        error_type = ctx.text(row, "error_type", rw)
        hits = index.get((sample_id, ctx.text(row, "question", rw).strip()), [])
        if not hits:
            counts["corrections_unmatched"] += 1
            warnings.append(f"{file}{rw}: no question matches sample_id {sample_id!r} and this question text")
            continue
        for qi in hits:
            q = out[qi]
            meta = {**q.metadata, "audit": error_type}
            if error_type == "WRONG_CITATION":
                fixed = _clean_evidence(
                    ctx.arr(row.get("correct_evidence"), f"{rw}.correct_evidence"),
                    f"{rw}.correct_evidence",
                    ctx=ctx,
                    known=known[sample_id],
                    counts=counts,
                    warnings=warnings,
                )
                meta["original_evidence"] = " ".join(q.evidence)
                out[qi] = replace(q, evidence=fixed, metadata=meta)
                counts["corrections_applied"] += 1
            else:
                out[qi] = replace(q, metadata=meta)
                counts["corrections_flagged"] += 1
    counts.setdefault("corrections_applied", 0)
    return out
