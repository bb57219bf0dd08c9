"""Fact extractors: user turns → candidate long-term facts ``{kind, text, importance}``.

* :class:`OfflineFactExtractor` never invents anything: every fact is a sentence
  the user actually wrote (first-person statements, and other informative
  sentences), English and Chinese. Questions and small talk are dropped.
* :class:`LLMFactExtractor` asks an :class:`~hmem.protocols.LLM` for a JSON list,
  validates every entry, retries once on invalid JSON, and records token usage. With a
  ``fallback`` it hands the batch to the offline rules when the LLM fails, and says so
  (``method="rules-fallback"``, ``reason``, a warning in the log).
* :class:`FactReport` — how the facts of one ``Memory.add`` were extracted and the tokens
  it cost (``AddResult.fact_report``).

Feed the result to :meth:`hmem.longterm.store.LongTermStore.remember_many` via
:meth:`FactCandidate.to_entry`.

Example::

    >>> from hmem.types import Message
    >>> facts = OfflineFactExtractor().extract([Message(role="user", content="Hi! I love hiking. What's up?")])
    >>> [(f.kind, f.text) for f in facts.facts]
    [('preference', 'I love hiking.')]
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hmem.errors import InvalidInput, LLMError
from hmem.protocols import LLM
from hmem.session.extractive import score_sentence, split_sentences
from hmem.types import Message, Usage, coerce_messages

__all__ = ["ExtractionResult", "FactCandidate", "FactReport", "LLMFactExtractor", "OfflineFactExtractor"]

log = logging.getLogger("hmem.longterm")

#: ``offline``: the rules (no LLM configured); ``rules-fallback``: the rules standing in
#: for an LLM that failed; ``custom``: an extractor hmem does not know.
FactMethod = Literal["llm", "offline", "rules-fallback", "custom"]

MAX_FACT_CHARS = 1000
_ID_SAFE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")

_FIRST_PERSON = re.compile(
    r"^(?:(?:actually|also|well|so|and|but|btw|oh|honestly|by the way)[, ]+)*"
    r"(?:i|i'm|im|i've|i'll|i'd|my|we|we're|our)\b|^(?:其实|另外|对了|还有)?[，, ]*我",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:like|love|enjoy|prefer\w*|hate|dislike|favou?rite|can't stand|allergic)\b|喜欢|爱|讨厌|偏好|最爱|不吃|过敏",
    re.IGNORECASE,
)
_EVENT = re.compile(
    r"\b(?:yesterday|today|tomorrow|last|next|ago|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"in (?:january|february|march|april|may|june|july|august|september|october|november|december)|"
    r"went|visited|moved|started|finished|graduated|married|born|booked)\b|昨天|今天|明天|上周|下周|去年|明年|上个月|下个月",
    re.IGNORECASE,
)
_QUESTION = re.compile(r"[?？]\s*$|吗[。！]?$|^(?:what|why|how|when|where|who|which|can|could|do|does|is|are)\b",
                       re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """One extracted fact and the message it came from."""

    kind: str
    text: str
    importance: float
    source_message_id: str | None = None

    def to_entry(self, session_id: str | None = None) -> dict[str, Any]:
        """A ``remember_many`` entry for this fact."""
        return {"text": self.text, "kind": self.kind, "importance": self.importance,
                "source_message_id": self.source_message_id, "session_id": session_id}


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    """The facts found in a batch, ``method`` used, the tokens its LLM calls used,
    how many LLM calls it took, and (``rules-fallback`` only) why the LLM failed."""

    facts: tuple[FactCandidate, ...]
    method: FactMethod
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class FactReport:
    """How the facts of one ``Memory.add`` were extracted (``AddResult.fact_report``):
    ``method``, ``usage`` (extraction tokens for the add), ``reason`` (why the LLM
    failed, ``rules-fallback`` only).

    >>> FactReport("rules-fallback", reason="LLM down").usage.total_tokens
    0
    """

    method: FactMethod
    usage: Usage = field(default_factory=Usage)
    reason: str = ""


class OfflineFactExtractor:
    """Sentences of user turns, verbatim: first-person statements always (unless a
    question or small talk), other sentences when :func:`score_sentence` rates them
    at least ``min_score``."""

    def __init__(self, *, min_score: float = 4.0) -> None:
        self.min_score = min_score

    def extract(self, messages: Iterable[Message | Mapping[str, Any]]) -> ExtractionResult:
        facts: list[FactCandidate] = []
        seen: set[str] = set()
        for m in coerce_messages(messages):
            if m.role != "user" or not m.content:
                continue
            for sentence in split_sentences(m.content):
                fact = self._classify(sentence)
                if fact is not None and fact[1] not in seen:
                    seen.add(fact[1])
                    facts.append(FactCandidate(fact[0], fact[1], fact[2], m.id))
        return ExtractionResult(tuple(facts), "offline")

    def _classify(self, sentence: str) -> tuple[str, str, float] | None:
        s = sentence.strip()
        if len(s) < 4 or _QUESTION.search(s):
            return None
        score = score_sentence(s, role="user")
        first_person = bool(_FIRST_PERSON.search(s))
        if first_person and score >= 2.0:
            importance = 0.6
        elif score >= self.min_score:
            importance = 0.4
        else:
            return None
        kind = "preference" if _PREFERENCE.search(s) else "event" if _EVENT.search(s) else "fact"
        return kind, s, importance


_SYSTEM = (
    "You extract durable facts about the USER from a conversation, for a long-term memory. "
    "Return JSON only: an object {\"facts\": [{\"kind\": K, \"text\": T, \"importance\": I}, ...]} where K is one of "
    "fact, preference, event, plan, relationship; T is one short self-contained sentence in the conversation's "
    "language, stating only what the user said (never guess); I is a number from 0 to 1. "
    "Return {\"facts\": []} when there is nothing worth remembering."
)


class LLMFactExtractor:
    """Facts from an LLM; invalid JSON is retried once. When that fails too, or the
    LLM call fails (:class:`LLMError`: server down, timeout, HTTP error), ``fallback``
    extracts the batch (``method="rules-fallback"``, ``reason``, a warning logged);
    without a fallback, :class:`LLMError`.

    Entries that fail validation (unknown shape, empty or over-long text, importance
    outside [0, 1]) are dropped and counted in ``rejected``.
    """

    def __init__(self, llm: LLM, *, model: str | None = None, max_facts: int = 20,
                 fallback: OfflineFactExtractor | None = None) -> None:
        self.llm = llm
        self.model = model
        self.max_facts = max_facts
        self.fallback = fallback
        self.usage = Usage()
        self.rejected = 0

    def extract(self, messages: Iterable[Message | Mapping[str, Any]]) -> ExtractionResult:
        batch = coerce_messages(messages)
        spent: list[Usage] = []
        try:
            return self._ask(batch, spent)
        except LLMError as exc:
            if self.fallback is None:
                raise
            reason = str(exc)
            log.warning("fact extraction: the LLM failed, the offline rules read this batch instead: %s", reason)
            found = self.fallback.extract(batch)
            return ExtractionResult(found.facts, "rules-fallback", sum(spent, Usage()), len(spent), reason)

    def _ask(self, batch: list[Message], spent: list[Usage]) -> ExtractionResult:
        turns = [m for m in batch if m.role in ("user", "assistant") and m.content]
        if not any(m.role == "user" for m in turns):
            return ExtractionResult((), "llm")
        transcript = "\n".join(f"[{m.id}] {m.role}: {m.content}" for m in turns)
        prompt = [Message(role="system", content=_SYSTEM), Message(role="user", content=transcript)]
        usage = Usage()
        last_error = ""
        for attempt in (1, 2):
            reply = self.llm.complete(prompt, model=self.model, temperature=0.0, json_mode=True)
            spent.append(reply.usage)
            usage = usage + reply.usage
            self.usage = self.usage + reply.usage
            try:
                raw = _parse(reply.text)
            except InvalidInput as exc:
                last_error = str(exc)
                prompt = [*prompt, Message(role="assistant", content=reply.text or "(empty)"), Message(
                    role="user", content=f"That was not valid: {exc}. Answer again with the JSON object only.")]
                continue
            user_ids = [m.id for m in turns if m.role == "user"]
            source = user_ids[-1] if len(user_ids) == 1 else None
            facts = []
            for entry in raw[: self.max_facts]:
                fact = _validate(entry, source)
                if fact is None:
                    self.rejected += 1
                else:
                    facts.append(fact)
            return ExtractionResult(tuple(facts), "llm", usage, attempt)
        raise LLMError(f"fact extraction: the LLM returned invalid JSON twice ({last_error}); "
                       "use OfflineFactExtractor as a fallback")


def _parse(text: str) -> list[Any]:
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not JSON ({exc.msg})", field="facts") from None
    if isinstance(data, Mapping):
        data = data.get("facts")
    if not isinstance(data, list):
        raise InvalidInput("expected a JSON list of facts or {\"facts\": [...]}", field="facts")
    return data


def _validate(entry: object, source: str | None) -> FactCandidate | None:
    if not isinstance(entry, Mapping):
        return None
    kind, text, importance = entry.get("kind", "fact"), entry.get("text"), entry.get("importance", 0.5)
    if not isinstance(kind, str) or not _ID_SAFE.match(kind.strip().lower()):
        return None
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_FACT_CHARS:
        return None
    if isinstance(importance, bool) or not isinstance(importance, int | float) or not 0.0 <= importance <= 1.0:
        return None
    return FactCandidate(kind.strip().lower(), text.strip(), float(importance), source)


