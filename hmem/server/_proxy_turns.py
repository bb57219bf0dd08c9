"""Pure helpers of the chat-completions proxy: which messages of a request are the new
turn (and their stable ids), the budget header, and the assistant reply to store, from
an answer or rebuilt from a stream of chunks (or why there is none hmem can store).

Example::

    >>> turn = new_turn([{"role": "user", "content": "hi"}], "s1")
    >>> turn[0]["role"], turn[0]["id"].startswith("px-")
    ('user', True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hmem.errors import InvalidInput
from hmem.types import MAX_CONTENT_CHARS

__all__ = ["NOTHING_TO_STORE", "StreamedReply", "budget_header", "new_turn", "reply_message", "system_prompt_of"]

_SYSTEM_ROLES = ("system", "developer")
_KEPT = ("role", "content", "name", "tool_calls", "tool_call_id", "id")


def system_prompt_of(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The request's system/developer messages joined, or None (the session's stored prompt applies).

    >>> system_prompt_of([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}])
    'Be brief.'
    """
    parts = [m["content"] for m in messages if m.get("role") in _SYSTEM_ROLES and isinstance(m.get("content"), str)]
    return "\n\n".join(parts) if parts else None


def new_turn(messages: Sequence[Mapping[str, Any]], session_id: str) -> list[dict[str, Any]]:
    """The messages after the last assistant message (the user turn and/or tool
    results), each with an id: the client's ``id``, else one derived from the session
    and every message up to it, so a retried request yields the same ids and is not
    stored twice, while the same words later in the chat get a new id.

    >>> a = new_turn([{"role": "user", "content": "yes"}], "s")
    >>> b = new_turn([{"role": "user", "content": "yes"}, {"role": "assistant", "content": "ok"},
    ...               {"role": "user", "content": "yes"}], "s")
    >>> a[0]["id"] == b[0]["id"]
    False
    """
    if not isinstance(messages, list) or not messages:
        raise InvalidInput("messages must be a non-empty list of chat messages", field="messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InvalidInput(f"messages[{i}] must be an object with a role", field=f"messages[{i}]")
    start = len(messages)
    while start > 0 and messages[start - 1]["role"] not in ("assistant", *_SYSTEM_ROLES):
        start -= 1
    if start == len(messages):
        raise InvalidInput("the last message must be a user message or tool results (the turn to answer)",
                           field="messages")
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass"))
    for m in messages[:start]:
        digest.update(_canonical(m))
    turn = []
    for m in messages[start:]:
        digest.update(_canonical(m))
        out = {k: m[k] for k in _KEPT if m.get(k) is not None}
        if not isinstance(out.get("id"), str):
            out["id"] = "px-" + digest.hexdigest()[:32]
        turn.append(out)
    return turn


def _canonical(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")


def budget_header(report: Mapping[str, Any]) -> str:
    """``AssemblyReport.to_dict()`` in one header line: budget, total, then tokens per tier.

    >>> budget_header({"budget": 100, "total": 30, "tiers": [{"tier": "system", "tokens": 5}]})
    'budget=100 total=30 system=5'
    """
    tiers = " ".join(f"{t['tier']}={t['tokens']}" for t in report.get("tiers", ()))
    return f"budget={report.get('budget')} total={report.get('total')} {tiers}".strip()


#: Why a reply without anything to remember is not stored.
NOTHING_TO_STORE = "the reply has no text, refusal or tool calls"


def reply_message(body: Any, reply_id: str) -> dict[str, Any] | str:
    """The assistant message of a non-streamed completion, ready for ``Memory.add``, or
    why there is none to store (no text, refusal or tool calls; ``n=0``; a foreign shape;
    text over hmem's per-message limit).

    >>> reply_message({"choices": [{"message": {"content": None, "refusal": "No."}}]}, "r1")
    {'role': 'assistant', 'content': 'No.', 'id': 'r1', 'metadata': {'refusal': True}}
    >>> reply_message({"choices": []}, "r1")
    'the reply has no text, refusal or tool calls'
    """
    try:
        message = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return NOTHING_TO_STORE
    if not isinstance(message, dict):
        return NOTHING_TO_STORE
    content, refusal = message.get("content"), message.get("refusal")
    chars = sum(len(text) for text in (content, refusal) if isinstance(text, str))
    return _assistant_reply(content, refusal, message.get("tool_calls"), chars, reply_id)


def _assistant_reply(content: Any, refusal: Any, tool_calls: Any, chars: int, reply_id: str) -> dict[str, Any] | str:
    """The message to store for a reply's parts, or why there is none. A refusal is what
    the user was told, so it is the stored text (marked ``metadata.refusal``); a reply of
    only whitespace holds nothing to remember."""
    if chars > MAX_CONTENT_CHARS:
        return f"the reply has {chars:,} characters; hmem stores at most {MAX_CONTENT_CHARS:,} per message"
    out: dict[str, Any] = {"role": "assistant", "content": None, "id": reply_id}
    if isinstance(content, str) and content.strip():
        out["content"] = content
    elif isinstance(refusal, str) and refusal.strip():
        out["content"] = refusal
        out["metadata"] = {"refusal": True}
    if tool_calls:
        out["tool_calls"] = tool_calls
    if out["content"] is None and not tool_calls:
        return NOTHING_TO_STORE
    return out


@dataclass
class StreamedReply:
    """Joins the deltas of choice 0 of a streamed completion into one message. Text past
    hmem's per-message limit is counted, not kept: such a reply cannot be stored, and
    holding it would let one stream take unbounded memory."""

    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finished: bool = False
    chars: int = 0  # characters of content and refusal seen, kept or not

    def feed(self, chunk: Any) -> None:
        """Take one parsed ``chat.completion.chunk`` (anything else is ignored)."""
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            if choice.get("finish_reason"):
                self.finished = True
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            for name, parts in (("content", self.content), ("refusal", self.refusal)):
                text = delta.get(name)
                if isinstance(text, str):
                    self.chars += len(text)
                    if self.chars <= MAX_CONTENT_CHARS:
                        parts.append(text)
            tool_calls = delta.get("tool_calls")
            for tc in tool_calls if isinstance(tool_calls, list) else ():
                if isinstance(tc, dict):
                    self._tool_delta(tc)

    def _tool_delta(self, tc: Mapping[str, Any]) -> None:
        index = tc.get("index", 0)
        slot = self.tool_calls.setdefault(index if isinstance(index, int) else 0,
                                          {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        if isinstance(tc.get("id"), str) and tc["id"]:
            slot["id"] = tc["id"]
        fn = tc.get("function")
        fn = fn if isinstance(fn, dict) else {}
        for part in ("name", "arguments"):
            if isinstance(fn.get(part), str):
                slot["function"][part] += fn[part]

    def message(self, reply_id: str) -> dict[str, Any] | str:
        """The assistant message for ``Memory.add``, or why there is none to store.

        >>> r = StreamedReply()
        >>> r.feed({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]})
        >>> r.message("m1")["content"], r.finished
        ('Hi', True)
        >>> StreamedReply().message("m2")
        'the reply has no text, refusal or tool calls'
        """
        tool_calls = [self.tool_calls[i] for i in sorted(self.tool_calls)]
        return _assistant_reply("".join(self.content), "".join(self.refusal), tool_calls, self.chars, reply_id)
