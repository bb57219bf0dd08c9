"""Fact extractors: user turns → candidate long-term facts ``{kind, text, importance}``.

* :class:`OfflineFactExtractor` never invents anything: every fact is one clause the
  user actually wrote (one claim: "I'm Maya, I work at Acme" gives two), first-person
  statements and other informative clauses, English and Chinese. Questions, role-play
  and small talk are dropped. ``Memory.add`` then names the speaker and dates relative
  days (:func:`resolve_fact`): "I went hiking last week" → "Maya went hiking last week
  (week of 1 May 2023)"; :func:`fact_entries` builds the store entries of one add.
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
    [('preference', 'I love hiking')]
    >>> from datetime import date
    >>> resolve_fact("I went hiking last Saturday", "Maya", date(2023, 5, 8))
    'Maya went hiking last Saturday (6 May 2023)'

"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from hmem._checks import check_int_at_least
from hmem.errors import InvalidInput, LLMError
from hmem.longterm.dates import annotate_dates
from hmem.longterm.index_text import SAID_KEY
from hmem.longterm.supersede import CLAIM_KEY
from hmem.profile.statements import Statement, covered, third_person, user_claims
from hmem.protocols import LLM
from hmem.session.extractive import FIRST_PERSON, score_sentence
from hmem.types import Message, Usage, coerce_messages

__all__ = ["SAID_KEY", "ExtractionResult", "FactCandidate", "FactReport", "LLMFactExtractor", "OfflineFactExtractor",
           "TurnContext", "fact_entries", "resolve_fact"]

log = logging.getLogger("hmem.longterm")

#: ``offline``: the rules (no LLM configured); ``rules-fallback``: the rules standing in
#: for an LLM that failed; ``custom``: an extractor hmem does not know.
FactMethod = Literal["llm", "offline", "rules-fallback", "custom"]

MAX_FACT_CHARS = 1000
_ID_SAFE = re.compile(r"^[a-z][a-z0-9_]{0,31}$")

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
    #: The sentence the claim was said in, in the user's words (offline facts): what
    #: BM25 indexes for it (:func:`hmem.longterm.index_text.lexical_text`).
    said: str | None = None

    def to_entry(self, session_id: str | None = None) -> dict[str, Any]:
        """A ``remember_many`` entry for this fact."""
        entry: dict[str, Any] = {"text": self.text, "kind": self.kind, "importance": self.importance,
                                 "source_message_id": self.source_message_id, "session_id": session_id}
        if self.said and self.said != self.text:
            entry["metadata"] = {SAID_KEY: self.said[:MAX_FACT_CHARS]}
        return entry


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
    """Clauses of user turns, verbatim (:func:`hmem.profile.statements.user_claims`): about
    the user ("I …", "my …", "we …") when :func:`score_sentence` rates them at least 2,
    other clauses when it rates them at least ``min_score``."""

    def __init__(self, *, min_score: float = 4.0) -> None:
        self.min_score = min_score

    def extract(self, messages: Iterable[Message | Mapping[str, Any]]) -> ExtractionResult:
        facts: list[FactCandidate] = []
        seen: set[str] = set()
        for m in coerce_messages(messages):
            if m.role != "user" or not m.content:
                continue
            for claim in user_claims(m.content):
                fact = self._classify(claim.bare, about_user=claim.subject != "other")
                if fact is not None and fact[1] not in seen:
                    seen.add(fact[1])
                    facts.append(FactCandidate(fact[0], fact[1], fact[2], m.id, claim.sentence))
        return ExtractionResult(tuple(facts), "offline")

    def _classify(self, clause: str, *, about_user: bool) -> tuple[str, str, float] | None:
        s = clause.strip()
        if len(s) < 4 or _QUESTION.search(s):
            return None
        score = score_sentence(s, role="user")
        if about_user and not FIRST_PERSON.search(s):
            score += 1.5  # a clause whose subject ("I", 我) was left out: what the scorer gives the subject
        if about_user and score >= 2.0:
            importance = 0.6
        elif score >= self.min_score:
            importance = 0.4
        else:
            return None
        kind = "preference" if _PREFERENCE.search(s) else "event" if _EVENT.search(s) else "fact"
        return kind, s, importance


def resolve_fact(text: str, subject: str | None, said_on: date | None, *, name_bare: bool = True) -> str:
    """A fact as it should read months later: the speaker named (``subject``, or "the
    user") where the text says "I"/"my"/我, relative dates resolved against ``said_on``
    (:func:`~hmem.longterm.dates.annotate_dates`). ``name_bare``: also name the speaker
    in front of a clause that has no subject ("…, living in Dubai"); off for an LLM's
    facts, which already name their subject."""
    if name_bare or FIRST_PERSON.search(text):
        text = third_person(text, subject)
    return text if said_on is None else annotate_dates(text, said_on)


_SYSTEM = (
    "You extract durable facts about the USER from a conversation, for a long-term memory. "
    "Return JSON only: an object {\"facts\": [{\"kind\": K, \"text\": T, \"importance\": I}, ...]} where K is one of "
    "fact, preference, event, plan, relationship; T is one short self-contained statement in the conversation's "
    "language: one claim only, stating only what the user said (never guess), naming the user (\"the user\" "
    "when no name is given) instead of I/my, and writing relative dates (yesterday, last week) as dates, "
    "resolved against the message's date; I is a number from 0 to 1. "
    "Return {\"facts\": []} when there is nothing worth remembering."
)


class LLMFactExtractor:
    """Facts from an LLM, one call per batch. A reply that is not a list of facts is not
    asked again by default (the LLM provider retries only transient failures);
    ``max_attempts=2`` sends it back with the error for one more try. When no reply is
    valid, or the LLM call fails (:class:`LLMError`: server down, timeout, HTTP error),
    ``fallback`` extracts the batch (``method="rules-fallback"``, ``reason``, a warning
    logged); without a fallback, :class:`LLMError`.

    Entries that fail validation (unknown shape, empty or over-long text, importance
    outside [0, 1]) are dropped and counted in ``rejected``.
    """

    def __init__(self, llm: LLM, *, model: str | None = None, max_facts: int = 20, max_attempts: int = 1,
                 fallback: OfflineFactExtractor | None = None) -> None:
        self.llm = llm
        self.max_attempts = check_int_at_least(max_attempts, "max_attempts", 1)
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
        transcript = "\n".join(f"[{m.id}] ({m.created_at.date().isoformat()}) {m.role}: {m.content}" for m in turns)
        prompt = [Message(role="system", content=_SYSTEM), Message(role="user", content=transcript)]
        usage = Usage()
        last_error = ""
        for attempt in range(1, self.max_attempts + 1):
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
        raise LLMError(f"fact extraction: the LLM returned no valid facts JSON in {self.max_attempts} attempt(s) "
                       f"({last_error}); use OfflineFactExtractor as a fallback")


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




@dataclass(frozen=True, slots=True)
class TurnContext:
    """What naming a turn's facts needs: who said it (``subject``: the speaker's name,
    else the user's profile name, else None → "the user"), ``speaker_key`` (keeps the
    claims of several speakers of one memory apart) and the profile ``statements`` the
    turn gave (:func:`hmem.profile.statements.update_statements`)."""

    subject: str | None = None
    speaker_key: str = "user"
    statements: tuple[Statement, ...] = ()


def fact_entries(
    extracted: ExtractionResult, turns: Iterable[Message], contexts: Mapping[str, TurnContext], session_id: str,
    *, turns_archived: bool = False,
) -> list[dict[str, Any]]:
    """``remember_many`` entries for one add: each turn's profile statements (claim-keyed:
    they supersede older versions, :mod:`hmem.longterm.supersede`), then its extracted
    facts with the speaker named and relative dates resolved (:func:`resolve_fact`),
    leaving out a fact that only repeats its turn's statements. Every entry keeps its
    source message, session and the message's time.

    ``turns_archived``: the turns themselves are stored too, so an offline claim that
    adds nothing to its turn's words — no date to resolve — is left out: it would only
    repeat the turn (and, being short, outrank it in BM25: docs/longterm.md). An LLM's
    facts are always kept (they are its reading, not the turn's words)."""
    by_id = {m.id: m for m in turns}
    entries: list[dict[str, Any]] = []
    for turn_id, ctx in contexts.items():
        turn = by_id.get(turn_id)
        if turn is None:
            continue
        for st in ctx.statements:
            entries.append({"text": st.text, "kind": st.kind, "importance": 0.7, "session_id": session_id,
                            "source_message_id": turn_id, "created_at": turn.created_at,
                            "metadata": {CLAIM_KEY: st.claim_key, "profile_key": st.key}})
    for fact in extracted.facts:
        source = by_id.get(fact.source_message_id or "")
        ctx = contexts.get(fact.source_message_id or "", TurnContext())
        if ctx.statements and covered(fact.text, [st.text for st in ctx.statements]):
            continue
        said_on = source.created_at.date() if source is not None else None
        offline = extracted.method != "llm"
        if turns_archived and offline and (said_on is None or annotate_dates(fact.text, said_on) == fact.text):
            continue
        text = resolve_fact(fact.text, ctx.subject, said_on, name_bare=offline)
        named = FactCandidate(fact.kind, text[:MAX_FACT_CHARS], fact.importance, fact.source_message_id, fact.said)
        entries.append({**named.to_entry(session_id), "created_at": source.created_at if source is not None else None})
    return entries
