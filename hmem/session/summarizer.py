"""The rolling summary: fold evicted messages into a session's summary, incrementally.

Fallback chain, first that works wins (``SessionSummary.method`` records which):

1. ``"llm"`` — the configured LLM (its provider retries), prompted with the previous
   summary + the new messages; the answer is cut to ``cap_tokens`` if it overshoots;
2. ``"extractive"`` — :func:`hmem.session.extractive.extractive_summary`: offline,
   deterministic. With no LLM configured this is the normal path, not an error;
3. ``"raw"`` — role-tagged, truncated lines of the messages (cannot fail).

The summary keeps the conversation's language, aims at ``target_ratio`` of the text
it folded (each fold may grow it by that share of the new messages; at least
``min_tokens``) and never exceeds ``cap_tokens``. Its watermark ``covers_until`` is always the last folded message's id.

Example::

    >>> from hmem.types import Message
    >>> class Words:  # stand-in tokenizer: one token per word
    ...     name = "words"
    ...     def count(self, text): return len(text.split())
    ...     def truncate(self, text, n): return " ".join(text.split()[:n])
    >>> s = Summarizer(None, Words(), cap_tokens=50)
    >>> msgs = [Message(role="user", content="Hello! I'm Ada and I fly to Oslo on 2 June.", id="m1"),
    ...         Message(role="assistant", content="Noted.", id="m2")]
    >>> out = s.fold(None, msgs, user_id="u1", session_id="s1")
    >>> out.text, out.method, out.covers_until, out.folded_count
    ("User: I'm Ada and I fly to Oslo on 2 June.", 'extractive', 'm2', 2)
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from hmem.errors import HmemError, InvalidInput
from hmem.protocols import LLM
from hmem.session.extractive import detect_language, extractive_summary, message_text, split_sentences
from hmem.types import Message, SessionSummary, SummaryMethod, check_id

__all__ = ["OfflineSummarizer", "Summarizer", "raw_archive"]

log = logging.getLogger(__name__)


class _Tok(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


#: ``(previous_text, messages, *, tokenizer, budget) -> text`` — the offline step.
OfflineSummarizer = Callable[..., str]

_LANGUAGE_NAMES = {"zh": "Chinese (简体中文)", "en": "English"}

_SYSTEM_PROMPT = """You maintain the rolling summary of a conversation between a user and an assistant.
Merge the previous summary and the new messages into ONE updated summary.
Rules:
- Write in {language}, the language of the conversation.
- Keep every name, number, date, decision, preference, commitment and tool result exactly.
- Drop greetings, small talk and repetition. No preamble, no headings: just the summary.
- Say who said or decided what (the user / the assistant).
- At most {budget} tokens."""


def raw_archive(previous: str | None, messages: Sequence[Message], *, tokenizer: _Tok, budget: int) -> str:
    """Last resort: the previous summary and one ``[role] text`` line per message,
    each truncated, the whole within ``budget`` tokens."""
    if budget < 1:
        return ""
    lines = [f"[{m.role}] {message_text(m)}" for m in messages]
    per_line = max(8, budget // (len(lines) + (1 if previous else 0) or 1))
    parts = [tokenizer.truncate(previous, budget // 2)] if previous else []
    parts += [tokenizer.truncate(line, per_line) for line in lines]
    text = tokenizer.truncate("\n".join(p for p in parts if p), budget)
    while text and tokenizer.count(text) > budget:
        text = text[:-1]
    return text


def _cap(text: str, tokenizer: _Tok, cap: int) -> str:
    """``text`` within ``cap`` tokens, cut at a sentence boundary when possible."""
    if tokenizer.count(text) <= cap:
        return text
    kept = ""
    for line in text.splitlines():
        for sentence in split_sentences(line):
            joiner = "" if not kept else ("\n" if kept.endswith("\n") else " ")
            trial = kept + joiner + sentence
            if tokenizer.count(trial) > cap:
                break
            kept = trial
        else:
            kept += "\n"
            continue
        break
    kept = kept.strip()
    if not kept:
        kept = tokenizer.truncate(text, cap)
    while kept and tokenizer.count(kept) > cap:
        kept = kept[:-1]
    return kept


class Summarizer:
    """Folds messages into a :class:`~hmem.types.SessionSummary` (see module doc).

    ``llm`` None means offline (extractive). ``model`` overrides the LLM's default
    model (e.g. a cheaper ``summary_model``). ``offline`` replaces the extractive
    step (the chain still falls back to :func:`raw_archive` if it fails).
    """

    def __init__(
        self,
        llm: LLM | None,
        tokenizer: Any,
        *,
        model: str | None = None,
        cap_tokens: int = 400,
        target_ratio: float = 0.3,
        min_tokens: int = 48,
        offline: OfflineSummarizer = extractive_summary,
    ) -> None:
        if isinstance(cap_tokens, bool) or not isinstance(cap_tokens, int) or cap_tokens < 16:
            raise InvalidInput(f"cap_tokens must be an integer >= 16, got {cap_tokens!r}", field="cap_tokens")
        if isinstance(target_ratio, bool) or not isinstance(target_ratio, int | float) or not 0 < target_ratio <= 1:
            raise InvalidInput(f"target_ratio must be in (0, 1], got {target_ratio!r}", field="target_ratio")
        if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 1:
            raise InvalidInput(f"min_tokens must be an integer >= 1, got {min_tokens!r}", field="min_tokens")
        self.llm = llm
        self.tokenizer: _Tok = tokenizer
        self.model = model
        self.cap_tokens = cap_tokens
        self.target_ratio = float(target_ratio)
        self.min_tokens = min_tokens
        self._offline = offline
        self._lock = threading.Lock()
        self.counts: dict[SummaryMethod, int] = {"llm": 0, "extractive": 0, "raw": 0}
        #: Why the last fold left the LLM path (None if it did not).
        self.last_fallback: str | None = None

    def budget_for(self, previous: SessionSummary | None, messages: Sequence[Message]) -> int:
        """The token target: the previous summary may grow by ``target_ratio`` of the new
        text (so the summary stays within that share of everything it ever folded), at
        least ``min_tokens``, never above ``cap_tokens``."""
        kept = self.tokenizer.count(previous.text) if previous else 0
        new = sum(self.tokenizer.count(message_text(m)) for m in messages)
        return min(self.cap_tokens, max(self.min_tokens, math.ceil(kept + self.target_ratio * new)))

    def fold(
        self, previous: SessionSummary | None, messages: Sequence[Message], *, user_id: str, session_id: str
    ) -> SessionSummary:
        """A new summary = ``previous`` + ``messages``, watermark = ``messages[-1].id``."""
        user, session = check_id(user_id, "user_id"), check_id(session_id, "session_id")
        batch = self._check(previous, messages, user, session)
        budget = self.budget_for(previous, batch)
        prev_text = previous.text if previous and previous.text else None
        method: SummaryMethod = "extractive"
        text: str | None = None
        reason: str | None = None
        if self.llm is not None:
            try:
                text = self._llm_fold(prev_text, batch, budget)
                method = "llm"
            except HmemError as exc:  # LLMError after the provider's retries, ProviderError …
                reason = f"LLM failed: {exc}"
            if text is not None and not text.strip():
                text, reason = None, "LLM returned an empty summary"
        if text is None:
            try:
                text = self._offline(prev_text, batch, tokenizer=self.tokenizer, budget=budget)
                method = "extractive"
                if not text.strip() and (prev_text or any(m.text.strip() or m.tool_calls for m in batch)):
                    raise ValueError("extractive summary came out empty")
                text = _cap(text, self.tokenizer, self.cap_tokens)
            except Exception as exc:  # the offline step must never lose the fold
                log.exception("offline summarizer failed; storing a raw archive instead")
                reason = f"{reason + '; ' if reason else ''}offline summarizer failed: {exc}"
                text = raw_archive(prev_text, batch, tokenizer=self.tokenizer, budget=self.cap_tokens)
                method = "raw"
        if reason:
            log.warning("summary of %s/%s fell back to %s: %s", user, session, method, reason)
        with self._lock:
            self.counts[method] += 1
            self.last_fallback = reason
        return SessionSummary(
            user_id=user,
            session_id=session,
            text=text,
            covers_until=batch[-1].id,
            folded_count=(previous.folded_count if previous else 0) + len(batch),
            method=method,
            tokens=self.tokenizer.count(text),
        )

    # -- internals -----------------------------------------------------------------------

    def _check(
        self, previous: SessionSummary | None, messages: Sequence[Message], user: str, session: str
    ) -> list[Message]:
        if previous is not None:
            if not isinstance(previous, SessionSummary):
                raise InvalidInput("previous must be a SessionSummary or None", field="previous")
            if (previous.user_id, previous.session_id) != (user, session):
                raise InvalidInput("previous summary belongs to another user or session", field="previous")
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise InvalidInput("messages must be a list of Message values", field="messages")
        batch = list(messages)
        if not batch:
            raise InvalidInput("messages must not be empty: there is nothing to fold", field="messages")
        for i, m in enumerate(batch):
            if not isinstance(m, Message):
                raise InvalidInput(f"messages[{i}] must be a Message", field=f"messages[{i}]")
        if previous is not None and previous.covers_until in {m.id for m in batch}:
            raise InvalidInput(
                f"message {previous.covers_until!r} is already covered by the previous summary", field="messages"
            )
        return batch

    def _llm_fold(self, previous: str | None, messages: list[Message], budget: int) -> str:
        assert self.llm is not None
        language = detect_language((previous or "") + " " + " ".join(m.text for m in messages))
        system = _SYSTEM_PROMPT.format(language=_LANGUAGE_NAMES.get(language, "English"), budget=budget)
        lines = "\n".join(f"[{m.role}{' ' + m.name if m.name else ''}] {message_text(m)}" for m in messages)
        user = f"Previous summary:\n{previous or '(none yet)'}\n\nNew messages:\n{lines}\n\nUpdated summary:"
        reply = self.llm.complete(
            [Message(role="system", content=system), Message(role="user", content=user)],
            model=self.model,
            temperature=0.0,
            max_tokens=self.cap_tokens,
        )
        return _cap(reply.text.strip(), self.tokenizer, self.cap_tokens)
