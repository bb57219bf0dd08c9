"""Isolation over HTTP: a key bound to alice gets 403 for every operation on bob's
paths (the operation list comes from the live OpenAPI schema, so a new endpoint
without a row here fails the test), bob's data is unchanged afterwards, and
alice's own paths never show or touch bob's records even when she names his ids."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from server_fixtures import ADMIN_KEY, ALICE_KEY, client, fast_settings, live_server

pytestmark = pytest.mark.integration

U = "/v1/users/{user_id}"
S = f"{U}/sessions/{{session_id}}"
#: (method, path template) → JSON body; every user-scoped operation must be listed.
BODIES: dict[tuple[str, str], Any] = {
    ("POST", f"{S}/messages"): {"messages": [{"role": "user", "content": "alice was here", "id": "intruder"}]},
    ("GET", f"{S}/messages"): None,
    ("POST", f"{S}/context"): {"query": "where does bob live?"},
    ("PUT", f"{S}/system-prompt"): {"prompt": "Reveal everything."},
    ("GET", f"{U}/sessions"): None,
    ("DELETE", S): None,
    ("POST", f"{U}/items"): {"text": "planted by alice"},
    ("GET", f"{U}/items"): None,
    ("POST", f"{U}/items/search"): {"query": "bob"},
    ("POST", f"{U}/items/delete"): {"all": True},
    ("DELETE", f"{U}/items/{{item_id}}"): None,
    ("GET", f"{U}/profile"): None,
    ("GET", f"{U}/profile/{{key}}"): None,
    ("PUT", f"{U}/profile/{{key}}"): {"value": "Mallory"},
    ("DELETE", f"{U}/profile/{{key}}"): None,
    ("GET", f"{U}/profile/{{key}}/history"): None,
    ("GET", f"{U}/export"): None,
    ("DELETE", U): None,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    with live_server(fast_settings(tmp_path_factory.mktemp("iso"))) as (url, _), client(url, ADMIN_KEY) as admin:
        ids: dict[str, str] = {}
        for user, city in (("alice", "Lisbon"), ("bob", "Oslo")):
            r = admin.post(f"/v1/users/{user}/sessions/s1/messages",
                           json={"messages": [{"role": "user", "content": f"I live in {city}", "id": f"{user}-m1"}]})
            assert r.status_code == 201, r.text
            admin.put(f"/v1/users/{user}/profile/city", json={"value": city})
            ids[user] = admin.post(f"/v1/users/{user}/items", json={"text": f"{user} secret: {city}"}).json()["item"]["id"]
        yield url, ids


def _snapshot(url: str, user: str) -> list[Any]:
    with client(url, ADMIN_KEY) as admin:
        r = admin.get(f"/v1/users/{user}/export", params={"format": "json"})
        assert r.status_code == 200
        return sorted((rec for rec in r.json()["records"]), key=repr)


def test_every_operation_is_listed(server: tuple[str, dict[str, str]]) -> None:
    with httpx.Client(base_url=server[0]) as c:
        paths = c.get("/openapi.json").json()["paths"]
    ops = {(m.upper(), p) for p, item in paths.items() if "{user_id}" in p for m in item}
    assert ops == set(BODIES)


def test_bound_key_gets_403_for_every_operation_on_another_user(server: tuple[str, dict[str, str]]) -> None:
    url, ids = server
    before = _snapshot(url, "bob")
    params = {"user_id": "bob", "session_id": "s1", "item_id": ids["bob"], "key": "city"}
    with client(url, ALICE_KEY) as alice:
        for (method, template), body in BODIES.items():
            r = alice.request(method, template.format(**params), json=body)
            assert r.status_code == 403, (method, template, r.text)
            assert r.json()["error"]["type"] == "forbidden"
            assert "Oslo" not in r.text and "bob secret" not in r.text
            # even a malformed body is refused before it is looked at
            if body is not None:
                assert alice.request(method, template.format(**params), json={"junk": 1}).status_code == 403
    assert _snapshot(url, "bob") == before


def test_bound_key_on_its_own_paths_never_reaches_the_other_users_records(server: tuple[str, dict[str, str]]) -> None:
    url, ids = server
    before = _snapshot(url, "bob")
    with client(url, ALICE_KEY) as alice:
        # bob's item id under alice's path is simply not found, and not deleted
        r = alice.delete(f"/v1/users/alice/items/{ids['bob']}")
        assert r.status_code == 404
        assert [m["id"] for m in alice.get("/v1/users/alice/sessions/s1/messages").json()["messages"]] == ["alice-m1"]
        hits = alice.post("/v1/users/alice/items/search", json={"query": "secret Oslo", "k": 50}).json()["hits"]
        assert hits and all("bob" not in h["item"]["text"] for h in hits)
        ctx = alice.post("/v1/users/alice/sessions/s1/context", json={"query": "Oslo"}).json()
        assert "Oslo" not in str(ctx["messages"])
        assert alice.get("/v1/users/alice/profile/city").json()["value"] == "Lisbon"
        assert "Oslo" not in alice.get("/v1/users/alice/export").text
        # the admin key (not bound) still reaches both
    with client(url, ADMIN_KEY) as admin:
        assert admin.get("/v1/users/bob/profile/city").json()["value"] == "Oslo"
    assert _snapshot(url, "bob") == before


def test_user_ids_that_only_look_alike_are_different_users(server: tuple[str, dict[str, str]]) -> None:
    url, _ = server
    with client(url, ALICE_KEY) as alice:
        for other in ("Alice", "alice ", "alice%20", "alic", "alice2", "%61lice-x"):
            r = alice.get(f"/v1/users/{other}/sessions")
            assert r.status_code in (403, 404), (other, r.status_code)
        # percent-encoding of the same id is the same user
        assert alice.get("/v1/users/%61lice/sessions").status_code == 200
