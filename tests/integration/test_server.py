"""The HTTP API against a real uvicorn on a loopback port (httpx as the client).

Covers every endpoint's happy path, the error mapping (422 with the field, 404,
409 with budget numbers, 413, 503, generic 500) and "bad input changes nothing".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_fixtures import ADMIN_KEY, client, embedder, fast_settings, live_server, new_user

from hmem.backends.redis.client import connect_redis
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.build import build_parts
from hmem.memory import Memory
from hmem.server import ServerOptions

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    settings = fast_settings(tmp_path_factory.mktemp("server"))
    with live_server(settings, options=ServerOptions(max_body_bytes=64 * 1024)) as pair:
        yield pair


@pytest.fixture
def http(server: tuple[str, Memory]) -> Iterator[httpx.Client]:
    with client(server[0]) as c:
        yield c


def _append(http: httpx.Client, user: str, session: str, *messages: dict[str, Any]) -> httpx.Response:
    return http.post(f"/v1/users/{user}/sessions/{session}/messages", json={"messages": list(messages)})


def _history(http: httpx.Client, user: str, session: str) -> list[dict[str, Any]]:
    r = http.get(f"/v1/users/{user}/sessions/{session}/messages")
    assert r.status_code == 200, r.text
    return list(r.json()["messages"])


def _error(r: httpx.Response, status: int, type_: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"type", "message", "field", "details"}
    assert body["error"]["type"] == type_
    return dict(body["error"])


# -- sessions -----------------------------------------------------------------------


def test_append_then_history_keeps_order_ids_and_tool_calls(http: httpx.Client) -> None:
    user = new_user()
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Berlin"}'}}
    r = _append(http, user, "s1",
                {"role": "user", "content": "Wie wird das Wetter in Berlin?", "id": "m1", "metadata": {"lang": "de"}},
                {"role": "assistant", "content": None, "tool_calls": [call], "id": "m2"},
                {"role": "tool", "content": '{"temp": 21}', "tool_call_id": "call_1", "id": "m3"})
    assert r.status_code == 201, r.text
    assert r.json()["message_ids"] == ["m1", "m2", "m3"]
    assert _append(http, user, "s1", {"role": "assistant", "content": "21 °C, 晴天", "id": "m4"}).status_code == 201
    history = _history(http, user, "s1")
    assert [m["id"] for m in history] == ["m1", "m2", "m3", "m4"]
    assert history[0]["metadata"] == {"lang": "de"}
    assert history[1]["tool_calls"] == [call] and history[1]["content"] is None
    assert history[2]["tool_call_id"] == "call_1"
    assert history[3]["content"] == "21 °C, 晴天"
    last = http.get(f"/v1/users/{user}/sessions/s1/messages", params={"last_n": 2}).json()["messages"]
    assert [m["id"] for m in last] == ["m3", "m4"]


def test_list_and_delete_sessions(http: httpx.Client) -> None:
    user = new_user()
    for session in ("a", "b"):
        assert _append(http, user, session, {"role": "user", "content": f"hello {session}"}).status_code == 201
    listed = http.get(f"/v1/users/{user}/sessions").json()["sessions"]
    assert sorted(s["session_id"] for s in listed) == ["a", "b"]
    assert all(s["message_count"] == 1 for s in listed)
    assert http.delete(f"/v1/users/{user}/sessions/a").json() == {"deleted": 1}
    _error(http.delete(f"/v1/users/{user}/sessions/a"), 404, "not_found")
    assert [s["session_id"] for s in http.get(f"/v1/users/{user}/sessions").json()["sessions"]] == ["b"]
    assert _history(http, user, "a") == []


def test_context_uses_stored_system_prompt_and_stays_within_budget(http: httpx.Client) -> None:
    user = new_user()
    _append(http, user, "s", {"role": "user", "content": "I live in Lisbon and love grilled sardines."},
            {"role": "assistant", "content": "Noted!"}, {"role": "user", "content": "What should I cook tonight?"})
    r = http.put(f"/v1/users/{user}/sessions/s/system-prompt", json={"prompt": "You are a chef."})
    assert r.status_code == 204
    ctx = http.post(f"/v1/users/{user}/sessions/s/context", json={"model": "gpt-4o-mini", "budget": 300}).json()
    assert ctx["messages"][0] == {"role": "system", "content": ctx["messages"][0]["content"]}
    assert ctx["messages"][0]["content"].startswith("You are a chef.")
    assert ctx["messages"][-1] == {"role": "user", "content": "What should I cook tonight?"}
    assert ctx["tokens"] == ctx["report"]["total"] <= 300
    # the stored prompt is not part of the history a client reads back as a turn
    assert http.put(f"/v1/users/{user}/sessions/s/system-prompt", json={"prompt": None}).status_code == 204
    ctx = http.post(f"/v1/users/{user}/sessions/s/context", json={"system_prompt": "Be brief."}).json()
    assert ctx["messages"][0]["content"].startswith("Be brief.")
    assert "You are a chef." not in json.dumps(ctx["messages"])


def test_budget_error_is_409_with_the_numbers(http: httpx.Client) -> None:
    user = new_user()
    _append(http, user, "s", {"role": "user", "content": "a fairly long question " * 20})
    err = _error(http.post(f"/v1/users/{user}/sessions/s/context", json={"budget": 10}), 409, "budget_exceeded")
    assert err["details"]["budget"] == 10 and err["details"]["required"] > 10
    ok = http.post(f"/v1/users/{user}/sessions/s/context", json={"budget": 40, "truncate_current_turn": True})
    assert ok.status_code == 200 and ok.json()["tokens"] <= 40


# -- bad input: 422 naming the field, nothing changed ----------------------------------------

BAD_MESSAGES: list[tuple[Any, str]] = [
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x", "colour": "red"}]}, "messages[0].colour"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
    ({"messages": [{"role": "user", "content": None}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": "x", "id": " padded "}]}, "messages[0].id"),
    ({"messages": [{"role": "user", "content": "x", "id": "d"}, {"role": "user", "content": "y", "id": "d"}]},
     "messages"),
    ({"messages": [{"role": "user", "content": "x", "metadata": {"n": {"nested": 1}}}]}, "messages[0].metadata.n"),
    ({"messages": []}, "messages"),
    ({"messages": "hello"}, "messages"),
    ({}, "messages"),
]


@pytest.mark.parametrize(("body", "field"), BAD_MESSAGES, ids=[f for _, f in BAD_MESSAGES])
def test_bad_messages_get_422_naming_the_field_and_change_nothing(
    http: httpx.Client, body: Any, field: str
) -> None:
    user = new_user()
    assert _append(http, user, "s", {"role": "user", "content": "before", "id": "keep"}).status_code == 201
    err = _error(http.post(f"/v1/users/{user}/sessions/s/messages", json=body), 422, "invalid_input")
    assert err["field"] is not None and err["field"].startswith(field)
    assert [m["id"] for m in _history(http, user, "s")] == ["keep"]


def test_invalid_json_and_nan_are_422_and_change_nothing(http: httpx.Client) -> None:
    user = new_user()
    url = f"/v1/users/{user}/items"
    for raw in (b"{not json", b'{"text": "x", "importance": NaN}', b'{"text": "x", "importance": Infinity}'):
        _error(http.post(url, content=raw, headers={"Content-Type": "application/json"}), 422, "invalid_input")
    for body, field in (({"text": ""}, "text"), ({"text": "x", "importance": 2}, "importance"),
                        ({"text": "x", "kind": ""}, "kind")):
        assert _error(http.post(url, json=body), 422, "invalid_input")["field"].endswith(field)
    assert http.get(url).json()["items"] == []


def test_retried_append_is_409_duplicate_and_not_stored_twice(http: httpx.Client) -> None:
    user = new_user()
    msg = {"role": "user", "content": "once", "id": "m1"}
    assert _append(http, user, "s", msg).status_code == 201
    _error(_append(http, user, "s", msg), 409, "duplicate_id")
    assert [m["id"] for m in _history(http, user, "s")] == ["m1"]


def test_body_over_the_limit_is_413_declared_or_streamed(http: httpx.Client) -> None:
    user = new_user()
    url = f"/v1/users/{user}/sessions/s/messages"
    big = json.dumps({"messages": [{"role": "user", "content": "x" * 70_000}]}).encode()
    err = _error(http.post(url, content=big, headers={"Content-Type": "application/json"}), 413, "payload_too_large")
    assert err["details"]["max_bytes"] == 64 * 1024

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit must hold while streaming
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    _error(http.post(url, content=chunks(), headers={"Content-Type": "application/json"}), 413, "payload_too_large")
    assert _history(http, user, "s") == []
    small = {"messages": [{"role": "user", "content": "x" * 1000}]}
    assert http.post(url, json=small).status_code == 201


# -- long-term items and profile ---------------------------------------------------------


def test_remember_search_and_delete_items(http: httpx.Client) -> None:
    user = new_user()
    base = f"/v1/users/{user}/items"
    first = http.post(base, json={"text": "Allergic to peanuts", "kind": "fact", "importance": 0.9})
    assert first.status_code == 201 and first.json()["status"] == "stored"
    assert http.post(base, json={"text": "Allergic to peanuts"}).json()["status"] == "skipped"
    http.post(base, json={"text": "Plays the cello on Sundays", "kind": "preference", "metadata": {"src": "t"}})
    hits = http.post(f"{base}/search", json={"query": "food allergy peanuts", "k": 2}).json()["hits"]
    assert hits[0]["item"]["text"] == "Allergic to peanuts"
    assert hits[0]["score"] >= hits[-1]["score"]
    only_prefs = http.post(f"{base}/search", json={"query": "peanuts", "kinds": ["preference"]}).json()["hits"]
    assert [h["item"]["kind"] for h in only_prefs] == ["preference"]
    item_id = first.json()["item"]["id"]
    assert http.delete(f"{base}/{item_id}").json() == {"deleted": 1}
    _error(http.delete(f"{base}/{item_id}"), 404, "not_found")
    assert http.post(f"{base}/delete", json={"kinds": ["preference"]}).json() == {"deleted": 1}
    assert http.get(base).json()["items"] == []
    _error(http.post(f"{base}/delete", json={}), 422, "invalid_input")


def test_profile_set_get_history_delete(http: httpx.Client) -> None:
    user = new_user()
    base = f"/v1/users/{user}/profile"
    assert http.put(f"{base}/City", json={"value": "Berlin"}).json()["key"] == "city"
    assert http.put(f"{base}/city", json={"value": "Lisbon", "confidence": 0.8}).status_code == 200
    assert http.put(f"{base}/languages", json={"value": ["de", "pt"]}).json()["value"] == ["de", "pt"]
    assert http.get(f"{base}/city").json()["value"] == "Lisbon"
    assert {e["key"] for e in http.get(base).json()["entries"]} == {"city", "languages"}
    assert http.delete(f"{base}/city").json() == {"deleted": 1}
    _error(http.get(f"{base}/city"), 404, "not_found")
    _error(http.delete(f"{base}/city"), 404, "not_found")
    history = http.get(f"{base}/city/history").json()["entries"]
    assert [e["value"] for e in history] == ["Berlin", "Lisbon", None]
    _error(http.get(f"{base}/never/history"), 404, "not_found")
    _error(http.put(f"{base}/age", json={"value": {"years": 3}}), 422, "invalid_input")


def test_export_jsonl_and_json_agree_and_import_round_trips(http: httpx.Client, tmp_path: Path) -> None:
    user = new_user()
    _append(http, user, "s", {"role": "user", "content": "I live in Porto", "id": "m1"})
    http.put(f"/v1/users/{user}/profile/pet", json={"value": "cat"})
    jsonl = http.get(f"/v1/users/{user}/export")
    assert jsonl.status_code == 200 and jsonl.headers["content-type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in jsonl.text.splitlines()]
    as_json = http.get(f"/v1/users/{user}/export", params={"format": "json"}).json()["records"]
    assert records == as_json
    assert records[0]["user_id"] == user
    file = tmp_path / "export.jsonl"
    file.write_text(jsonl.text, encoding="utf-8")
    with Memory.from_settings(fast_settings(tmp_path / "other"), embedder=embedder()) as other:
        other.import_user(file)
        assert [m.id for m in other.history(user, "s")] == ["m1"]
        assert other.profile.get(user, "pet").value == "cat"  # type: ignore[union-attr]


def test_forget_user_erases_every_tier(http: httpx.Client) -> None:
    user = new_user()
    _append(http, user, "s", {"role": "user", "content": "I live in Oslo"})
    http.post(f"/v1/users/{user}/items", json={"text": "likes skiing"})
    counts = http.delete(f"/v1/users/{user}").json()
    assert counts["sessions"] == 1 and counts["items"] >= 1
    assert http.get(f"/v1/users/{user}/sessions").json()["sessions"] == []
    assert http.get(f"/v1/users/{user}/items").json()["items"] == []
    assert http.get(f"/v1/users/{user}/profile").json()["entries"] == []


# -- auth, health, schema -------------------------------------------------------------------


def test_missing_or_wrong_key_is_401_with_challenge(server: tuple[str, Memory]) -> None:
    for key in (None, "wrong", ADMIN_KEY + "x"):
        with client(server[0], key) as c:
            r = c.get("/v1/users/alice/sessions")
            _error(r, 401, "unauthorized")
            assert r.headers["www-authenticate"] == "Bearer"
    with httpx.Client(base_url=server[0]) as c:
        r = c.get("/v1/users/alice/sessions", headers={"Authorization": f"Basic {ADMIN_KEY}"})
        assert r.status_code == 401


def test_health_readiness_and_openapi_need_no_key(server: tuple[str, Memory]) -> None:
    with httpx.Client(base_url=server[0]) as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["ready"] is True
        assert set(ready.json()["backends"]) == {"sessions", "summaries", "profile", "items", "vectors", "lexical", "jobs"}
        schema = c.get("/openapi.json").json()
    paths = schema["paths"]
    assert "/v1/users/{user_id}/sessions/{session_id}/context" in paths
    assert "bearer" in json.dumps(schema["components"]["securitySchemes"]).lower()
    append = paths["/v1/users/{user_id}/sessions/{session_id}/messages"]["post"]
    assert {"201", "401", "403", "409", "413", "422", "503"} <= set(append["responses"])
    assert "examples" in json.dumps(schema["components"]["schemas"]["AppendRequest"])


# -- server-side failures: 503 and a generic 500 ---------------------------------------------


def test_unreachable_redis_is_503_and_readyz_says_which(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path)
    parts = build_parts(settings, embedder=embedder())
    # a real client pointed at a port where nothing listens: every call fails like a Redis outage
    dead = connect_redis("redis://127.0.0.1:1/0", socket_timeout=0.5, socket_connect_timeout=0.5, retries=0,
                         check=False)
    broken = Memory(replace(parts, sessions=RedisSessionStore(dead, prefix="hmemtest-dead")))
    with live_server(settings, memory=broken) as (url, _), client(url) as http:
        err = _error(_append(http, "alice", "s", {"role": "user", "content": "hi"}), 503, "backend_unavailable")
        assert "unreachable" in err["message"]
        assert "password" not in err["message"].lower() or ":****@" in err["message"]
        ready = http.get("/readyz")
        assert ready.status_code == 503
        backends = ready.json()["backends"]
        assert backends["sessions"]["ok"] is False and backends["sessions"]["backend"] == "RedisSessionStore"
        assert backends["profile"]["ok"] is True


class _ExplodingMemory(Memory):
    def history(self, user_id: str, session_id: str, last_n: int | None = None) -> list[Any]:
        raise RuntimeError("secret-internal-detail in /srv/hmem/db.py line 42")


def test_unexpected_error_is_generic_500_and_the_trace_goes_to_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = fast_settings(tmp_path)
    mem = _ExplodingMemory(build_parts(settings, embedder=embedder()))
    caplog.set_level(logging.ERROR, logger="hmem.server")
    with live_server(settings, memory=mem) as (url, _), client(url) as http:
        err = _error(http.get("/v1/users/alice/sessions/s/messages"), 500, "internal_error")
    assert "secret" not in json.dumps(err) and "Traceback" not in json.dumps(err)
    logged = [r for r in caplog.records if r.name == "hmem.server" and r.exc_info]
    assert logged and "secret-internal-detail" in str(logged[0].exc_info[1])  # type: ignore[index]


# -- the embedded default: SQLite + Chroma PersistentClient ---------------------------------


@pytest.mark.slow
def test_embedded_chroma_default_serves_and_persists_across_restarts(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path, vectors="chroma")
    user = new_user()
    with live_server(settings) as (url, _), client(url) as http:
        assert http.get("/readyz").json()["backends"]["vectors"]["backend"] == "ChromaVectorIndex"
        for text in ("Allergic to peanuts", "Works as a nurse in Porto", "Has a dog called Rex"):
            assert http.post(f"/v1/users/{user}/items", json={"text": text}).status_code == 201
    with live_server(settings) as (url, _), client(url) as http:  # a new process-equivalent on the same folder
        hits = http.post(f"/v1/users/{user}/items/search", json={"query": "what pet does the user have?", "k": 1})
        top = hits.json()["hits"][0]
        assert top["item"]["text"] == "Has a dog called Rex"
        assert top["dense_rank"] == 1
