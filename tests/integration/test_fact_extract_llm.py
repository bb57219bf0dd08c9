"""LLMFactExtractor over real HTTP (ScriptedLLMServer + OpenAICompatibleLLM)."""

from __future__ import annotations

import json

import pytest

from hmem.errors import LLMError
from hmem.longterm.facts import LLMFactExtractor
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.testing.llm_server import ScriptedLLMServer
from hmem.types import Message

TURNS = [Message(role="user", content="I'm vegetarian and I moved to Oslo in March.", id="m1"),
         Message(role="assistant", content="Noted!", id="m2")]


def llm(server: ScriptedLLMServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(base_url=server.base_url, api_key="k", model="m", max_attempts=1, backoff_s=0.0)


def test_valid_facts_are_kept_invalid_entries_dropped_usage_recorded() -> None:
    facts = {"facts": [
        {"kind": "preference", "text": "The user is vegetarian.", "importance": 0.8},
        {"kind": "event", "text": "The user moved to Oslo in March.", "importance": 0.6},
        {"kind": "fact", "text": "", "importance": 0.5},
        {"kind": "fact", "text": "Importance out of range", "importance": 7},
        {"kind": "bad kind!", "text": "x", "importance": 0.1},
        "not an object",
    ]}
    with ScriptedLLMServer() as server:
        server.reply(json.dumps(facts), prompt_tokens=50, completion_tokens=20)
        ex = LLMFactExtractor(llm(server))
        result = ex.extract(TURNS)
        prompt = server.requests[-1].body["messages"]
    assert [(f.kind, f.text) for f in result.facts] == [
        ("preference", "The user is vegetarian."), ("event", "The user moved to Oslo in March.")]
    assert all(f.source_message_id == "m1" for f in result.facts)
    assert (result.method, result.attempts, result.usage.total_tokens, ex.rejected) == ("llm", 1, 70, 4)
    assert "I'm vegetarian" in prompt[-1]["content"]


def test_wrong_shape_is_asked_once_by_default() -> None:
    with ScriptedLLMServer() as server:
        server.reply('{"result": "nothing"}').reply("[]")
        with pytest.raises(LLMError, match="no valid facts JSON in 1 attempt"):
            LLMFactExtractor(llm(server)).extract(TURNS)
        assert len(server.completion_requests) == 1 and server.pending == 1


def test_wrong_shape_is_retried_once_with_max_attempts_2() -> None:
    with ScriptedLLMServer() as server:
        server.reply('{"result": "nothing"}', prompt_tokens=5, completion_tokens=5)
        server.reply('[{"kind": "fact", "text": "Lives in Oslo", "importance": 0.5}]',
                     prompt_tokens=7, completion_tokens=3)
        result = LLMFactExtractor(llm(server), max_attempts=2).extract(TURNS)
        second = server.requests[-1].body["messages"]
    assert [f.text for f in result.facts] == ["Lives in Oslo"]
    assert result.attempts == 2 and result.usage.total_tokens == 20
    assert "not valid" in second[-1]["content"]


def test_two_invalid_answers_raise_llm_error() -> None:
    with ScriptedLLMServer() as server:
        server.reply('{"facts": "oops"}').reply('"just a string"')
        with pytest.raises(LLMError, match="no valid facts JSON in 2 attempt"):
            LLMFactExtractor(llm(server), max_attempts=2).extract(TURNS)


def test_no_user_turn_means_no_call() -> None:
    with ScriptedLLMServer() as server:
        result = LLMFactExtractor(llm(server)).extract([Message(role="assistant", content="Hello", id="a")])
        assert result.facts == () and server.requests == []
