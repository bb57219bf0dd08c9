"""The in-memory shape every evaluation dataset is loaded into.

Loaders for hmem's own sample set, LoCoMo and LongMemEval all produce an
:class:`EvalDataset`: conversations (sessions of turns, each turn with a stable id
such as ``"S1:T3"`` or ``"D1:3"``) and questions whose ``evidence`` names the turn ids
that answer them. The runner replays the turns through hmem and scores which
evidence ids come back (:mod:`hmem.eval.metrics`).

Example::

    >>> from datetime import datetime, UTC
    >>> t = EvalTurn(id="S1:T1", speaker="Maya", role="user", text="I adopted a cat.")
    >>> s = EvalSession(id="S1", date=datetime(2024, 1, 5, tzinfo=UTC), turns=(t,))
    >>> c = EvalConversation(id="c1", language="en", speakers=("Maya", "Assistant"), sessions=(s,))
    >>> c.turn("S1:T1").text
    'I adopted a cat.'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal, NoReturn, TypeAlias

from hmem.errors import InvalidInput

__all__ = [
    "CATEGORIES",
    "LANGUAGES",
    "TURN_ROLES",
    "EvalConversation",
    "EvalDataset",
    "EvalQuestion",
    "EvalSession",
    "EvalToolCall",
    "EvalTurn",
    "StatedProfileValue",
    "TurnRole",
]

TurnRole: TypeAlias = Literal["user", "assistant", "tool"]
TURN_ROLES: frozenset[str] = frozenset({"user", "assistant", "tool"})

#: Categories of hmem's own sample set. LoCoMo and LongMemEval keep their own
#: category names (see :mod:`hmem.eval.locomo`, :mod:`hmem.eval.longmemeval`).
CATEGORIES: tuple[str, ...] = (
    "single-hop",
    "multi-hop",
    "temporal",
    "knowledge-update",
    "preference",
    "abstention",
)
LANGUAGES: tuple[str, ...] = ("en", "zh", "mixed")


@dataclass(frozen=True, slots=True)
class EvalToolCall:
    """A function call made by an assistant turn (OpenAI shape, arguments as JSON text)."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass(frozen=True, slots=True)
class EvalTurn:
    """One turn of a conversation.

    ``text`` is ``""`` only for an assistant turn that just calls tools.
    ``image_caption`` carries LoCoMo's caption of a shared photo (the raw ``text``
    is kept as written; the runner decides whether to index the caption).
    """

    id: str
    speaker: str
    role: TurnRole
    text: str
    tool_calls: tuple[EvalToolCall, ...] = ()
    tool_call_id: str | None = None
    image_caption: str | None = None


@dataclass(frozen=True, slots=True)
class EvalSession:
    """A dated session: its turns in the order they were said."""

    id: str
    date: datetime
    turns: tuple[EvalTurn, ...]


@dataclass(frozen=True, slots=True)
class StatedProfileValue:
    """What a conversation's user said about one profile key, as a careful reader would
    keep it at the end: ``value`` (``accept``: other spellings that count as right), the
    turns that say it, and the ``earlier`` values it replaced (they belong in history).

    Example::

        >>> v = StatedProfileValue("location", "Lisbon", ("S2:T1",), earlier=("Manchester",))
        >>> v.matches("Lisbon, Portugal"), v.matches("Manchester")
        (True, False)
    """

    key: str
    value: str
    evidence: tuple[str, ...]
    accept: tuple[str, ...] = ()
    earlier: tuple[str, ...] = ()

    def matches(self, shown: str | None) -> bool:
        """True when a profile value as shown contains the stated value or an accepted spelling."""
        if not shown:
            return False
        return any(want.casefold() in shown.casefold() for want in (self.value, *self.accept))


@dataclass(frozen=True, slots=True)
class EvalConversation:
    """A multi-session conversation between a user and an assistant.

    ``speakers`` lists the user's name first, then the assistant's.
    """

    id: str
    language: str
    speakers: tuple[str, ...]
    sessions: tuple[EvalSession, ...]
    title: str = ""
    #: What the user stated about themselves (sample data only; empty elsewhere).
    profile: tuple[StatedProfileValue, ...] = ()

    def iter_turns(self) -> Iterator[tuple[EvalSession, EvalTurn]]:
        """Every turn with its session, oldest first."""
        for session in self.sessions:
            for turn in session.turns:
                yield session, turn

    @property
    def turn_ids(self) -> frozenset[str]:
        return frozenset(t.id for _, t in self.iter_turns())

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    def turn(self, turn_id: str) -> EvalTurn:
        """The turn with id ``turn_id``; :class:`KeyError` if there is none."""
        for _, t in self.iter_turns():
            if t.id == turn_id:
                return t
        raise KeyError(turn_id)


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    """A question about one conversation with its gold evidence turn ids.

    ``evidence`` is empty when the answer is not in the conversation (abstention);
    such questions are excluded from recall and counted separately.
    ``previous_evidence`` names the turns holding a value that was later replaced
    (knowledge-update questions): retrieving them alone is the stale answer.
    ``asked_at`` is when the question is posed (after the last session if unset).
    """

    id: str
    conversation_id: str
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: str
    previous_evidence: tuple[str, ...] = ()
    asked_at: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EvalDataset:
    """Conversations and questions of one dataset, plus what the loader had to fix.

    ``counts`` holds loader bookkeeping such as ``evidence_dropped_missing_turn`` or
    ``corrections_applied``; ``warnings`` says which question each fix touched.
    """

    name: str
    conversations: tuple[EvalConversation, ...]
    questions: tuple[EvalQuestion, ...]
    counts: Mapping[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def conversation(self, conversation_id: str) -> EvalConversation:
        for c in self.conversations:
            if c.id == conversation_id:
                return c
        raise KeyError(conversation_id)

    def questions_for(self, conversation_id: str) -> tuple[EvalQuestion, ...]:
        return tuple(q for q in self.questions if q.conversation_id == conversation_id)

    @property
    def categories(self) -> tuple[str, ...]:
        """Categories present, in first-seen order."""
        return tuple(dict.fromkeys(q.category for q in self.questions))


class FileContext:
    """Names the file in every error so a bad dataset is easy to fix.

    ``fail("sessions[2].date", "...")`` raises :class:`InvalidInput` whose ``field``
    is the JSON path and whose message starts with the file name.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, message: str) -> NoReturn:
        raise InvalidInput(f"{self.path}: {where}: {message}", field=where)

    def obj(self, value: object, where: str) -> Mapping[str, object]:
        if not isinstance(value, Mapping):
            self.fail(where, f"must be a JSON object, got {type(value).__name__}")
        return value

    def arr(self, value: object, where: str) -> list[object]:
        if not isinstance(value, list):
            self.fail(where, f"must be a JSON array, got {type(value).__name__}")
        return value

    def text(self, parent: Mapping[str, object], key: str, where: str, *, allow_empty: bool = False) -> str:
        if key not in parent:
            self.fail(f"{where}.{key}" if where else key, "is required")
        value = parent[key]
        path = f"{where}.{key}" if where else key
        if not isinstance(value, str):
            self.fail(path, f"must be a string, got {type(value).__name__}")
        if not allow_empty and not value.strip():
            self.fail(path, "must not be empty")
        return value
