"""The OpenAI-compatible proxy (issue #14 §1) end to end: the official ``openai`` client
→ a real uvicorn serving hmem's proxy → :class:`ScriptedLLMServer` as the upstream."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hmem.memory import Memory
from hmem.server import create_app
from hmem.server.live import serve_in_thread
from hmem.server.proxy import ProxyOptions
from hmem.testing import ScriptedLLMServer
from hmem.types import Message
from tests.integration.server_fixtures import ADMIN_KEY, ALICE_KEY, embedder, fast_settings

MODEL = "gpt-4o-mini"
WEATHER_CALL: dict[str, Any] = {"id": "call_w1", "function": {"name": "get_weather", "arguments": '{"city": "Berlin"}'}}


@contextmanager
def proxy(tmp: Path, **options: Any) -> Iterator[tuple[str, Memory, ScriptedLLMServer]]:
    """(proxy base URL for the openai client, the memory behind it, the upstream)."""
    settings = fast_settings(tmp)
    memory = Memory.from_settings(settings, embedder=embedder())
    with ScriptedLLMServer() as upstream:
        app = create_app(memory, settings, proxy=ProxyOptions(upstream=upstream.base_url, api_key="up-key", **options))
        try:
            with serve_in_thread(app) as url:
                yield url + "/v1", memory, upstream
        finally:
            memory.close()


def client(base_url: str, key: str = ALICE_KEY, session: str = "s1", **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=key, default_headers={"X-Hmem-Session": session}, **kw)


def history(memory: Memory, user: str = "alice", session: str = "s1") -> list[Message]:
    """The session's history: both turns are stored before the answer comes back."""
    return memory.history(user, session)


def roles(memory: Memory, user: str = "alice", session: str = "s1") -> list[tuple[str, str | None]]:
    return [(m.role, m.content) for m in history(memory, user, session)]


def test_non_streaming_stores_both_turns_and_sends_the_assembled_context(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply("Noted, no peanuts.", prompt_tokens=42, completion_tokens=4).reply("Try a lentil curry.")
        oai = client(url)
        raw = oai.chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=5000, temperature=0.3,
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "I'm allergic to peanuts."}])
        first = raw.parse()
        assert first.choices[0].message.content == "Noted, no peanuts."
        assert first.usage is not None and (first.usage.prompt_tokens, first.usage.completion_tokens) == (42, 4)
        header = raw.headers["x-hmem-budget"]
        spans = [part.strip().split(";dur=") for part in raw.headers["server-timing"].split(",")]
        assert [name for name, _ in spans] == ["parse", "context", "store", "upstream", "reply"]
        assert all(float(ms) >= 0 for _, ms in spans)
        assert header.startswith(f"budget={128_000 - 5000} ") and "current_turn=" in header and "system=" in header
        sent = upstream.completion_requests[-1]
        assert sent.headers["authorization"] == "Bearer up-key"  # the configured key, never hmem's
        assert sent.body["temperature"] == 0.3 and sent.body["max_tokens"] == 5000
        assert sent.body["messages"][0]["role"] == "system" and "Be brief." in sent.body["messages"][0]["content"]
        # The client sends its whole chat again: only the new user message is stored.
        second = oai.chat.completions.create(model=MODEL, messages=[
            {"role": "system", "content": "Be brief."}, {"role": "user", "content": "I'm allergic to peanuts."},
            {"role": "assistant", "content": "Noted, no peanuts."}, {"role": "user", "content": "Dinner idea?"}])
        assert second.choices[0].message.content == "Try a lentil curry."
        assert roles(memory) == [("user", "I'm allergic to peanuts."), ("assistant", "Noted, no peanuts."),
                                 ("user", "Dinner idea?"), ("assistant", "Try a lentil curry.")]
        contents = [m["content"] for m in upstream.completion_requests[-1].body["messages"]]
        assert any("peanuts" in (c or "") for c in contents[1:])  # memory reached the upstream


def test_sync_streaming_relays_chunks_and_stores_the_reply_with_usage(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply("Berlin is sunny today", prompt_tokens=7, completion_tokens=4)
        stream = client(url).chat.completions.create(
            model=MODEL, stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "Weather?"}])
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Berlin is sunny today"
        assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) == 4  # chunk by chunk
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 11
        assert roles(memory) == [("user", "Weather?"), ("assistant", "Berlin is sunny today")]


def test_async_streaming_tool_calls_then_tool_results(tmp_path: Path) -> None:
    async def run(url: str) -> tuple[list[Any], str]:
        oai = openai.AsyncOpenAI(base_url=url, api_key=ALICE_KEY, default_headers={"X-Hmem-Session": "s1"})
        stream: Any = await oai.chat.completions.create(model=MODEL, stream=True, tools=[_WEATHER_TOOL],
                                                   messages=[{"role": "user", "content": "Weather in Berlin?"}])
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                slot = calls.setdefault(tc.index, {"id": "", "args": ""})
                slot["id"] += tc.id or ""
                slot["args"] += (tc.function.arguments or "") if tc.function else ""
        chat: Any = [{"role": "user", "content": "Weather in Berlin?"},
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "call_w1", "type": "function", "function": WEATHER_CALL["function"]}]},
                     {"role": "tool", "tool_call_id": "call_w1", "content": "22 C, sunny"}]
        answer = await oai.chat.completions.create(model=MODEL, tools=[_WEATHER_TOOL], messages=chat)
        await oai.close()
        return list(calls.values()), answer.choices[0].message.content or ""

    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply("", tool_calls=[WEATHER_CALL]).reply("It is 22 C and sunny in Berlin.")
        calls, final = asyncio.run(run(url))
        assert calls == [{"id": "call_w1", "args": '{"city": "Berlin"}'}]
        assert final == "It is 22 C and sunny in Berlin."
        stored = history(memory)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert stored[1].tool_calls and (stored[1].tool_calls[0].id, stored[1].tool_calls[0].arguments) == (
            "call_w1", '{"city": "Berlin"}')
        assert stored[2].tool_call_id == "call_w1"
        assert upstream.completion_requests[0].body["tools"] == [_WEATHER_TOOL]  # passed through unchanged
        forwarded = upstream.completion_requests[1].body["messages"]
        assert [m["role"] for m in forwarded][-2:] == ["assistant", "tool"]


def test_async_non_streaming_tool_call_reply_is_stored(tmp_path: Path) -> None:
    async def run(url: str) -> Any:
        async with openai.AsyncOpenAI(base_url=url, api_key=ALICE_KEY) as oai:
            return await oai.chat.completions.create(model=MODEL, tools=[_WEATHER_TOOL],
                                                     messages=[{"role": "user", "content": "Weather?"}])

    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply("", tool_calls=[WEATHER_CALL])
        answer = asyncio.run(run(url))
        assert answer.choices[0].message.tool_calls[0].function.name == "get_weather"
        stored = history(memory, session="default")  # no X-Hmem-Session: the documented default
        assert stored[-1].role == "assistant" and stored[-1].tool_calls[0].name == "get_weather"


def test_reply_is_stored_before_the_answer_and_its_pipeline_runs_after(tmp_path: Path) -> None:
    """The reply is in the session when the answer arrives (durable, several instances per
    session); archiving both turns is queued work, done once the Memory's worker caught up."""
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply("Stored first.")
        client(url).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "now?"}])
        assert roles(memory) == [("user", "now?"), ("assistant", "Stored first.")]
        assert memory.flush(30)
        archived = memory.items("alice", session_id="s1", kinds="turn")
        assert sorted(item.text for item in archived) == ["Stored first.", "now?"]


def test_upstream_500_comes_back_as_500_and_retries_store_the_turn_once(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.error(500, "boom").error(500, "boom").error(500, "boom")
        oai = client(url, max_retries=2)  # the client's own retries resend the same request
        with pytest.raises(openai.InternalServerError) as caught:
            oai.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello?"}])
        assert caught.value.status_code == 500
        body: Any = caught.value.body
        assert body["type"] == "upstream_error" and "boom" in body["message"]
        assert len(upstream.completion_requests) == 3
        assert roles(memory) == [("user", "hello?")]
        upstream.reply("hi!")  # the user retries later: still one user turn
        oai.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hello?"}])
        assert roles(memory) == [("user", "hello?"), ("assistant", "hi!")]


def test_upstream_timeout_is_504_in_hmems_error_shape(tmp_path: Path) -> None:
    with proxy(tmp_path, timeout_s=0.5) as (url, memory, upstream):
        upstream.stall(5.0)
        response = httpx.post(f"{url}/chat/completions", headers={"Authorization": f"Bearer {ALICE_KEY}"},
                              json={"model": MODEL, "messages": [{"role": "user", "content": "slow?"}]}, timeout=30)
        assert response.status_code == 504
        assert set(response.json()["error"]) == {"type", "message", "field", "details"}
        assert roles(memory, session="default") == [("user", "slow?")]


def test_stream_cut_mid_way_raises_in_the_client_and_stores_no_reply(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.cut("one two three four five", after=3)
        stream = client(url, max_retries=0).chat.completions.create(
            model=MODEL, stream=True, messages=[{"role": "user", "content": "count"}])
        seen: list[str] = []
        with pytest.raises(openai.APIError, match="closed the stream before it finished"):
            for chunk in stream:
                seen.append(chunk.choices[0].delta.content or "")
        assert "".join(seen) == "one two"  # what arrived was relayed
        assert roles(memory) == [("user", "count")]


def test_user_rules_match_the_rest_api(tmp_path: Path) -> None:
    """Tried: alice's bound key naming bob (403), the admin key naming no user (422),
    no key (401), the admin key naming bob (200, stored under bob only)."""
    with proxy(tmp_path) as (url, memory, upstream):
        messages: Any = [{"role": "user", "content": "secret"}]
        with pytest.raises(openai.PermissionDeniedError):
            client(url).chat.completions.create(model=MODEL, messages=messages, user="bob")
        with pytest.raises(openai.UnprocessableEntityError, match="user"):
            client(url, key=ADMIN_KEY).chat.completions.create(model=MODEL, messages=messages)
        with pytest.raises(openai.AuthenticationError):
            client(url, key="wrong").chat.completions.create(model=MODEL, messages=messages, user="bob")
        assert upstream.completion_requests == [] and memory.history("bob", "s1") == []
        upstream.reply("ok")
        client(url, key=ADMIN_KEY).chat.completions.create(model=MODEL, messages=messages, user="bob")
        assert roles(memory, user="bob") == [("user", "secret"), ("assistant", "ok")]
        assert memory.history("alice", "s1") == []


def test_bad_requests_name_the_field(tmp_path: Path) -> None:
    """Tried: messages missing, last message from the assistant, max_tokens 0, max_tokens
    as large as the model's window, body not JSON. Nothing is stored, nothing forwarded."""
    with proxy(tmp_path) as (url, memory, upstream):
        auth = {"Authorization": f"Bearer {ALICE_KEY}", "Content-Type": "application/json"}
        cases = [({"model": MODEL}, "messages"),
                 ({"model": MODEL, "messages": [{"role": "assistant", "content": "hi"}]}, "messages"),
                 ({"model": MODEL, "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
                 ({"model": MODEL, "max_tokens": 128_000, "messages": [{"role": "user", "content": "x"}]},
                  "max_tokens")]
        for body, field in cases:
            response = httpx.post(f"{url}/chat/completions", headers=auth, json=body)
            assert (response.status_code, response.json()["error"]["field"]) == (422, field), body
        assert [i.session_id for i in memory.session_infos("alice")] == []
        response = httpx.post(f"{url}/chat/completions", headers=auth, content=b"{nope")
        assert response.status_code == 422 and response.json()["error"]["field"] == "body"
        assert upstream.completion_requests == []


def test_a_turn_too_large_for_the_window_is_refused_and_stores_nothing(tmp_path: Path) -> None:
    """The prompt is built before the turn is stored: a turn that cannot fit (here
    max_tokens leaves ~1,000 tokens of gpt-4o-mini's window for a ~3,000-token message)
    is refused with hmem's budget error (409), and neither stored nor forwarded."""
    with proxy(tmp_path) as (url, memory, upstream):
        response = httpx.post(f"{url}/chat/completions", headers={"Authorization": f"Bearer {ALICE_KEY}"},
                              json={"model": MODEL, "max_tokens": 127_000,
                                    "messages": [{"role": "user", "content": "tell me about it " * 750}]}, timeout=120)
        assert (response.status_code, response.json()["error"]["type"]) == (409, "budget_exceeded")
        assert [i.session_id for i in memory.session_infos("alice")] == [] and upstream.completion_requests == []


def test_max_tokens_below_hmem_reply_reserve_is_the_reply_reserve(tmp_path: Path) -> None:
    """The caller's max_tokens, not hmem's default reserve (2000), sizes the prompt."""
    with proxy(tmp_path) as (url, _memory, upstream):
        upstream.reply("ok").reply("ok")
        raw = client(url).chat.completions.with_raw_response.create(
            model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}])
        assert raw.headers["x-hmem-budget"].startswith(f"budget={128_000 - 100} ")
        raw = client(url).chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "hi again"}])
        assert raw.headers["x-hmem-budget"].startswith(f"budget={128_000 - 2000} ")


def test_readme_snippet_openai_base_url(tmp_path: Path) -> None:
    """The README's "Use it from…" OpenAI snippet, verbatim apart from the two URLs/keys."""
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply("Hello Alice!")
        readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
        assert README_SNIPPET in readme, "README's OpenAI snippet and this test's copy differ"
        snippet = README_SNIPPET.replace("http://localhost:8080/v1", url).replace('"alice-key"', repr(ALICE_KEY))
        scope: dict[str, Any] = {}
        exec(snippet, scope)  # our own README text
        assert scope["reply"].choices[0].message.content == "Hello Alice!"
        assert roles(memory, session="chat-1") == [("user", "Hi, I'm Alice."),
                                                             ("assistant", "Hello Alice!")]


def test_docs_server_timing_example_is_in_the_order_sent(tmp_path: Path) -> None:
    """docs/proxy.md's ``Server-Timing`` example and its reading name the spans in the
    order a response carries them."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "proxy.md").read_text(encoding="utf-8")
    example = re.search(r"`Server-Timing` \(e\.g\. `([^`]*)`", page)
    assert example, "docs/proxy.md lost its Server-Timing example"
    documented = re.findall(r"(\w+);dur=", example.group(1))
    with proxy(tmp_path) as (url, _memory, upstream):
        upstream.reply("Noted.")
        raw = client(url).chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "I'm allergic to peanuts."}])
    sent = [part.strip().split(";dur=")[0] for part in raw.headers["server-timing"].split(",")]
    assert documented == sent
    reading = " ".join(page[example.end():page.index("\n\n", example.end())].split())
    said = {"parse": "read the body", "context": "assemble the context", "store": "store the turn",
            "upstream": "for the upstream", "reply": "store the reply"}
    assert sorted(said, key=lambda span: reading.index(said[span])) == sent


README_SNIPPET = """\
from openai import OpenAI
client = OpenAI(base_url="http://localhost:8080/v1", api_key="alice-key",  # KEY:alice in HMEM_API_KEYS
                default_headers={"X-Hmem-Session": "chat-1"})
reply = client.chat.completions.create(model="gpt-4o-mini",
                                       messages=[{"role": "user", "content": "Hi, I'm Alice."}])
"""

_WEATHER_TOOL: Any = {"type": "function", "function": {
    "name": "get_weather", "description": "current weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}

