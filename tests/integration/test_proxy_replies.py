"""The proxy relays every valid upstream reply, also the ones hmem cannot store, and
bounds the whole upstream call (issue #32, defects 3 and 4): a real uvicorn serving
the proxy, :class:`ScriptedLLMServer` as the upstream, the ``openai`` client or raw
HTTP (to see the bytes of a stream)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai

from hmem.types import MAX_CONTENT_CHARS
from tests.integration.server_fixtures import ALICE_KEY
from tests.integration.test_proxy import MODEL, client, history, proxy, roles

AUTH = {"Authorization": f"Bearer {ALICE_KEY}", "X-Hmem-Session": "s1"}


def _request(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}


def _events(url: str, body: dict[str, Any]) -> tuple[httpx.Response, list[str]]:
    """The streamed answer's status and its events (``data:`` and comment blocks), as sent."""
    with httpx.stream("POST", f"{url}/chat/completions", headers=AUTH, json=body, timeout=60) as response:
        text = response.read().decode()
    return response, [block for block in text.split("\n\n") if block]


def _data(events: list[str]) -> list[Any]:
    """The ``data:`` payloads, parsed where they are JSON."""
    out: list[Any] = []
    for event in events:
        if event.startswith("data: "):
            payload = event[len("data: "):]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


# -- defect 3: replies without text --------------------------------------------------------


def test_a_refusal_is_relayed_unchanged_and_stored_as_the_assistant_turn(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.refuse("I can't help with that.")
        raw = client(url).chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "user", "content": "Help me pick a lock."}])
        answer = raw.parse()
        assert (answer.choices[0].message.content, answer.choices[0].message.refusal) == (
            None, "I can't help with that.")
        assert raw.headers["x-hmem-reply"] == "stored"
        stored = history(memory)
        assert [(m.role, m.content) for m in stored] == [("user", "Help me pick a lock."),
                                                         ("assistant", "I can't help with that.")]
        assert dict(stored[1].metadata) == {"refusal": True}


def test_a_reply_without_text_is_relayed_and_the_header_says_it_was_not_stored(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.empty()
        response = httpx.post(f"{url}/chat/completions", headers=AUTH, json=_request("Say nothing."), timeout=60)
        assert response.status_code == 200
        assert response.json()["choices"][0]["message"] == {"role": "assistant", "content": ""}
        assert response.headers["x-hmem-reply"].startswith("not stored: ")
        assert "no text" in response.headers["x-hmem-reply"]
        assert roles(memory) == [("user", "Say nothing.")]


def test_a_reply_over_hmems_message_limit_is_relayed_whole_and_not_stored(tmp_path: Path) -> None:
    long_text = "x" * (MAX_CONTENT_CHARS + 1)
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply(long_text)
        response = httpx.post(f"{url}/chat/completions", headers=AUTH, json=_request("Go on."), timeout=60)
        assert response.status_code == 200
        assert response.json()["choices"][0]["message"]["content"] == long_text
        assert "1,000,001 characters" in response.headers["x-hmem-reply"]
        assert roles(memory) == [("user", "Go on.")]


def test_a_stream_without_content_deltas_ends_with_done_and_says_it_stored_nothing(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.empty()
        response, events = _events(url, _request("Say nothing.", stream=True))
        assert response.status_code == 200
        data = _data(events)
        assert data[-1] == "[DONE]"
        assert not any(isinstance(d, dict) and "error" in d for d in data)
        comments = [e for e in events if e.startswith(":")]
        assert len(comments) == 1 and comments[0].startswith(": hmem: reply not stored: ")
        assert events.index(comments[0]) == len(events) - 2  # just before [DONE]
        assert roles(memory) == [("user", "Say nothing.")]


def test_a_stream_over_hmems_message_limit_is_relayed_whole_and_not_stored(tmp_path: Path) -> None:
    long_text = "y" * (MAX_CONTENT_CHARS + 1)
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.reply(long_text)
        _, events = _events(url, _request("Go on.", stream=True))
        data = _data(events)
        assert data[-1] == "[DONE]"
        text = "".join(d["choices"][0]["delta"].get("content") or "" for d in data if isinstance(d, dict) and d["choices"])
        assert text == long_text
        assert any(e.startswith(": hmem: reply not stored: ") and "characters" in e for e in events)
        assert roles(memory) == [("user", "Go on.")]


def test_a_streamed_refusal_reaches_the_openai_client_and_is_stored(tmp_path: Path) -> None:
    with proxy(tmp_path) as (url, memory, upstream):
        upstream.refuse("I won't do that.")
        stream = client(url, max_retries=0).chat.completions.create(
            model=MODEL, stream=True, messages=[{"role": "user", "content": "Write malware."}])
        refusal = "".join(c.choices[0].delta.refusal or "" for c in stream if c.choices)
        assert refusal == "I won't do that."
        assert roles(memory) == [("user", "Write malware."), ("assistant", "I won't do that.")]
        assert dict(history(memory)[1].metadata) == {"refusal": True}


# -- defect 4: one deadline for the whole upstream call ---------------------------------------


def test_an_upstream_that_trickles_its_answer_past_the_timeout_is_504(tmp_path: Path) -> None:
    """Each piece comes 0.25 s after the last (well inside a per-read timeout of 2 s), the
    whole answer takes 10 s: the 2 s timeout is a deadline for the call, so 504."""
    with proxy(tmp_path, timeout_s=2.0) as (url, memory, upstream):
        upstream.trickle("a slow but steady answer", every_s=0.25, pieces=40)
        response = httpx.post(f"{url}/chat/completions", headers=AUTH, json=_request("Slowly?"), timeout=60)
        assert response.status_code == 504
        error = response.json()["error"]
        assert error["type"] == "upstream_error" and "2 s" in error["message"]
        assert roles(memory) == [("user", "Slowly?")]


def test_a_stream_that_trickles_past_the_timeout_ends_with_an_error_event_then_done(tmp_path: Path) -> None:
    with proxy(tmp_path, timeout_s=2.0) as (url, memory, upstream):
        upstream.trickle("one two three four five six seven eight nine ten", every_s=0.25, pieces=40)
        response, events = _events(url, _request("Count slowly.", stream=True))
        assert response.status_code == 200  # the stream had started: the error comes in it
        data = _data(events)
        assert data[-1] == "[DONE]"
        error = data[-2]["error"]
        assert error["type"] == "upstream_error" and "2 s" in error["message"]
        assert roles(memory) == [("user", "Count slowly.")]


def test_the_openai_client_raises_on_a_stream_stopped_by_the_deadline(tmp_path: Path) -> None:
    with proxy(tmp_path, timeout_s=2.0) as (url, memory, upstream):
        upstream.trickle("one two three four five six seven eight nine ten", every_s=0.25, pieces=40)
        stream = client(url, max_retries=0).chat.completions.create(
            model=MODEL, stream=True, messages=[{"role": "user", "content": "Count slowly."}])
        try:
            for _ in stream:
                pass
        except openai.APIError as exc:
            assert "2 s" in str(exc)
        else:
            raise AssertionError("the stream stopped by the deadline ended without an error")
        assert roles(memory) == [("user", "Count slowly.")]
