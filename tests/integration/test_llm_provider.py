"""OpenAICompatibleLLM and the Summarizer's LLM path against a real local HTTP server,
through the real ``openai`` client (nothing mocked)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from hmem.build import build_llm
from hmem.config import Settings
from hmem.errors import ConfigError, LLMError
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.session.extractive import detect_language
from hmem.session.summarizer import Summarizer
from hmem.testing.llm_server import ScriptedLLMServer, ScriptedReply
from hmem.tokens import get_tokenizer
from hmem.types import Message, SessionSummary

pytestmark = pytest.mark.integration

TOK = get_tokenizer("gpt-4o-mini")
HELLO = [Message(role="user", content="Say hello")]


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


def make_llm(server: ScriptedLLMServer, **kwargs: object) -> OpenAICompatibleLLM:
    options: dict[str, object] = {"timeout": 5.0, "max_attempts": 3, "backoff_s": 0.01}
    options.update(kwargs)
    return OpenAICompatibleLLM(base_url=server.base_url, api_key="test-key", model="test-model", **options)  # type: ignore[arg-type]


def chat(n: int = 6) -> list[Message]:
    lines = [
        "My name is Ada and I live in London.",
        "Nice to meet you.",
        "I fly to Oslo on 2 June 2025.",
        "Noted.",
        "My budget is 450 euros.",
        "Thanks!",
    ]
    return [Message(role="user" if i % 2 == 0 else "assistant", content=lines[i % 6], id=f"m{i}") for i in range(n)]


# -- the provider ------------------------------------------------------------------------------


def test_success_records_text_usage_and_request(server: ScriptedLLMServer) -> None:
    server.reply("Hello there.", prompt_tokens=21, completion_tokens=3)
    llm = make_llm(server)
    reply = llm.complete(HELLO, max_tokens=50)
    assert reply.text == "Hello there."
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (21, 3)
    assert llm.usage_total.total_tokens == 24
    assert [(c.ok, c.attempts) for c in llm.calls] == [(True, 1)]
    [request] = server.completion_requests
    assert request.body["model"] == "test-model"
    assert request.body["temperature"] == 0.0
    assert request.body["max_tokens"] == 50
    assert request.body["messages"] == [{"role": "user", "content": "Say hello"}]
    assert request.headers.get("authorization") == "Bearer test-key"


def test_500_then_success_is_retried(server: ScriptedLLMServer) -> None:
    server.error(500).reply("ok after retry", prompt_tokens=5, completion_tokens=3)
    llm = make_llm(server)
    assert llm.complete(HELLO).text == "ok after retry"
    assert len(server.completion_requests) == 2
    assert llm.calls[-1].attempts == 2 and llm.calls[-1].ok
    assert llm.usage_total.total_tokens == 8


def test_429_is_retried_but_401_is_not(server: ScriptedLLMServer) -> None:
    server.error(429, "slow down").reply("fine")
    llm = make_llm(server)
    assert llm.complete(HELLO).text == "fine"
    server.error(401, "bad key").reply("never reached")
    with pytest.raises(LLMError, match="HTTP 401"):
        llm.complete(HELLO)
    assert len(server.completion_requests) == 3  # 2 for the 429 call, 1 for the 401 call
    assert server.pending == 1


def test_all_attempts_failing_raises_llm_error_and_records_the_call(server: ScriptedLLMServer) -> None:
    server.error(500).error(502).error(503)
    llm = make_llm(server)
    with pytest.raises(LLMError, match="after 3 attempt"):
        llm.complete(HELLO)
    assert len(server.completion_requests) == 3
    call = llm.calls[-1]
    assert not call.ok and call.attempts == 3 and "HTTP 503" in (call.error or "")


def test_timeout_is_retried_then_fails(server: ScriptedLLMServer) -> None:
    server.stall(10).stall(10)
    llm = make_llm(server, timeout=0.3, max_attempts=2)
    started = time.monotonic()
    with pytest.raises(LLMError, match="Timeout"):
        llm.complete(HELLO)
    assert time.monotonic() - started < 5  # gave up at the client timeout, not the server's 10 s
    assert len(server.completion_requests) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 408, 409, 413, 422])
def test_a_client_error_is_not_retried(server: ScriptedLLMServer, status: int) -> None:
    server.error(status, "refused").reply("never reached")
    llm = make_llm(server)
    with pytest.raises(LLMError, match=f"HTTP {status}"):
        llm.complete(HELLO)
    assert len(server.completion_requests) == 1 and server.pending == 1
    assert (llm.calls[-1].ok, llm.calls[-1].attempts) == (False, 1)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_too_many_requests_and_server_errors_are_retried(server: ScriptedLLMServer, status: int) -> None:
    server.error(status, "try later").reply("ok now")
    llm = make_llm(server)
    assert llm.complete(HELLO).text == "ok now"
    assert len(server.completion_requests) == 2 and llm.calls[-1].attempts == 2


@pytest.mark.parametrize(("script", "said"), [("empty", "empty answer"), ("malformed", "malformed response")])
def test_an_unusable_answer_is_not_retried_and_its_tokens_count(
    server: ScriptedLLMServer, script: str, said: str,
) -> None:
    """The same request would get the same kind of answer, and each attempt is billed."""
    getattr(server, script)()
    server.reply("never reached")
    llm = make_llm(server)
    with pytest.raises(LLMError, match=f"{said}.*not retried"):
        llm.complete(HELLO)
    assert len(server.completion_requests) == 1 and server.pending == 1
    call = llm.calls[-1]
    assert (call.ok, call.attempts) == (False, 1) and said in (call.error or "")
    assert llm.usage_total.prompt_tokens == (10 if script == "empty" else 0)  # what the empty answer billed


def test_json_mode_asks_for_json_and_rejects_non_json_text_at_once(server: ScriptedLLMServer) -> None:
    server.reply("not { json").reply('{"city": "Oslo"}')
    llm = make_llm(server)
    with pytest.raises(LLMError, match="not valid JSON"):
        llm.complete(HELLO, json_mode=True)
    assert len(server.completion_requests) == 1
    assert llm.complete(HELLO, json_mode=True).text == '{"city": "Oslo"}'
    assert all(r.body["response_format"] == {"type": "json_object"} for r in server.completion_requests)


def test_connection_refused_becomes_llm_error() -> None:
    with ScriptedLLMServer() as srv:
        url = srv.base_url
    llm = OpenAICompatibleLLM(base_url=url, api_key=None, model="m", timeout=1, max_attempts=2, backoff_s=0)
    with pytest.raises(LLMError, match="Connection"):
        llm.complete(HELLO)


def test_responder_answers_once_the_script_is_used_up(server: ScriptedLLMServer) -> None:
    server.respond_with(lambda req: ScriptedReply(text=f"echo: {req.body['messages'][-1]['content']}"))
    assert make_llm(server).complete(HELLO).text == "echo: Say hello"


@pytest.mark.parametrize(
    "kwargs",
    [{"model": ""}, {"timeout": 0}, {"max_attempts": 0}, {"max_attempts": 1.5}, {"backoff_s": -1}],
    ids=repr,
)
def test_bad_provider_settings(kwargs: dict[str, object]) -> None:
    options: dict[str, object] = {"base_url": None, "api_key": None, "model": "m"}
    options.update(kwargs)
    with pytest.raises(ConfigError):
        OpenAICompatibleLLM(**options)  # type: ignore[arg-type]


def test_settings_from_environment() -> None:
    assert build_llm(Settings.from_env({})) is None
    # The model and endpoint come from the environment; the timeout and the summary model
    # are tuning settings (keywords here, or the HMEM_CONFIG file).
    env = {"HMEM_LLM_MODEL": "qwen2.5:7b", "HMEM_LLM_BASE_URL": "http://127.0.0.1:1/v1"}
    settings = Settings.from_env(env, llm_timeout_s="7")
    llm = build_llm(settings)
    assert isinstance(llm, OpenAICompatibleLLM)
    assert (llm.model, llm.base_url, llm.timeout) == ("qwen2.5:7b", "http://127.0.0.1:1/v1", 7.0)
    assert settings.effective_summary_model == "qwen2.5:7b"
    assert Settings.from_env(env, summary_model="qwen2.5:0.5b").effective_summary_model == "qwen2.5:0.5b"
    with pytest.raises(ConfigError, match=r"^llm_timeout_s='soon'"):
        Settings.from_env(env, llm_timeout_s="soon")
    assert "test-key" not in repr(OpenAICompatibleLLM(base_url=None, api_key="test-key", model="m"))


# -- the summarizer over the provider ----------------------------------------------------------


def test_summarizer_uses_the_llm_with_previous_summary_and_summary_model(server: ScriptedLLMServer) -> None:
    server.reply("Ada (London) flies to Oslo on 2 June 2025; budget 450 euros.", prompt_tokens=90)
    s = Summarizer(make_llm(server), TOK, model="cheap-summary-model")
    previous = SessionSummary("u1", "s1", "Ada lives in London.", "m-1", 2, "llm")
    out = s.fold(previous, chat(), user_id="u1", session_id="s1")
    assert (out.method, out.covers_until, out.folded_count) == ("llm", "m5", 8)
    assert out.text.startswith("Ada (London)")
    [request] = server.completion_requests
    assert request.body["model"] == "cheap-summary-model"
    prompt = request.body["messages"][-1]["content"]
    assert "Ada lives in London." in prompt and "I fly to Oslo on 2 June 2025." in prompt
    assert "English" in request.body["messages"][0]["content"]


def test_summarizer_asks_for_chinese_on_a_chinese_conversation(server: ScriptedLLMServer) -> None:
    server.reply("用户王伟3月15日去上海出差。")
    msgs = [Message(role="user", content="我叫王伟，3月15日要去上海出差。", id="z1")]
    out = Summarizer(make_llm(server), TOK).fold(None, msgs, user_id="u1", session_id="s1")
    assert out.method == "llm" and detect_language(out.text) == "zh"
    assert "Chinese" in server.completion_requests[0].body["messages"][0]["content"]


def test_overlong_llm_answer_is_cut_to_the_cap(server: ScriptedLLMServer) -> None:
    server.reply(" ".join(f"Sentence number {i} about Oslo." for i in range(200)))
    out = Summarizer(make_llm(server), TOK, cap_tokens=40).fold(None, chat(), user_id="u1", session_id="s1")
    assert out.method == "llm"
    assert TOK.count(out.text) <= 40 and out.tokens <= 40
    assert out.text.endswith(".")  # cut at a sentence boundary


def test_timeout_falls_back_to_extractive(server: ScriptedLLMServer) -> None:
    server.stall(10).stall(10)
    s = Summarizer(make_llm(server, timeout=0.3, max_attempts=2), TOK)
    out = s.fold(None, chat(), user_id="u1", session_id="s1")
    assert out.method == "extractive" and out.covers_until == "m5"
    assert "Oslo" in out.text
    assert s.last_fallback is not None and "Timeout" in s.last_fallback


def test_all_attempts_failing_records_the_fallback(server: ScriptedLLMServer) -> None:
    server.error(500).error(500).error(500)
    llm = make_llm(server)
    s = Summarizer(llm, TOK)
    out = s.fold(None, chat(), user_id="u1", session_id="s1")
    assert out.method == "extractive"
    assert s.counts == {"llm": 0, "extractive": 1, "raw": 0}
    assert s.last_fallback is not None and "LLM failed" in s.last_fallback
    assert not llm.calls[-1].ok and llm.calls[-1].attempts == 3


@pytest.mark.parametrize("script", ["empty", "malformed"])
def test_empty_and_malformed_answers_fall_back(server: ScriptedLLMServer, script: str) -> None:
    getattr(server, script)()
    s = Summarizer(make_llm(server), TOK)
    out = s.fold(None, chat(), user_id="u1", session_id="s1")
    assert out.method == "extractive" and "Oslo" in out.text
    assert len(server.completion_requests) == 1  # not retried: the fallback takes over at once


def test_recovery_after_a_failed_fold(server: ScriptedLLMServer) -> None:
    server.error(500).error(500).error(500).reply("Ada flies to Oslo; budget 450 euros.")
    s = Summarizer(make_llm(server), TOK)
    first = s.fold(None, chat(4), user_id="u1", session_id="s1")
    second = s.fold(first, chat(6)[4:], user_id="u1", session_id="s1")
    assert (first.method, second.method) == ("extractive", "llm")
    assert s.last_fallback is None
    assert first.text in server.completion_requests[-1].body["messages"][-1]["content"]
