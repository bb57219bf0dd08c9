"""The LlamaIndex adapter over a real Memory (issue #14 §3).

``HmemMemory`` runs inside LlamaIndex's own ``SimpleChatEngine`` with its ``MockLLM``
(which answers with the prompt it was sent, so the test sees what reached the model),
over ``Memory.open`` with SQLite tiers, in-process vectors and the packaged MiniLM model.

Bad inputs tried (each raises InvalidInput and stores nothing): an image block, the
``function`` role, a tool-call block without an id, a non-Memory ``memory``, an empty
and a padded user_id, an empty session_id.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM

from hmem.errors import InvalidInput
from hmem.integrations.llamaindex import HmemMemory, from_llamaindex, to_llamaindex
from hmem.memory import Memory
from hmem.tokens import get_tokenizer
from hmem.types import Message, ToolCall

pytestmark = pytest.mark.slow

FACTS = [
    "I'm allergic to peanuts and cashews.",
    "My daughter Mia starts school in September.",
    "I play the cello in a community orchestra.",
    "We adopted a grey cat called Pixel last spring.",
]


@pytest.fixture
def mem(mem: Memory) -> Iterator[Memory]:
    """The shared Memory (tests/integration/conftest.py) with the facts in it."""
    for fact in FACTS:
        mem.remember("u1", fact)
    yield mem


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _engine(mem: Memory, user_id: str = "u1", session_id: str = "s1", **options: Any) -> SimpleChatEngine:
    memory = HmemMemory.from_defaults(memory=mem, user_id=user_id, session_id=session_id,
                                      system_prompt="You are kind.", **options)
    return SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)


def test_chat_engine_gets_hmem_context_and_stores_both_turns(mem: Memory) -> None:
    engine = _engine(mem)
    first = engine.chat("Which nuts must I avoid?").response  # MockLLM echoes the prompt it got

    assert first.startswith("system: You are kind.")
    assert FACTS[0] in first  # the recalled long-term fact reached the model
    assert first.rstrip().endswith("user: Which nuts must I avoid?\nassistant:")
    stored = mem.history("u1", "s1")
    assert [(m.role, m.content) for m in stored] == [("user", "Which nuts must I avoid?"), ("assistant", first)]

    second = engine.chat("And what instrument do I play?").response
    assert "user: Which nuts must I avoid?" in second  # the first turn is now history
    assert FACTS[2] in second
    assert [m.role for m in mem.history("u1", "s1")] == ["user", "assistant", "user", "assistant"]
    assert [m.content for m in engine.chat_history][-2] == "And what instrument do I play?"


def test_stream_chat_stores_the_reply_once_the_stream_ends(mem: Memory) -> None:
    engine = _engine(mem)
    reply = engine.stream_chat("Do I have a pet?")
    text = "".join(reply.response_gen)  # the generator joins the engine's history-writing thread at its end
    assert FACTS[3] in text
    assert [(m.role, m.content) for m in mem.history("u1", "s1")] == [("user", "Do I have a pet?"),
                                                                      ("assistant", text.strip())]  # as LlamaIndex stores it


@pytest.mark.anyio
async def test_achat_goes_through_the_same_path(mem: Memory) -> None:
    reply = (await _engine(mem).achat("Which nuts must I avoid?")).response
    assert FACTS[0] in reply
    assert [m.role for m in mem.history("u1", "s1")] == ["user", "assistant"]


def test_another_user_sees_none_of_it(mem: Memory) -> None:
    _engine(mem).chat("Which nuts must I avoid?")
    reply = _engine(mem, user_id="u2").chat("Which nuts must I avoid?").response
    assert not any(fact in reply for fact in FACTS)
    assert "user: Which nuts must I avoid?\nassistant:" in reply and reply.count("user:") == 1


def test_reset_and_chat_history_replace_the_session(mem: Memory) -> None:
    engine = _engine(mem)
    engine.chat("first")
    engine.reset()
    assert mem.history("u1", "s1") == []
    engine.chat("now", chat_history=[ChatMessage(role="user", content="earlier"),
                                      ChatMessage(role="assistant", content="noted")])
    assert [m.content for m in mem.history("u1", "s1")][:3] == ["earlier", "noted", "now"]


def test_get_stays_within_the_budget_less_what_the_engine_reserved(mem: Memory) -> None:
    for i in range(40):
        mem.remember("u1", f"Note {i}: the cello lesson moved to room {100 + i} on floor {i % 5}.")
    memory = HmemMemory(mem, "u1", "s1", budget=300, model="gpt-4o-mini")
    memory.put(ChatMessage(role="user", content="Where is my cello lesson?"))
    count = get_tokenizer("gpt-4o-mini").count_messages

    full = [from_llamaindex(m) for m in memory.get()]
    narrow = [from_llamaindex(m) for m in memory.get(initial_token_count=200)]
    assert 200 < count(full) <= 300  # the recalled tier used the room it had
    assert count(narrow) <= 100
    assert narrow[-1].content == "Where is my cello lesson?"  # the current turn is never cut


def test_tool_calls_round_trip(mem: Memory) -> None:
    memory = HmemMemory(mem, "u1", "tools")
    memory.put_messages([
        ChatMessage(role="user", content="Weather in Oslo?"),
        ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="weather",
                                                            tool_kwargs={"city": "Oslo"})]),
        ChatMessage(role="tool", content='{"temp": -3}', additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]}),
        ChatMessage(role="tool", content="09:00", additional_kwargs={"tool_call_id": "c2"}),
    ])
    stored = mem.history("u1", "tools")
    assert stored[1].content is None and stored[1].tool_calls == (ToolCall("c1", "weather", '{"city": "Oslo"}'),)
    assert stored[2].tool_call_id == "c1" and stored[3].tool_calls[0].name == "clock"
    back = memory.get_all()
    call = back[1].blocks[0]
    assert isinstance(call, ToolCallBlock) and (call.tool_call_id, call.tool_kwargs) == ("c1", {"city": "Oslo"})
    assert back[2].additional_kwargs == {"tool_call_id": "c1"}

    def shape(m: Message) -> tuple[Any, ...]:
        return m.role, m.content, m.tool_calls, m.tool_call_id

    assert [shape(from_llamaindex(m)) for m in back] == [shape(m) for m in stored]


def test_text_blocks_and_thinking_are_handled() -> None:
    message = ChatMessage(role="assistant", blocks=[TextBlock(text="a"), TextBlock(text="b")])
    assert from_llamaindex(message).content == "a\nb"
    assert to_llamaindex({"role": "user", "content": "hi"}).content == "hi"


@pytest.mark.parametrize("bad", [
    ChatMessage(role="user", blocks=[TextBlock(text="see"), ImageBlock(url="http://example.invalid/x.png")]),
    ChatMessage(role="function", content="42"),
    ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_name="f", tool_kwargs={})]),
], ids=["image-block", "function-role", "tool-call-without-id"])
def test_unstorable_messages_are_refused_and_nothing_is_stored(mem: Memory, bad: ChatMessage) -> None:
    memory = HmemMemory(mem, "u1", "s1")
    with pytest.raises(InvalidInput):
        memory.put_messages([ChatMessage(role="user", content="fine"), bad])
    with pytest.raises(InvalidInput):
        memory.set([bad])
    assert mem.history("u1", "s1") == []


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"memory": {}, "user_id": "u1", "session_id": "s1"}, "memory"),
    ({"user_id": "", "session_id": "s1"}, "user_id"),
    ({"user_id": " u1", "session_id": "s1"}, "user_id"),
    ({"user_id": "u1", "session_id": ""}, "session_id"),
])
def test_bad_construction_is_refused(mem: Memory, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        HmemMemory(**{"memory": mem, **kwargs})
    assert caught.value.field == field


def test_get_without_a_budget_keeps_the_default_memory_budget_when_the_engine_reserves_tokens(mem: Memory) -> None:
    for i in range(200):
        mem.remember("u1", f"Note {i}: the cello lesson moved to room {100 + i} on floor {i % 5}.")
    memory = HmemMemory(mem, "u1", "s1", model="gpt-4o-mini")
    memory.put(ChatMessage(role="user", content="Where is my cello lesson?"))
    count = get_tokenizer("gpt-4o-mini").count_messages
    reserved = [from_llamaindex(m) for m in memory.get(initial_token_count=5000)]
    assert mem.options.memory_budget is not None
    assert 0 < count(reserved) <= mem.options.memory_budget + 100, "not the whole window less what was reserved"
