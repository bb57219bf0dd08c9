"""LangChain adapters: a chat message history backed by an hmem session, and a
retriever over hmem's long-term recall.

Needs ``langchain-core`` (``pip install 'hmem[langchain]'``); ``import hmem`` never
loads it. Both classes only call the public :class:`hmem.Memory` API.

Example::

    from hmem import Memory
    from hmem.integrations.langchain import HmemChatMessageHistory, HmemRetriever

    mem = Memory.open("./hmem-data")
    history = HmemChatMessageHistory(mem, user_id="u1", session_id="s1")
    history.add_user_message("I'm allergic to peanuts.")     # Memory.add: extraction, compaction …
    docs = HmemRetriever(mem, user_id="u1", k=5).invoke("what can't I eat?")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import ToolCall as LangChainToolCall
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict

from hmem.errors import InvalidInput
from hmem.longterm.options import RecallOptions
from hmem.memory import Memory
from hmem.types import ROLES, Hit, Message, ToolCall, check_id

__all__ = ["HmemChatMessageHistory", "HmemRetriever", "from_langchain", "hit_to_document", "to_langchain"]

_ROLE_OF = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _text(content: str | list[str | dict[str, Any]], where: str) -> str:
    """The message's text; hmem stores text only, so a non-text block is refused
    rather than silently dropped."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise InvalidInput(
                f"{where}: hmem stores text only and cannot keep a {kind!r} content block; "
                "send the text blocks (or describe the image in words)", field="content")
    return "".join(parts)


def _tool_calls(message: AIMessage) -> tuple[ToolCall, ...]:
    calls = []
    for call in message.tool_calls:
        if not call.get("id"):
            raise InvalidInput(f"tool call {call['name']!r} has no id; hmem needs it to pair the tool result",
                               field="tool_calls[].id")
        calls.append(ToolCall(id=str(call["id"]), name=call["name"],
                              arguments=json.dumps(call["args"], ensure_ascii=False)))
    for bad in message.invalid_tool_calls:  # kept verbatim: the model's own text, as OpenAI stores it
        if not bad.get("id") or not bad.get("name"):
            raise InvalidInput("an invalid tool call without id or name cannot be stored", field="tool_calls[]")
        calls.append(ToolCall(id=str(bad["id"]), name=str(bad["name"]), arguments=bad.get("args") or ""))
    return tuple(calls)


def from_langchain(message: BaseMessage) -> Message:
    """An hmem :class:`~hmem.types.Message` from a LangChain message.

    Human, AI (with tool calls), system, tool and ``ChatMessage`` with an OpenAI role
    convert; LangChain's ``id`` and ``name`` are kept. Provider extras
    (``additional_kwargs``, ``response_metadata``) are not stored. Raises
    :class:`~hmem.errors.InvalidInput` for non-text content blocks, tool calls without
    an id, and roles hmem does not know.

    Example::

        >>> from langchain_core.messages import AIMessage
        >>> m = from_langchain(AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}]))
        >>> m.role, m.content, m.tool_calls[0].arguments
        ('assistant', None, '{"x": 1}')
    """
    if not isinstance(message, BaseMessage):
        raise InvalidInput(f"expected a LangChain message, got {type(message).__name__}", field="message")
    role = message.role if isinstance(message, ChatMessage) else _ROLE_OF.get(message.type)
    if role not in ROLES:
        raise InvalidInput(f"a LangChain {message.type!r} message (role {role!r}) has no hmem role; "
                           f"use one of {sorted(ROLES)}", field="role")
    text = _text(message.content, f"{message.type} message")
    calls = _tool_calls(message) if isinstance(message, AIMessage) else ()
    kwargs: dict[str, Any] = {
        "role": role, "content": None if calls and not text else text, "name": message.name, "tool_calls": calls,
        "tool_call_id": message.tool_call_id if isinstance(message, ToolMessage) else None,
    }
    if message.id is not None:
        kwargs["id"] = message.id
    return Message(**kwargs)


def to_langchain(message: Message) -> BaseMessage:
    """The LangChain message for an hmem message (the inverse of :func:`from_langchain`).

    Tool-call arguments that are not a JSON object come back as LangChain
    ``invalid_tool_calls``, as LangChain's own OpenAI parser does; a ``developer``
    message becomes ``ChatMessage(role="developer")``.

    Example::

        >>> to_langchain(Message(role="user", content="hi", id="m1"))
        HumanMessage(content='hi', additional_kwargs={}, response_metadata={}, id='m1')
    """
    content = message.content or ""
    common: dict[str, Any] = {"id": message.id, "name": message.name}
    if message.role == "user":
        return HumanMessage(content, **common)
    if message.role == "system":
        return SystemMessage(content, **common)
    if message.role == "tool":
        return ToolMessage(content, tool_call_id=message.tool_call_id, **common)
    if message.role == "assistant":
        good: list[LangChainToolCall] = []
        bad: list[InvalidToolCall] = []
        for call in message.tool_calls:
            error: str | None = None
            try:
                args = json.loads(call.arguments)
            except ValueError as exc:
                args, error = None, f"arguments are not JSON: {exc}"
            else:
                error = None if isinstance(args, dict) else "arguments are not a JSON object"
            if error is None:
                good.append(tool_call(name=call.name, args=args, id=call.id))
            else:
                bad.append(invalid_tool_call(name=call.name, args=call.arguments, id=call.id, error=error))
        return AIMessage(content, tool_calls=good, invalid_tool_calls=bad, **common)
    return ChatMessage(content=content, role=message.role, **common)


class HmemChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history backed by one hmem session.

    ``messages`` is the session's buffer (:meth:`Memory.history`): recent turns; what
    compaction folded away lives in the rolling summary and the long-term archive
    (reach it with :class:`HmemRetriever` or :meth:`Memory.context`).
    ``add_messages`` is one :meth:`Memory.add` (profile and fact extraction,
    compaction); ``clear`` is :meth:`Memory.clear_session` (archived turns stay in
    long-term memory). Example: the module docstring.
    """

    def __init__(self, memory: Memory, user_id: str, session_id: str) -> None:
        super().__init__()
        if not isinstance(memory, Memory):
            raise InvalidInput(f"memory must be an hmem Memory, got {type(memory).__name__}", field="memory")
        self.memory = memory
        self.user_id = check_id(user_id, "user_id")
        self.session_id = check_id(session_id, "session_id")

    @property  # read from the store on every access, as LangChain's docs advise
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's buffered messages, oldest first, as LangChain messages."""
        return [to_langchain(m) for m in self.memory.history(self.user_id, self.session_id)]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store the messages in one :meth:`Memory.add` (all or none are converted first)."""
        batch = [from_langchain(m) for m in messages]
        if batch:
            self.memory.add(self.user_id, self.session_id, batch)

    def clear(self) -> None:
        """Delete the session's buffer and summary (its archived turns stay recallable)."""
        self.memory.clear_session(self.user_id, self.session_id)


def hit_to_document(hit: Hit) -> Document:
    """A LangChain ``Document`` for one recalled hit; ``metadata`` holds ``id``,
    ``score``, ``date`` (ISO-8601, when the item was created), ``session``, ``kind``,
    ``round`` (the recall round that found it) and the lexical/dense ranks.

    Example::

        >>> from hmem.types import MemoryItem
        >>> doc = hit_to_document(Hit(MemoryItem(id="i1", user_id="u", text="likes tea"), score=0.5))
        >>> doc.page_content, doc.metadata["id"], doc.metadata["score"]
        ('likes tea', 'i1', 0.5)
    """
    item = hit.item
    return Document(id=item.id, page_content=item.text, metadata={
        "id": item.id, "score": hit.score, "date": item.created_at.isoformat(), "session": item.session_id,
        "kind": item.kind, "round": hit.round, "lexical_rank": hit.lexical_rank, "dense_rank": hit.dense_rank,
    })


class HmemRetriever(BaseRetriever):
    """A LangChain retriever over :meth:`Memory.recall` for one user: the ``k`` most
    relevant long-term items (facts and archived turns), best first, as Documents
    (see :func:`hit_to_document` for the metadata). ``kinds`` and ``session_id`` filter
    as in ``recall``. ``invoke(query, k=3, kinds=["preference"])`` (and ``ainvoke``)
    overrides any of the three for that call only, as LangChain passes a retriever's
    call keywords on; another keyword raises :class:`~hmem.errors.InvalidInput`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    user_id: str
    k: int = 4
    kinds: tuple[str, ...] | None = None
    session_id: str | None = None

    def __init__(self, memory: Memory | None = None, user_id: str | None = None, k: int = 4, **kwargs: Any) -> None:
        # Positional arguments like the other hmem shells; pydantic alone takes keywords only.
        memory = kwargs.pop("memory", memory)
        if not isinstance(memory, Memory):
            raise InvalidInput(f"memory must be an hmem Memory, got {type(memory).__name__}", field="memory")
        user_id = check_id(kwargs.pop("user_id", user_id), "user_id")
        fields: dict[str, Any] = {"memory": memory, "user_id": user_id, "k": _check_k(kwargs.pop("k", k))}
        super().__init__(**fields, **kwargs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None,
        kinds: Iterable[str] | str | None = None, session_id: str | None = None, **unknown: Any,
    ) -> list[Document]:
        unknown.pop("verbose", None)  # LangChain's own: it passes its callback options on too
        if unknown:
            name = sorted(unknown)[0]
            raise InvalidInput(f"unknown argument {name!r} for HmemRetriever.invoke: it takes k, kinds and "
                               "session_id per call", field=name)
        limit = self.k if k is None else _check_k(k)
        hits = self.memory.recall(self.user_id, query, limit, RecallOptions(
            kinds=self.kinds if kinds is None else kinds, session_id=self.session_id if session_id is None else session_id))
        return [hit_to_document(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **call: Any,
    ) -> list[Document]:
        # BaseRetriever's default drops the call's keywords; pass them on, off the event loop.
        return await run_in_executor(None, self._get_relevant_documents, query,
                                     run_manager=run_manager.get_sync(), **call)


def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be a positive integer, got {k!r}", field="k")
    return k
