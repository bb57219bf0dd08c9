"""Edge cases of the HTTP API's requests, each against a real uvicorn (httpx as the client):

* a message of exactly the 1,000,000-character limit (and one less) is stored,
  indexed and recallable, and later appends to its session work;
* a bad key gets 401/403 before the body is read (a malformed body is never parsed);
* no trailing-slash redirect echoes the client's ``Host`` header;
* error fields name the request's own field (``text``, ``budget``,
  ``recency_half_life_s``), never an internal name;
* a ``created_at`` far in the future is refused (messages and items), changing nothing.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from server_fixtures import ADMIN_KEY, ALICE_KEY, client, fast_settings, live_server, new_user

from hmem.memory import Memory
from hmem.types import MAX_CONTENT_CHARS

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    with live_server(fast_settings(tmp_path_factory.mktemp("server-defects"))) as pair:  # default 4 MiB bodies
        yield pair


@pytest.fixture
def http(server: tuple[str, Memory]) -> Iterator[httpx.Client]:
    with client(server[0]) as c:
        yield c


def _error(r: httpx.Response, status: int, type_: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["type"] == type_
    return dict(body["error"])


def _append(http: httpx.Client, user: str, session: str, *messages: dict[str, Any]) -> httpx.Response:
    return http.post(f"/v1/users/{user}/sessions/{session}/messages", json={"messages": list(messages)})


def _state(http: httpx.Client, user: str) -> tuple[Any, ...]:
    """Everything of ``user`` a request could have changed: history of s1, items, sessions."""
    history = http.get(f"/v1/users/{user}/sessions/s1/messages").json()
    items = http.get(f"/v1/users/{user}/items").json()
    sessions = http.get(f"/v1/users/{user}/sessions").json()
    return history, items, sessions


# -- D1: a message at the size limit -------------------------------------------------------------


@pytest.mark.parametrize("size", [MAX_CONTENT_CHARS, MAX_CONTENT_CHARS - 1])
def test_a_max_size_message_is_stored_indexed_and_later_appends_work(http: httpx.Client, size: int) -> None:
    user = new_user()
    assert _append(http, user, "s1", {"role": "user", "content": "Tell me the quokka story", "id": "m0"}).status_code == 201
    text = ("zanzibarquokka " + "lorem ipsum dolor sit amet " * 40_000)[:size]
    r = _append(http, user, "s1", {"role": "assistant", "content": text, "id": "m1"})
    assert r.status_code == 201, r.text[:500]
    history = http.get(f"/v1/users/{user}/sessions/s1/messages").json()["messages"]
    assert [m["content"] for m in history if m["id"] == "m1"] == [text]
    hits = http.post(f"/v1/users/{user}/items/search", json={"query": "zanzibarquokka", "k": 3}).json()["hits"]
    # Indexed whole: BM25 finds it first (with two items, min-max fusion at 0.5 : 0.5 may
    # tie it with the short "quokka" turn, which the embedding ranks first).
    found = [h for h in hits if h["item"]["source_message_id"] == "m1"]
    assert found and found[0]["lexical_rank"] == 1 and found[0]["item"]["text"] == text
    for i in (2, 3):
        r = _append(http, user, "s1", {"role": "user", "content": f"what happened next, part {i}?", "id": f"m{i}"})
        assert r.status_code == 201, r.text[:500]
    hits = http.post(f"/v1/users/{user}/items/search", json={"query": "happened next part 3", "k": 1}).json()["hits"]
    assert hits[0]["item"]["source_message_id"] == "m3"


# -- D4: authentication before the body is read ----------------------------------------------------

MALFORMED = [b'{"messages": [', b"\xff\xfe not json", b'{"messages": [{"role": "user", "content": NaN}]}']


@pytest.mark.parametrize("body", MALFORMED, ids=["truncated", "not-utf8", "nan"])
def test_bad_key_with_a_malformed_body_is_401_or_403_never_422(server: tuple[str, Memory], body: bytes) -> None:
    url = server[0]
    user = new_user()
    path = f"/v1/users/{user}/sessions/s1/messages"
    headers = {"Content-Type": "application/json"}
    with httpx.Client(base_url=url, timeout=30) as anon:
        err = _error(anon.post(path, content=body, headers=headers), 401, "unauthorized")
        assert "missing API key" in err["message"]
        r = anon.post(path, content=body, headers={**headers, "Authorization": "Bearer wrong-key"})
        _error(r, 401, "unauthorized")
        assert r.headers["WWW-Authenticate"] == "Bearer"
    with client(url, ALICE_KEY) as alice:  # bound to alice, writing to another user
        _error(alice.post(path, content=body, headers=headers), 403, "forbidden")
    with client(url) as admin:
        assert _state(admin, user)[2] == {"sessions": []}


def test_a_rejected_body_is_never_read_and_the_connection_stays_usable(server: tuple[str, Memory]) -> None:
    url = server[0]
    big = b'{"messages": [' + b" " * (8 * 1024 * 1024)  # twice the body limit: 401 first, not 413
    with httpx.Client(base_url=url, timeout=30) as anon:
        r = anon.post(f"/v1/users/{new_user()}/sessions/s/messages", content=big,
                      headers={"Content-Type": "application/json", "Authorization": "Bearer nope"})
        _error(r, 401, "unauthorized")
        assert anon.get("/healthz").status_code == 200  # the same client goes on working


def test_the_key_is_checked_on_the_decoded_path(server: tuple[str, Memory]) -> None:
    # "%62ob" is "bob": the gate must see the user the router will serve.
    with client(server[0], ALICE_KEY) as alice:
        _error(alice.post("/v1/users/%62ob/items", content=b"{", headers={"Content-Type": "application/json"}),
               403, "forbidden")
        assert alice.get("/v1/users/%61lice/sessions").status_code == 200


# -- D5: no redirect built from the client's Host header --------------------------------------------


def _raw_get(base_url: str, path: str, host: str, key: str | None) -> bytes:
    """One HTTP/1.1 request with a forged ``Host`` (httpx would send the real one)."""
    parts = urlsplit(base_url)
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n".encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("path", ["/healthz/", "/v1/users/alice/sessions/", "/v1/users/alice/items/"])
def test_a_trailing_slash_is_404_and_never_redirects_to_the_client_host(
    server: tuple[str, Memory], path: str
) -> None:
    raw = _raw_get(server[0], path, "evil.example", ADMIN_KEY)
    head = raw.split(b"\r\n\r\n", 1)[0].lower()
    assert head.startswith(b"http/1.1 404"), head
    assert b"location:" not in head and b"evil.example" not in raw


# -- D7: errors name the request's own field ---------------------------------------------------------


def test_errors_name_the_request_field_and_change_nothing(http: httpx.Client) -> None:
    user = new_user()
    assert _append(http, user, "s1", {"role": "user", "content": "I like green tea", "id": "m0"}).status_code == 201
    before = _state(http, user)
    # (path, body, the field the client sent)
    cases: list[tuple[str, dict[str, Any], str]] = [
        (f"/v1/users/{user}/items", {"text": "   "}, "text"),
        (f"/v1/users/{user}/items", {"text": "x", "metadata": {"k": "\ud800"}}, "metadata"),
        (f"/v1/users/{user}/sessions/s1/context", {"budget": 10**9}, "budget"),  # past the model's window
        (f"/v1/users/{user}/items/search", {"query": "tea", "recency_half_life_s": 1e-7}, "recency_half_life_s"),
        (f"/v1/users/{user}/items/search", {"query": "tea", "kinds": ["fact", " x"]}, "kinds[1]"),
        (f"/v1/users/{user}/items/delete", {"before": "last week"}, "before"),  # not pydantic's "before.datetime"
        (f"/v1/users/{user}/items/delete", {"ids": ["a", ""]}, "ids[1]"),
    ]
    for path, body, field in cases:
        # ASCII-escaped JSON, so a lone surrogate travels as "\\ud800" (valid JSON, invalid text)
        r = http.post(path, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        err = _error(r, 422, "invalid_input")
        assert err["field"] == field, err
        assert "entries" not in err["message"] and "explicit must" not in err["message"], err
        assert "recency_half_life " not in err["message"] and "datetime" not in err["field"], err
        assert _state(http, user) == before


# -- created_at far in the future ------------------------------------------------------------------


def test_a_future_created_at_is_refused_for_messages_and_items(http: httpx.Client) -> None:
    user = new_user()
    assert _append(http, user, "s1", {"role": "user", "content": "I like green tea", "id": "m0"}).status_code == 201
    before = _state(http, user)
    now = datetime.now(UTC)
    # Tried: 6 minutes and 30 years ahead, as ISO text and as epoch seconds.
    for when in ((now + timedelta(minutes=6)).isoformat(), (now + timedelta(days=11_000)).timestamp()):
        err = _error(_append(http, user, "s1", {"role": "user", "content": "ok", "id": "m1"},
                             {"role": "user", "content": "hi", "id": "m2", "created_at": when}), 422, "invalid_input")
        assert err["field"] == "messages[1].created_at" and "future" in err["message"]
        err = _error(http.post(f"/v1/users/{user}/items", json={"text": "I live on Mars", "created_at": when}),
                     422, "invalid_input")
        assert err["field"] == "created_at" and "future" in err["message"]
        assert _state(http, user) == before
    ok = (now + timedelta(minutes=1)).isoformat()  # a client clock a little ahead is fine
    assert _append(http, user, "s1", {"role": "user", "content": "hi", "id": "m3", "created_at": ok}).status_code == 201
    assert http.post(f"/v1/users/{user}/items", json={"text": "I live in Berlin", "created_at": ok}).status_code == 201
