"""One isolation and key-rule suite, run against every surface of hmem (issue #14):
the REST API (``/v1/users/{user}/items``), the OpenAI-compatible proxy
(``/v1/chat/completions``, user in the body's ``user`` field, upstream =
:class:`ScriptedLLMServer`) and MCP over streamable HTTP (the SDK's client, user in
the ``X-Hmem-User`` header). All three run on real uvicorn servers over ONE Memory, so
data written through one surface is also looked for through the other two.

Each surface is a small adapter (:class:`Surface`) with ``write`` and ``read``; the
same test bodies run on all three. The rules, as the REST API defines them:

- no key, or a key not in ``HMEM_API_KEYS`` → refused as unauthenticated (401);
- a key bound to alice (``KEY:alice``) → alice works; any other user, also one that only
  looks like alice, is forbidden (403); a refusal changes nothing;
- the admin key (bound to no user) → any user;
- what alice wrote is never seen by bob, through any surface.
"""

from __future__ import annotations

import itertools
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import httpx
import pytest

pytest.importorskip("mcp")

from hmem.config import Settings
from hmem.mcp._gate import USER_HEADER
from hmem.mcp.server import build_server, http_app
from hmem.memory import Memory
from hmem.server import create_app
from hmem.server.auth import KeyRing
from hmem.server.live import serve_in_thread
from hmem.server.proxy import SESSION_HEADER, ProxyOptions
from hmem.testing import ScriptedLLMServer, ScriptedReply
from tests.integration.mcp_fixtures import mcp_http_client, structured
from tests.integration.server_fixtures import ADMIN_KEY, ALICE_KEY, BOB_KEY, embedder, fast_settings, new_user

pytestmark = pytest.mark.integration

UNKNOWN_KEY = "nope-" + secrets.token_hex(8)
MODEL = "gpt-4o-mini"
SESSION = "iso"


@dataclass(frozen=True)
class Outcome:
    """What a surface answered: ``ok``, ``unauthenticated``, ``forbidden``, or another
    word naming the failure; ``seen`` is everything of the user's memory the caller (or,
    for the proxy, the upstream model) got to see."""

    status: str
    seen: str = ""


class Surface(Protocol):
    name: str

    def write(self, user: str, text: str, key: str | None) -> Outcome:
        """Store ``text`` in ``user``'s memory with ``key``."""
        ...

    def read(self, user: str, query: str, key: str | None) -> Outcome:
        """Look for ``query`` in ``user``'s memory with ``key``."""
        ...


def _by_status(code: int, seen: str = "") -> Outcome:
    words = {200: "ok", 201: "ok", 401: "unauthenticated", 403: "forbidden"}
    return Outcome(words.get(code, f"http {code}"), seen if code < 300 else "")


def _auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key is not None else {}


class Rest:
    name = "rest"

    def __init__(self, url: str) -> None:
        self.url = url

    def write(self, user: str, text: str, key: str | None) -> Outcome:
        r = httpx.post(f"{self.url}/v1/users/{user}/items", json={"text": text}, headers=_auth(key), timeout=60)
        return _by_status(r.status_code, r.text)

    def read(self, user: str, query: str, key: str | None) -> Outcome:
        r = httpx.post(f"{self.url}/v1/users/{user}/items/search", json={"query": query, "k": 50},
                       headers=_auth(key), timeout=60)
        return _by_status(r.status_code, r.text)


class Proxy:
    """A write is a chat turn (stored in session ``SESSION``); a read is a chat turn too,
    and what it saw is the assembled context the proxy forwarded upstream."""

    name = "proxy"

    def __init__(self, url: str, upstream: ScriptedLLMServer) -> None:
        self.url = url
        self.upstream = upstream

    def _chat(self, user: str, text: str, key: str | None) -> Outcome:
        before = len(self.upstream.completion_requests)
        r = httpx.post(f"{self.url}/v1/chat/completions", headers={**_auth(key), SESSION_HEADER: SESSION},
                       json={"model": MODEL, "user": user, "messages": [{"role": "user", "content": text}]},
                       timeout=60)
        sent = self.upstream.completion_requests[before:]
        if r.status_code != 200:
            # A refused request must not reach the model either.
            return Outcome("refused but forwarded") if sent else _by_status(r.status_code)
        return _by_status(r.status_code, json.dumps(sent[-1].body["messages"]) + r.text)

    write = _chat
    read = _chat


class Mcp:
    """``remember`` / ``recall`` over streamable HTTP; an HTTP refusal's status is taken
    from the response the SDK's client received."""

    name = "mcp"

    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, user: str, key: str | None, tool: str, arguments: dict[str, Any]) -> Outcome:
        refused: list[int] = []

        async def note(response: Any) -> None:
            if response.status_code >= 400:
                refused.append(response.status_code)

        async def main() -> Outcome:
            async with mcp_http_client(self.url, key, headers={USER_HEADER: user},
                                       event_hooks={"response": [note]}) as client:
                return Outcome("ok", json.dumps(structured(await client.call_tool(tool, arguments))))

        try:
            return anyio.run(main)
        except Exception:  # the SDK wraps an HTTP refusal in task-group exception groups
            if refused:
                return _by_status(refused[0])
            raise

    def write(self, user: str, text: str, key: str | None) -> Outcome:
        return self._call(user, key, "remember", {"text": text})

    def read(self, user: str, query: str, key: str | None) -> Outcome:
        return self._call(user, key, "recall", {"query": query, "k": 50})


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Surface]]:
    """REST + proxy on one uvicorn, MCP on another, both over the same Memory."""
    settings: Settings = fast_settings(tmp_path_factory.mktemp("surfaces"))
    memory = Memory.from_settings(settings, embedder=embedder())
    try:
        with ScriptedLLMServer() as upstream:
            upstream.respond_with(lambda request: ScriptedReply("text", "noted"))
            rest_app = create_app(memory, settings, proxy=ProxyOptions(upstream=upstream.base_url))
            mcp_app = http_app(build_server(memory), KeyRing.parse(settings.api_keys))
            with serve_in_thread(rest_app) as rest_url, serve_in_thread(mcp_app) as mcp_url:
                yield {"rest": Rest(rest_url), "proxy": Proxy(rest_url, upstream), "mcp": Mcp(mcp_url + "/mcp")}
    finally:
        memory.close()


NAMES = ["rest", "proxy", "mcp"]


WORDS = ["apple", "river", "piano", "tiger", "glacier", "violin", "harbor", "lantern", "meadow", "rocket", "saddle",
         "thunder", "velvet", "walnut", "yacht", "zebra", "anchor", "bishop", "candle", "dolphin", "falcon", "garnet",
         "hammock", "igloo", "jasmine", "kettle", "lobster", "marble", "nectar", "orchid", "pepper", "quartz", "raven",
         "sapphire", "tulip", "umbrella", "vulture", "willow"]


#: Noun pairs some secret of this module already uses (see :func:`_secret`).
_USED_PAIRS: set[frozenset[str]] = set()


def _secret() -> str:
    """A fact no other write resembles: near-duplicate writes would merge into one item.
    No two secrets share more than one noun — with the same three nouns (in any order) two
    secrets embed above the store's near-duplicate cosine of 0.95 and the later one is merged
    into the earlier (two shared: 0.944). The read's query never contains it (the proxy
    forwards the query itself upstream)."""
    rng = secrets.SystemRandom()
    for _ in range(10_000):
        nouns = rng.sample(WORDS, 3)
        pairs = {frozenset(pair) for pair in itertools.combinations(nouns, 2)}
        if not pairs & _USED_PAIRS:
            _USED_PAIRS.update(pairs)
            return f"my locker code is {secrets.token_hex(6)}, kept near the {nouns[0]}, the {nouns[1]} and the {nouns[2]}"
    raise AssertionError("every noun pair of WORDS is taken: add words")


QUERY = "what is my locker code?"


def _query_for(secret: str) -> str:
    """A question that finds ``secret`` first among the many locker codes a user has by
    now (the module shares one Memory), without containing its code."""
    return f"which locker code is kept near {secret.split('kept near ', 1)[1]}?"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("key", [None, UNKNOWN_KEY, ALICE_KEY[:-1], f"{ALICE_KEY}:alice"],
                         ids=["no-key", "unknown-key", "near-miss-key", "key-with-user-suffix"])
def test_missing_or_unknown_key_is_refused_and_changes_nothing(surfaces: dict[str, Surface], name: str,
                                                               key: str | None) -> None:
    surface, secret = surfaces[name], _secret()
    assert surface.write("alice", secret, key) == Outcome("unauthenticated")
    assert surface.read("alice", QUERY, key) == Outcome("unauthenticated")
    after = surface.read("alice", _query_for(secret), ADMIN_KEY)
    assert after.status == "ok" and secret not in after.seen


@pytest.mark.parametrize("name", NAMES)
def test_bound_key_reaches_its_own_user(surfaces: dict[str, Surface], name: str) -> None:
    surface, secret = surfaces[name], _secret()
    assert surface.write("alice", secret, ALICE_KEY).status == "ok"
    seen = surface.read("alice", _query_for(secret), ALICE_KEY)
    assert seen.status == "ok" and secret in seen.seen


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("other", ["bob", "Alice", "alic", "alice2", "alice%20", "%20alice", "carol"])
def test_bound_key_is_forbidden_for_any_other_user_and_changes_nothing(surfaces: dict[str, Surface], name: str,
                                                                       other: str) -> None:
    """Tried: bob, carol (nobody wrote to her), and ids that only look like alice."""
    surface, secret, planted = surfaces[name], _secret(), _secret()
    if other == "bob":  # something of bob's that alice's refused read must not show
        assert surface.write("bob", planted, BOB_KEY).status == "ok"
    assert surface.write(other, secret, ALICE_KEY) == Outcome("forbidden")
    assert surface.read(other, QUERY, ALICE_KEY) == Outcome("forbidden")
    if other in ("bob", "Alice", "alic", "alice2", "carol"):  # usable ids: the admin can look, and finds nothing planted
        after = surface.read(other, _query_for(secret), ADMIN_KEY)
        assert after.status == "ok" and secret not in after.seen


@pytest.mark.parametrize("name", NAMES)
def test_admin_key_reaches_any_user(surfaces: dict[str, Surface], name: str) -> None:
    surface, secret, fresh = surfaces[name], _secret(), new_user()
    assert surface.write(fresh, secret, ADMIN_KEY).status == "ok"
    seen = surface.read(fresh, _query_for(secret), ADMIN_KEY)
    assert seen.status == "ok" and secret in seen.seen
    # and it reads what a bound key wrote for its own user
    mine = _secret()
    assert surface.write("alice", mine, ALICE_KEY).status == "ok"
    assert mine in surface.read("alice", _query_for(mine), ADMIN_KEY).seen


@pytest.mark.parametrize("reader", NAMES)
@pytest.mark.parametrize("writer", NAMES)
def test_what_alice_writes_never_reaches_bob(surfaces: dict[str, Surface], writer: str, reader: str) -> None:
    """Alice writes through ``writer``; bob (his key, and the admin key on bob) reads through
    ``reader`` and never sees it, while alice herself does through ``writer``."""
    secret = _secret()
    assert surfaces[writer].write("alice", secret, ALICE_KEY).status == "ok"
    assert secret in surfaces[writer].read("alice", _query_for(secret), ALICE_KEY).seen  # the read can see it at all
    for key in (BOB_KEY, ADMIN_KEY):
        seen = surfaces[reader].read("bob", _query_for(secret), key)
        assert seen.status == "ok" and seen.seen, (key, seen)
        assert secret not in seen.seen


@pytest.mark.parametrize("header", ["%ff", "%20", "a%09b", "alice%20"])
def test_mcp_user_header_that_is_no_usable_id_is_refused(surfaces: dict[str, Surface], header: str) -> None:
    """Tried with the admin key: invalid UTF-8, a blank id, a control character, trailing
    space. Each is a 422 naming the header, before the SDK sees the request."""
    mcp = surfaces["mcp"]
    assert isinstance(mcp, Mcp)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    reply = httpx.post(mcp.url, json=body, timeout=30, headers={
        **_auth(ADMIN_KEY), USER_HEADER: header, "Accept": "application/json, text/event-stream"})
    assert reply.status_code == 422, reply.text
    assert reply.json()["error"]["field"] == USER_HEADER
