"""LlamaIndex adapter: ``HmemMemory``, a ``BaseMemory`` that hands a chat engine hmem's
assembled context and stores the engine's turns in an hmem session.

Needs ``llama-index-core`` (``pip install 'hmem[llamaindex]'``); ``import hmem`` never
loads it. Only the public :class:`hmem.Memory` API is called.

A chat engine ``put``\\ s each user turn and each reply (:meth:`Memory.add`: profile and
fact extraction, compaction) and asks ``get`` for the messages to send;
``get`` returns :meth:`Memory.context` — system prompt, current turn, recent history,
rolling summary, profile and recalled long-term items within the model's token
budget — as LlamaIndex ``ChatMessage``\\ s.

Example::

    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM
    from hmem import Memory
    from hmem.integrations.llamaindex import HmemMemory

    mem = Memory.open("./hmem-data")
    memory = HmemMemory.from_defaults(memory=mem, user_id="u1", session_id="s1",
                                      system_prompt="You are a helpful assistant.")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    engine.chat("I'm allergic to peanuts.")
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock, ThinkingBlock, ToolCallBlock
from llama_index.core.memory.types import BaseMemory
from pydantic import ConfigDict

from hmem.errors import InvalidInput
from hmem.memory import Memory
from hmem.types import ROLES, Message, ToolCall, check_id

__all__ = ["HmemMemory", "from_llamaindex", "to_llamaindex"]

#: LlamaIndex roles of other providers' assistants (Cohere's "chatbot", Gemini's "model").
_ASSISTANT_ALIASES = frozenset({"chatbot", "model"})


def _tool_calls(message: ChatMessage) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            if not block.tool_call_id:
                raise InvalidInput(f"tool call {block.tool_name!r} has no tool_call_id; hmem needs it to pair "
                                   "the tool result", field="tool_calls[].id")
            args = block.tool_kwargs
            calls.append(ToolCall(id=block.tool_call_id, name=block.tool_name,
                                  arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))
    # The OpenAI integration's older convention: the raw OpenAI tool calls in additional_kwargs.
    raw = message.additional_kwargs.get("tool_calls") or ()
    for index, call in enumerate(raw):
        data = call.model_dump() if hasattr(call, "model_dump") else call
        calls.append(ToolCall.from_openai(data, index))
    return tuple(calls)


def _text(message: ChatMessage) -> str:
    parts: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif not isinstance(block, ToolCallBlock | ThinkingBlock):  # reasoning is not part of the conversation
            raise InvalidInput(f"hmem stores text only and cannot keep a {type(block).__name__}; send the text "
                               "(or describe the attachment in words)", field="content")
    return "\n".join(parts)  # as ChatMessage.content joins them


def from_llamaindex(message: ChatMessage) -> Message:
    """An hmem :class:`~hmem.types.Message` from a LlamaIndex ``ChatMessage``.

    Tool calls come from ``ToolCallBlock``\\ s or ``additional_kwargs["tool_calls"]``,
    a tool result's id from ``additional_kwargs["tool_call_id"]``; thinking blocks are
    not stored. Raises :class:`~hmem.errors.InvalidInput` for images, audio and other
    non-text blocks, and for the ``function`` role.

    Example::

        >>> from_llamaindex(ChatMessage(role="user", content="hi")).to_openai()
        {'role': 'user', 'content': 'hi'}
    """
    if not isinstance(message, ChatMessage):
        raise InvalidInput(f"expected a LlamaIndex ChatMessage, got {type(message).__name__}", field="message")
    role = str(message.role.value)
    role = "assistant" if role in _ASSISTANT_ALIASES else role
    if role not in ROLES:
        raise InvalidInput(f"a LlamaIndex {role!r} message has no hmem role; use one of {sorted(ROLES)}", field="role")
    text = _text(message)
    calls = _tool_calls(message) if role == "assistant" else ()
    extra = message.additional_kwargs
    return Message(role=role, content=None if calls and not text else text,  # type: ignore[arg-type]  # checked
                   tool_calls=calls, name=extra.get("name"),
                   tool_call_id=extra.get("tool_call_id") if role == "tool" else None)


def to_llamaindex(message: Mapping[str, Any] | Message) -> ChatMessage:
    """A LlamaIndex ``ChatMessage`` from an hmem message or an OpenAI chat dict (what
    :meth:`Memory.context` returns). Tool calls become ``ToolCallBlock``\\ s (arguments
    parsed when they are a JSON object, else kept as text); a tool result keeps its id in
    ``additional_kwargs["tool_call_id"]``.

    Example::

        >>> m = to_llamaindex({"role": "tool", "content": "-3", "tool_call_id": "c1"})
        >>> m.role.value, m.content, m.additional_kwargs
        ('tool', '-3', {'tool_call_id': 'c1'})
    """
    msg = Message.from_openai(message)
    blocks: list[Any] = [TextBlock(text=msg.content)] if msg.content else []
    for call in msg.tool_calls:
        try:
            args: Any = json.loads(call.arguments)
        except ValueError:
            args = call.arguments
        blocks.append(ToolCallBlock(tool_call_id=call.id, tool_name=call.name,
                                    tool_kwargs=args if isinstance(args, dict) else call.arguments))
    extra: dict[str, Any] = {}
    if msg.tool_call_id is not None:
        extra["tool_call_id"] = msg.tool_call_id
    if msg.name is not None:
        extra["name"] = msg.name
    return ChatMessage(role=msg.role, blocks=blocks, additional_kwargs=extra)


class HmemMemory(BaseMemory):
    """A LlamaIndex memory backed by one hmem session of one user.

    ``get(input)`` is :meth:`Memory.context` with ``input`` as the recall query
    (default: the session's last user turn), for ``model`` (default
    ``memory.options.model``) within ``budget`` tokens (default: the model's window
    minus the reply reserve), minus ``initial_token_count`` when the engine passes one.
    Give the system prompt here rather than to the engine, so it counts in the budget.
    ``put``/``put_messages`` are :meth:`Memory.add`; ``reset`` is
    :meth:`Memory.clear_session`; ``set`` replaces the session's buffer (clear, then add:
    archived turns and extracted facts stay in long-term memory). Example: the module
    docstring.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    user_id: str
    session_id: str
    model: str | None = None
    budget: int | None = None
    system_prompt: str | None = None

    def __init__(self, memory: Memory | None = None, user_id: str | None = None, session_id: str | None = None,
                 **kwargs: Any) -> None:
        # Checked here, not in pydantic validators: those would wrap InvalidInput in a ValidationError.
        memory = kwargs.pop("memory", memory)
        if not isinstance(memory, Memory):
            raise InvalidInput(f"memory must be an hmem Memory, got {type(memory).__name__}", field="memory")
        fields: dict[str, Any] = {
            "memory": memory, "user_id": check_id(kwargs.pop("user_id", user_id), "user_id"),
            "session_id": check_id(kwargs.pop("session_id", session_id), "session_id")}
        super().__init__(**fields, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "HmemMemory"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> HmemMemory:  # type: ignore[override]
        """``HmemMemory.from_defaults(memory=mem, user_id=…, session_id=…)``; LlamaIndex's
        ``chat_history``/``llm`` are not used (hmem keeps the history, and its own LLM)."""
        history = kwargs.pop("chat_history", None)
        kwargs.pop("llm", None)
        made = cls(**kwargs)
        if history:
            made.put_messages(list(history))
        return made

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The assembled context for the next model call, as ChatMessages."""
        reserved = kwargs.get("initial_token_count") or 0
        budget = self.budget
        reply_reserve = None
        if reserved and budget is not None:
            budget -= reserved
        elif reserved:  # no budget: keep context()'s default memory budget, in a window made smaller
            reply_reserve = self.memory.options.reply_reserve + reserved
        ctx = self.memory.context(self.user_id, self.session_id, input, model=self.model, budget=budget,
                                  reply_reserve=reply_reserve, system_prompt=self.system_prompt)
        return [to_llamaindex(m) for m in ctx.messages]

    def get_all(self) -> list[ChatMessage]:
        """The session's buffered messages (recent turns), oldest first."""
        return [to_llamaindex(m) for m in self.memory.history(self.user_id, self.session_id)]

    def put(self, message: ChatMessage) -> None:
        self.put_messages([message])

    def put_messages(self, messages: Sequence[ChatMessage]) -> None:  # type: ignore[override]
        """Store the messages in one :meth:`Memory.add` (all are converted first)."""
        batch = [from_llamaindex(m) for m in messages]
        if batch:
            self.memory.add(self.user_id, self.session_id, batch)

    def set(self, messages: Sequence[ChatMessage]) -> None:  # type: ignore[override]
        batch = [from_llamaindex(m) for m in messages]  # converted first: bad input changes nothing
        self.memory.clear_session(self.user_id, self.session_id)
        if batch:
            self.memory.add(self.user_id, self.session_id, batch)

    def reset(self) -> None:
        self.memory.clear_session(self.user_id, self.session_id)
