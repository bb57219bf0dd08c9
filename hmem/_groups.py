"""Message grouping shared by the window policies and the assembler.

A *group* is the unit that is kept or dropped whole: a single message, or an
assistant message with tool calls together with the tool results that answer it.
The *current turn* is the last user message and everything after it.

Example::

    >>> from hmem.types import Message, ToolCall
    >>> msgs = [Message(role="user", content="weather?"),
    ...         Message(role="assistant", content=None, tool_calls=(ToolCall(id="c1", name="wx"),)),
    ...         Message(role="tool", content="sunny", tool_call_id="c1")]
    >>> [len(g) for g in group_messages(msgs)]
    [1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

from hmem.types import Message

__all__ = ["current_turn_start", "group_messages", "is_orphan_tool", "split_current_turn"]


def group_messages(messages: Sequence[Message]) -> list[list[Message]]:
    """Split ``messages`` (in order) into keep-or-drop-together groups.

    A tool message joins the group of the nearest preceding assistant message that
    called its ``tool_call_id``, provided only tool messages lie in between. A tool
    message with no such caller is an orphan and forms its own group (callers
    decide whether to emit it; the assembler never does).
    """
    groups: list[list[Message]] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool" and groups and message.tool_call_id in open_calls:
            groups[-1].append(message)
            continue
        groups.append([message])
        open_calls = {tc.id for tc in message.tool_calls} if message.role == "assistant" else set()
    return groups


def is_orphan_tool(group: Sequence[Message]) -> bool:
    """True for a group that is a tool result without the assistant call it answers."""
    return bool(group) and group[0].role == "tool"


def current_turn_start(messages: Sequence[Message]) -> int:
    """Index of the last user message (start of the current turn); ``len(messages)``
    when there is no user message (then there is no current turn)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return len(messages)


def split_current_turn(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    """``(before, current_turn)`` where the current turn is the last user message and
    everything after it (its tool calls and results)."""
    start = current_turn_start(messages)
    return list(messages[:start]), list(messages[start:])
