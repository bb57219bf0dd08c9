"""Reply bodies of :class:`~hmem.testing.llm_server.ScriptedLLMServer`: the JSON answer
with optional tool calls, and the same answer as a ``stream=true`` server-sent-event
stream (optionally cut off mid-way, as a dying upstream would).

Example::

    >>> events = stream_events("Hi there", (), "m", "id-1", None, include_usage=False, usage={})
    >>> [e[len("data: "):] for e in events][-1]
    '[DONE]'
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["message_body", "stream_events"]


def message_body(text: str, tool_calls: Sequence[Mapping[str, Any]], *,
                 refusal: bool = False) -> tuple[dict[str, Any], str]:
    """The assistant ``message`` and its ``finish_reason``; with ``refusal``, ``text`` is
    the refusal and ``content`` is null.

    >>> message_body("", [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}])[1]
    'tool_calls'
    >>> message_body("No.", (), refusal=True)[0]
    {'role': 'assistant', 'content': None, 'refusal': 'No.'}
    """
    if refusal:
        return {"role": "assistant", "content": None, "refusal": text}, "stop"
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not tool_calls else None}
    if tool_calls:
        message["tool_calls"] = [_tool_call(tc) for tc in tool_calls]
        return message, "tool_calls"
    return message, "stop"


def _tool_call(tc: Mapping[str, Any]) -> dict[str, Any]:
    fn = tc.get("function", {})
    return {"id": str(tc.get("id", "call_1")), "type": "function",
            "function": {"name": str(fn.get("name", "")), "arguments": str(fn.get("arguments", "{}"))}}


def _chunk(chunk_id: str, model: str, delta: dict[str, Any], finish: str | None = None) -> str:
    body = {"id": chunk_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return "data: " + json.dumps(body)


def stream_events(
    text: str, tool_calls: Sequence[Mapping[str, Any]], model: str, chunk_id: str, cut_after: int | None, *,
    include_usage: bool, usage: Mapping[str, int], refusal: bool = False,
) -> list[str]:
    """The SSE ``data:`` lines of one streamed answer: one chunk per word of ``text``,
    each tool call in two pieces (so a client must join ``arguments``), the finish
    chunk, the usage chunk when asked for, ``[DONE]``. ``cut_after`` keeps only that
    many events: the connection then closes without a finish chunk or ``[DONE]``.
    With ``refusal``, the words come as ``refusal`` deltas and no ``content``."""
    key = "refusal" if refusal else "content"
    events = [_chunk(chunk_id, model, {"role": "assistant", key: ""})]
    words = text.split(" ")
    events += [_chunk(chunk_id, model, {key: w if i == 0 else " " + w}) for i, w in enumerate(words) if text]
    for i, tc in enumerate(_tool_call(t) for t in tool_calls):
        args = tc["function"]["arguments"]
        half = len(args) // 2
        head = {"index": i, "id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"],
                                                                            "arguments": args[:half]}}
        events.append(_chunk(chunk_id, model, {"tool_calls": [head]}))
        events.append(_chunk(chunk_id, model, {"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]}))
    if cut_after is not None:
        return events[:cut_after]
    events.append(_chunk(chunk_id, model, {}, "tool_calls" if tool_calls else "stop"))
    if include_usage:
        events.append("data: " + json.dumps({"id": chunk_id, "object": "chat.completion.chunk", "model": model,
                                             "created": int(time.time()), "choices": [], "usage": dict(usage)}))
    events.append("data: [DONE]")
    return events
