"""The LangChain adapters over a real Memory (issue #14 §3).

``HmemChatMessageHistory`` and ``HmemRetriever`` run inside LangChain's own classes
(``RunnableWithMessageHistory``, an LCEL chain, ``GenericFakeChatModel``) over
``Memory.open`` with SQLite tiers, in-process vectors and the packaged MiniLM model.
LangChain's standard retriever suite runs in test_langchain_standard.py.

Bad inputs tried (each raises InvalidInput and stores nothing): an image content block,
a tool call without an id, a ``FunctionMessage``, ``ChatMessage(role="critic")``, an
empty and a padded user_id, a non-Memory ``memory``, k = 0, -1, 2.5, True and "3".
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnablePassthrough
from langchain_core.runnables.history import RunnableWithMessageHistory

from hmem.errors import InvalidInput
from hmem.integrations.langchain import HmemChatMessageHistory, HmemRetriever, from_langchain, to_langchain
from hmem.memory import Memory
from hmem.types import Message, ToolCall

pytestmark = pytest.mark.slow

#: The README's "Use it from… LangChain" snippet, verbatim (test_readme_snippet runs it).
README_SNIPPET = """\
from hmem import Memory
from hmem.integrations.langchain import HmemChatMessageHistory, HmemRetriever
mem = Memory.open("./hmem-data")
HmemChatMessageHistory(mem, user_id="u1", session_id="s1").add_user_message("I'm allergic to peanuts.")
docs = HmemRetriever(mem, user_id="u1", k=3).invoke("what am I allergic to?")
"""

FACTS = [
    "I'm allergic to peanuts and cashews.",
    "My daughter Mia starts school in September.",
    "I play the cello in a community orchestra.",
    "We adopted a grey cat called Pixel last spring.",
    "I work as a nurse on night shifts.",
]


class Prompts(BaseCallbackHandler):
    """Records every prompt a chat model receives (LangChain's own callback hook)."""

    def __init__(self) -> None:
        self.seen: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.seen.extend(messages)


def _fake_llm(*replies: AIMessage) -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter(replies))


# -- messages ------------------------------------------------------------------------


def test_history_round_trips_a_tool_call_exchange(mem: Memory) -> None:
    history = HmemChatMessageHistory(mem, "u1", "s1")
    sent: list[BaseMessage] = [
        SystemMessage("You plan trips.", id="m0"),
        HumanMessage("Weather in Oslo?", id="m1"),
        AIMessage("", id="m2", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "call_1"}]),
        ToolMessage('{"temp": -3}', tool_call_id="call_1", id="m3"),
        AIMessage("It is -3 °C in Oslo.", id="m4"),
        ChatMessage(content="Be brief.", role="developer", id="m5"),
    ]
    history.add_messages(sent)

    stored = mem.history("u1", "s1")
    assert [m.role for m in stored] == ["system", "user", "assistant", "tool", "assistant", "developer"]
    assert stored[2].content is None and stored[2].tool_calls == (ToolCall("call_1", "weather", '{"city": "Oslo"}'),)
    assert stored[3].tool_call_id == "call_1"
    back = history.messages
    assert [type(m) for m in back] == [type(m) for m in sent]
    assert [(m.id, m.content) for m in back] == [(m.id, m.content) for m in sent]
    assert isinstance(back[2], AIMessage) and back[2].tool_calls == [
        {"name": "weather", "args": {"city": "Oslo"}, "id": "call_1", "type": "tool_call"}]
    assert isinstance(back[3], ToolMessage) and back[3].tool_call_id == "call_1"
    assert isinstance(back[5], ChatMessage) and back[5].role == "developer"


def test_arguments_that_are_not_a_json_object_come_back_as_invalid_tool_calls() -> None:
    stored = Message(role="assistant", content=None, tool_calls=(ToolCall("c1", "f", "{oops"), ToolCall("c2", "g", "[1]")))
    back = to_langchain(stored)
    assert isinstance(back, AIMessage) and back.tool_calls == []
    assert [(c["id"], c["args"]) for c in back.invalid_tool_calls] == [("c1", "{oops"), ("c2", "[1]")]
    assert from_langchain(back).tool_calls == stored.tool_calls  # the model's text survives verbatim


def test_text_blocks_are_joined() -> None:
    message = HumanMessage(content=[{"type": "text", "text": "two "}, "parts"])
    assert from_langchain(message).content == "two parts"


@pytest.mark.parametrize("bad", [
    HumanMessage(content=[{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}]),
    AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": None}]),
    FunctionMessage(content="42", name="f"),
    ChatMessage(content="hm", role="critic"),
], ids=["image-block", "tool-call-without-id", "function-message", "unknown-role"])
def test_unstorable_messages_are_refused_and_nothing_is_stored(mem: Memory, bad: BaseMessage) -> None:
    history = HmemChatMessageHistory(mem, "u1", "s1")
    with pytest.raises(InvalidInput):
        history.add_messages([HumanMessage("fine"), bad])
    assert mem.history("u1", "s1") == []


@pytest.mark.parametrize("user_id", ["", " u1"])
def test_bad_user_ids_are_refused(mem: Memory, user_id: str) -> None:
    with pytest.raises(InvalidInput, match="user_id"):
        HmemChatMessageHistory(mem, user_id, "s1")
    with pytest.raises(InvalidInput, match="user_id"):
        HmemRetriever(mem, user_id)


def test_memory_must_be_an_hmem_memory() -> None:
    with pytest.raises(InvalidInput, match="memory"):
        HmemChatMessageHistory({}, "u1", "s1")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="memory"):
        HmemRetriever(memory={}, user_id="u1")  # type: ignore[arg-type]


# -- the chat history inside LangChain -----------------------------------------------


def test_runnable_with_message_history_remembers_across_calls_and_clear_forgets(mem: Memory) -> None:
    prompts = Prompts()
    prompt = ChatPromptTemplate.from_messages([("system", "You are kind."), MessagesPlaceholder("history"),
                                               ("human", "{question}")])
    llm = _fake_llm(AIMessage("Noted: no peanuts."), AIMessage("Peanuts."))
    with warnings.catch_warnings():  # LangChain deprecated the wrapper for LangGraph; it still is the API
        warnings.simplefilter("ignore", DeprecationWarning)
        chat = RunnableWithMessageHistory(
            prompt | llm, lambda session_id: HmemChatMessageHistory(mem, "u1", session_id),
            input_messages_key="question", history_messages_key="history")
    config: Any = {"configurable": {"session_id": "s1"}, "callbacks": [prompts]}

    chat.invoke({"question": "I'm allergic to peanuts."}, config=config)
    answer = chat.invoke({"question": "What am I allergic to?"}, config=config)

    assert answer.content == "Peanuts."
    second_prompt = [m.content for m in prompts.seen[1]]
    assert second_prompt == ["You are kind.", "I'm allergic to peanuts.", "Noted: no peanuts.", "What am I allergic to?"]
    assert [(m.role, m.content) for m in mem.history("u1", "s1")] == [
        ("user", "I'm allergic to peanuts."), ("assistant", "Noted: no peanuts."),
        ("user", "What am I allergic to?"), ("assistant", "Peanuts.")]
    assert mem.history("u2", "s1") == []  # another user's session of the same name is untouched

    HmemChatMessageHistory(mem, "u1", "s1").clear()
    assert HmemChatMessageHistory(mem, "u1", "s1").messages == []


# -- the retriever -------------------------------------------------------------------


def remember_facts(mem: Memory, user_id: str) -> None:
    for fact in FACTS:
        mem.remember(user_id, fact, session_id="s0")


def test_retriever_returns_the_relevant_fact_first_with_its_metadata(mem: Memory) -> None:
    remember_facts(mem, "u1")
    docs = HmemRetriever(mem, "u1", k=2).invoke("Which nuts can I not eat?")
    assert len(docs) == 2
    assert docs[0].page_content == FACTS[0]
    meta = docs[0].metadata
    assert meta["kind"] == "fact" and meta["session"] == "s0" and meta["round"] == 1
    assert meta["id"] == docs[0].id and mem.items("u1", ids=[meta["id"]])[0].text == FACTS[0]
    assert meta["score"] >= docs[1].metadata["score"]
    assert meta["date"].startswith(str(mem.items("u1", ids=[meta["id"]])[0].created_at.date()))
    assert HmemRetriever(mem, "u1", k=5).invoke("nuts", k=1)[0].page_content == FACTS[0]


def test_retriever_sees_only_its_own_user(mem: Memory) -> None:
    remember_facts(mem, "u1")
    assert HmemRetriever(mem, "u2", k=5).invoke("peanuts") == []


def test_invoke_takes_the_constructors_filters_for_one_call(mem: Memory) -> None:
    """LangChain hands ``invoke``'s (and ``ainvoke``'s) keyword arguments to the retriever:
    ``k``, ``kinds`` and ``session_id`` apply to that call only (docs/integrations.md)."""
    remember_facts(mem, "u1")
    seat = "I prefer aisle seats on long train rides."
    mem.remember("u1", seat, kind="preference", session_id="trips")
    query = "seats, cello, nuts and cats"
    retriever = HmemRetriever(mem, "u1", k=5)
    assert [d.page_content for d in retriever.invoke(query, kinds=["preference"])] == [seat]
    assert [d.page_content for d in asyncio.run(retriever.ainvoke(query, kinds=["preference"]))] == [seat]
    assert [d.page_content for d in retriever.invoke(query, session_id="trips")] == [seat]
    assert len(retriever.invoke(query)) == 5  # nothing of the calls before stuck
    facts_only = HmemRetriever(mem, "u1", k=5, kinds=["fact"])
    assert [d.metadata["kind"] for d in facts_only.invoke(query, kinds="preference")] == ["preference"]
    assert {d.metadata["kind"] for d in facts_only.invoke(query)} == {"fact"}
    assert len(facts_only.invoke(query, k=2, kinds=["fact", "preference"])) == 2
    with pytest.raises(InvalidInput, match=r"kind.*takes") as refused:
        retriever.invoke(query, kind="fact")  # misspelt: said, not ignored
    assert refused.value.field == "kind"


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3"])
def test_bad_k_is_refused(mem: Memory, k: Any) -> None:
    with pytest.raises(InvalidInput, match="k must be a positive integer"):
        HmemRetriever(mem, "u1", k=k)
    with pytest.raises(InvalidInput, match="k must be a positive integer"):
        HmemRetriever(mem, "u1").invoke("peanuts", k=k)


def test_retriever_feeds_a_rag_chain(mem: Memory) -> None:
    remember_facts(mem, "u1")
    prompts = Prompts()
    prompt = ChatPromptTemplate.from_messages([("system", "Known about the user:\n{facts}"), ("human", "{question}")])

    def join(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = ({"facts": HmemRetriever(mem, "u1", k=2) | join, "question": RunnablePassthrough()}
             | prompt | _fake_llm(AIMessage("Avoid peanuts and cashews.")) | StrOutputParser())
    assert chain.invoke("What should I not eat?", config={"callbacks": [prompts]}) == "Avoid peanuts and cashews."
    assert FACTS[0] in str(prompts.seen[0][0].content)


def test_readme_snippet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert README_SNIPPET in readme, "README's LangChain snippet and this test's copy differ"
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("HMEM_")]:
        monkeypatch.delenv(name)
    namespace: dict[str, Any] = {}
    exec(compile(README_SNIPPET, "README.md", "exec"), namespace)
    try:
        assert any("peanuts" in d.page_content for d in namespace["docs"])
    finally:
        namespace["mem"].close()


def test_importing_hmem_and_its_integrations_package_loads_no_framework() -> None:
    code = ("import sys, hmem, hmem.integrations; "
            "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith(('langchain', 'llama_index'))}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
