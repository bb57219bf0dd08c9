"""The sample conversations of ``data/`` as hmem messages (for ``window`` and ``demo``).

A turn becomes a :class:`~hmem.types.Message` whose id is the turn id (``"S1:T3"``),
so every record derived from it (archived turn, extracted fact) points back at the
gold evidence ids of the sample questions. Timestamps are the session's date plus
one minute per turn, so recalled items carry the date the user said them.

Example::

    >>> from hmem.cli.samples import load_conversations, session_messages
    >>> conv = load_conversations(None, ["en_01_maya_lisbon"])[0]
    >>> session_messages(conv.sessions[0])[0].id
    'S1:T1'
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from hmem.errors import InvalidInput
from hmem.eval.model import EvalConversation, EvalDataset, EvalSession
from hmem.types import Message, ToolCall

__all__ = ["conversation_messages", "load_conversations", "load_dataset", "session_messages"]


def load_dataset(path: str | Path | None) -> EvalDataset:
    from hmem.eval.sample import load_sample

    return load_sample(path)


def load_conversations(path: str | Path | None, ids: Sequence[str] | None, dataset: EvalDataset | None = None) -> list[EvalConversation]:
    """The conversations named by ``ids`` (an id or a unique prefix, e.g. ``zh_01``),
    or all of them; :class:`InvalidInput` listing the known ids for an unknown one."""
    ds = dataset or load_dataset(path)
    if not ids:
        return list(ds.conversations)
    known = [c.id for c in ds.conversations]
    out: list[EvalConversation] = []
    for wanted in ids:
        matches = [c for c in ds.conversations if c.id == wanted] or [
            c for c in ds.conversations if c.id.startswith(wanted)
        ]
        if len(matches) != 1:
            problem = "matches several" if matches else "is not a sample conversation"
            raise InvalidInput(f"--conversation {wanted!r} {problem}; choose from: {', '.join(known)}", field="conversation")
        if matches[0] not in out:
            out.append(matches[0])
    return out


def session_messages(session: EvalSession) -> list[Message]:
    """The session's turns as messages (ids = turn ids, dated from the session)."""
    return [
        Message(
            role=turn.role,
            content=turn.text if turn.text or not turn.tool_calls else None,
            tool_calls=tuple(ToolCall(id=c.id, name=c.name, arguments=c.arguments) for c in turn.tool_calls),
            tool_call_id=turn.tool_call_id,
            name=None,
            id=turn.id,
            created_at=session.date + timedelta(minutes=index),
        )
        for index, turn in enumerate(session.turns)
    ]


def conversation_messages(conversation: EvalConversation, session_ids: Sequence[str] | None = None) -> list[Message]:
    """Every turn of the chosen sessions (default: all), in order."""
    chosen = [s for s in conversation.sessions if not session_ids or s.id in session_ids]
    if session_ids:
        missing = sorted(set(session_ids) - {s.id for s in chosen})
        if missing:
            raise InvalidInput(
                f"{conversation.id} has no session {', '.join(missing)}; it has {', '.join(s.id for s in conversation.sessions)}",
                field="session",
            )
    return [m for s in chosen for m in session_messages(s)]
