"""The :class:`~hmem.protocols.LLM` contract suite, for an LLM that talks to an
OpenAI-compatible endpoint: the suite plays the endpoint with a real HTTP server
(:class:`~hmem.testing.llm_server.ScriptedLLMServer`) and scripts its answers.

Subclass :class:`LLMContract` and override the ``make_llm`` fixture: it returns a
function ``make(base_url=..., model=..., timeout_s=...)`` that builds the LLM
(make its retries quick: the suite scripts failures).

Example::

    import pytest
    from hmem.providers.llm import OpenAICompatibleLLM
    from hmem.testing.contracts import LLMContract

    class TestOpenAICompatibleLLM(LLMContract):
        @pytest.fixture
        def make_llm(self):
            return lambda *, base_url, model, timeout_s: OpenAICompatibleLLM(
                base_url=base_url, api_key="test", model=model, timeout=timeout_s, backoff_s=0.0)
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Protocol

import pytest

from hmem.errors import LLMError
from hmem.protocols import LLM
from hmem.testing.llm_server import ScriptedLLMServer
from hmem.types import Message, ToolCall

__all__ = ["LLMContract", "LLMFactory"]

MODEL = "contract-model"
QUESTION = [Message(role="user", content="What is the capital of France?")]
CHAT = [
    Message(role="system", content="You are terse."),
    Message(role="user", content="我住在柏林。What's the weather?", name="ada"),
    Message(role="assistant", content=None, tool_calls=(ToolCall(id="call_1", name="weather", arguments='{"city": "Berlin"}'),)),
    Message(role="tool", content='{"temp": 21}', tool_call_id="call_1"),
    Message(role="user", content="Thanks 👍"),
]
#: More failures than any sensible number of attempts: the LLM must give up with LLMError.
MANY = 6


class LLMFactory(Protocol):
    def __call__(self, *, base_url: str, model: str, timeout_s: float) -> LLM: ...


class LLMContract:
    """Behaviour every OpenAI-compatible :class:`~hmem.protocols.LLM` must show: the
    reply's text, model and usage; messages and options sent as given; and every
    failure (HTTP errors, timeouts, empty, malformed or non-JSON answers) raised as
    :class:`~hmem.errors.LLMError`, never as the HTTP client's own exception."""

    @pytest.fixture
    def make_llm(self) -> LLMFactory:
        raise NotImplementedError("override the `make_llm` fixture to return make(base_url=, model=, timeout_s=)")

    @pytest.fixture
    def server(self) -> Iterator[ScriptedLLMServer]:
        with ScriptedLLMServer() as server:
            yield server

    @pytest.fixture
    def llm(self, make_llm: LLMFactory, server: ScriptedLLMServer) -> LLM:
        return make_llm(base_url=server.base_url, model=MODEL, timeout_s=10.0)

    def test_satisfies_the_protocol(self, llm: LLM) -> None:
        assert isinstance(llm, LLM)

    def test_reply_has_the_text_model_and_usage(self, llm: LLM, server: ScriptedLLMServer) -> None:
        server.reply("Paris. 巴黎。", prompt_tokens=12, completion_tokens=5)
        reply = llm.complete(QUESTION)
        assert reply.text == "Paris. 巴黎。"
        assert reply.model == MODEL
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (12, 5, 17)
        [request] = server.completion_requests
        assert request.body["model"] == MODEL

    def test_messages_are_sent_in_order_as_given(self, llm: LLM, server: ScriptedLLMServer) -> None:
        server.reply("21 °C.")
        llm.complete(CHAT)
        [request] = server.completion_requests
        sent = request.body["messages"]
        assert [m["role"] for m in sent] == [m.role for m in CHAT]
        assert [m.get("content") or None for m in sent] == [m.content or None for m in CHAT]
        assert sent[1].get("name") == "ada"
        assert [c["id"] for c in sent[2]["tool_calls"]] == ["call_1"]
        assert sent[2]["tool_calls"][0]["function"] == {"name": "weather", "arguments": '{"city": "Berlin"}'}
        assert sent[3]["tool_call_id"] == "call_1"

    def test_options_are_sent(self, llm: LLM, server: ScriptedLLMServer) -> None:
        server.reply('{"city": "Paris"}').reply("plain")
        reply = llm.complete(QUESTION, model="other-model", temperature=0.3, max_tokens=42, json_mode=True)
        assert json.loads(reply.text) == {"city": "Paris"} and reply.model == "other-model"
        body = server.completion_requests[-1].body
        assert body["model"] == "other-model" and body["temperature"] == pytest.approx(0.3)
        assert body.get("max_tokens", body.get("max_completion_tokens")) == 42
        assert body["response_format"] == {"type": "json_object"}
        assert llm.complete(QUESTION).text == "plain"
        default = server.completion_requests[-1].body  # the defaults: no option of the first call sticks
        assert default["model"] == MODEL and default.get("temperature", 0.0) == 0.0
        assert "max_tokens" not in default and "max_completion_tokens" not in default
        assert default.get("response_format") in (None, {"type": "text"})

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 429, 500, 503])
    def test_http_errors_raise_llm_error(self, llm: LLM, server: ScriptedLLMServer, status: int) -> None:
        for _ in range(MANY):
            server.error(status, message=f"scripted {status}")
        with pytest.raises(LLMError):
            llm.complete(QUESTION)
        assert server.completion_requests, "the LLM never called the server"

    @pytest.mark.parametrize("kind", ["empty", "malformed"])
    def test_empty_or_malformed_answers_raise_llm_error(self, llm: LLM, server: ScriptedLLMServer, kind: str) -> None:
        for _ in range(MANY):
            server.empty() if kind == "empty" else server.malformed()
        with pytest.raises(LLMError):
            llm.complete(QUESTION)

    def test_json_mode_never_returns_text_that_is_not_json(self, llm: LLM, server: ScriptedLLMServer) -> None:
        for _ in range(MANY):
            server.reply("Sure! Here is the JSON: {city: Paris")
        with pytest.raises(LLMError):
            llm.complete(QUESTION, json_mode=True)

    def test_a_stalled_server_times_out_as_llm_error(self, make_llm: LLMFactory, server: ScriptedLLMServer) -> None:
        stall_s = 30.0
        for _ in range(MANY):
            server.stall(stall_s)
        llm = make_llm(base_url=server.base_url, model=MODEL, timeout_s=0.3)
        started = time.monotonic()
        with pytest.raises(LLMError):
            llm.complete(QUESTION)
        # It gave up on its own timeout; it did not wait for the server's late answer.
        assert time.monotonic() - started < stall_s

    def test_an_unreachable_server_raises_llm_error(self, make_llm: LLMFactory, server: ScriptedLLMServer) -> None:
        base_url = server.base_url
        server.close()  # nothing listens on the port any more
        with pytest.raises(LLMError):
            make_llm(base_url=base_url, model=MODEL, timeout_s=2.0).complete(QUESTION)
