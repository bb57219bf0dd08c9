"""``hmem mcp`` through the official SDK's own client, against real subprocesses.

Over stdio (``python -m hmem mcp --user …``, and the client config of docs/mcp.md as
written) and over streamable HTTP (``--transport http`` with ``HMEM_API_KEYS``): every
tool is called and both resources are read; bad arguments come back as tool errors
naming what is wrong; a key bound to alice never reaches bob's memory, whatever the
arguments say.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from process_helpers import reap

pytest.importorskip("mcp")

from mcp import Client, MCPError, StdioServerParameters

from hmem.config import Settings
from hmem.memory import Memory
from tests.integration.mcp_fixtures import error_text as _error_text
from tests.integration.mcp_fixtures import mcp_http_client
from tests.integration.mcp_fixtures import structured as _structured

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
ALICE_KEY = "alice-" + secrets.token_hex(8)
BOB_KEY = "bob-" + secrets.token_hex(8)
OPEN_KEY = "open-" + secrets.token_hex(8)  # bound to no user
#: The newest protocol of the initialize handshake: its connections are sessions (Mcp-Session-Id).
LEGACY_PROTOCOL = "2025-11-25"
TOOLS = {"remember", "recall", "get_context", "profile_get", "profile_set", "forget"}


def _env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMEM_")}
    env.update({"HMEM_DATA_DIR": str(data), "HMEM_VECTORS": "memory", "HF_HUB_OFFLINE": "1", **extra})
    return env


async def _resource(client: Client, uri: str) -> dict[str, Any]:
    result = await client.read_resource(uri)
    data: dict[str, Any] = json.loads(result.contents[0].text)  # type: ignore[union-attr]
    return data


async def _exercise_every_tool(client: Client) -> None:
    """Call every tool and read every resource, checking what each returns."""
    assert {t.name for t in (await client.list_tools()).tools} == TOOLS
    for tool in (await client.list_tools()).tools:
        assert not [name for name in tool.input_schema["properties"] if "user" in name]  # no tool names a user

    stored = _structured(await client.call_tool("remember", {"text": "I am allergic to peanuts", "kind": "fact"}))
    assert stored["status"] == "stored"
    item_id = stored["item"]["id"]
    _structured(await client.call_tool("remember", {"text": "My sister Ana lives in Lisbon", "session_id": "s1"}))

    hits = _structured(await client.call_tool("recall", {"query": "peanut allergy", "k": 5}))["hits"]
    assert hits[0]["id"] == item_id and hits[0]["rank"] == 1
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0]["created_at"].startswith("20") and "lexical_rank" in hits[0] and "dense_rank" in hits[0]

    entry = _structured(await client.call_tool("profile_set", {"key": "City", "value": "Paris"}))["entry"]
    assert (entry["key"], entry["value"]) == ("city", "Paris")
    _structured(await client.call_tool("profile_set", {"key": "diet", "value": ["vegetarian", "no peanuts"]}))
    assert _structured(await client.call_tool("profile_get", {"key": "city"}))["entry"]["value"] == "Paris"
    assert _structured(await client.call_tool("profile_get", {"key": "shoe_size"}))["entry"] is None
    whole = _structured(await client.call_tool("profile_get", {}))["entries"]
    assert {e["key"]: e["value"] for e in whole} == {"city": "Paris", "diet": ["vegetarian", "no peanuts"]}
    assert {e["key"] for e in (await _resource(client, "hmem://profile"))["entries"]} == {"city", "diet"}

    ctx = _structured(await client.call_tool("get_context", {"session_id": "s1", "query": "what can I eat?",
                                                             "model": "gpt-4o-mini"}))
    prompt = json.dumps(ctx["messages"])
    assert "Paris" in prompt and "peanuts" in prompt
    assert 0 < ctx["tokens"] <= ctx["report"]["budget"]

    recent = await _resource(client, "hmem://summary/recent")
    assert set(recent) >= {"session_id", "summary"}  # no session yet: both null
    per_session = await _resource(client, "hmem://sessions/s1/summary")
    assert per_session["session_id"] == "s1" and per_session["summary"] is None

    # Bad arguments tried: k=0, k="ten", empty text, a dict as profile value, forget with no filter,
    # importance out of range, a misspelt argument, a budget too small for the system prompt.
    assert "k" in _error_text(await client.call_tool("recall", {"query": "x", "k": 0}))
    assert "k" in _error_text(await client.call_tool("recall", {"query": "x", "k": "ten"}))
    assert "text" in _error_text(await client.call_tool("remember", {"text": ""}))
    assert "importance" in _error_text(await client.call_tool("remember", {"text": "x", "importance": 7}))
    assert "value" in _error_text(await client.call_tool("profile_set", {"key": "k", "value": {"a": 1}}))
    assert "say what to forget" in _error_text(await client.call_tool("forget", {}))
    assert "['qurey']" in _error_text(await client.call_tool("recall", {"qurey": "peanuts"}))
    assert "budget" in _error_text(await client.call_tool("get_context", {"session_id": "s1", "budget": 3,
                                                                               "system_prompt": "Be brief."}))

    assert _structured(await client.call_tool("forget", {"ids": [item_id]}))["deleted"] == 1
    left = _structured(await client.call_tool("recall", {"query": "peanut allergy"}))["hits"]
    assert item_id not in {h["id"] for h in left}


# -- stdio --------------------------------------------------------------------------------


def test_stdio_every_tool_and_resource(tmp_path: Path) -> None:
    """The user comes from HMEM_MCP_USER here (``--user`` in the docs test below)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "hmem", "mcp"],
                                   env=_env(tmp_path, HMEM_MCP_USER="dora"), cwd=str(ROOT))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _exercise_every_tool(client)

    anyio.run(main)
    with Memory.from_settings(Settings.from_env({}, data_dir=str(tmp_path), vectors="memory")) as memory:
        assert {e.key for e in memory.profile.all("dora")} == {"city", "diet"}  # written as dora, no one else
        assert memory.profile.all("alice") == []


def test_stdio_docs_client_config_runs_as_written(tmp_path: Path) -> None:
    """The MCP client config of docs/mcp.md (and README "Use it from…"), launched as written
    from a directory of the client's own: its paths are absolute (a bare ``hmem`` needs hmem
    on the client's PATH, ``./hmem-data`` would land in the client's directory), so the data
    lands in the ``--data`` folder whatever the client's directory is. The docs' home
    folder stands for this checkout and a temporary folder."""
    pattern = re.compile(r"<!-- client-config -->\s*```json\n(.*?)```", re.S)
    snippet = pattern.search((ROOT / "docs" / "mcp.md").read_text(encoding="utf-8"))
    assert snippet, "docs/mcp.md lost its <!-- client-config --> json block"
    in_readme = pattern.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert in_readme is not None and in_readme.group(1) == snippet.group(1), "README and docs/mcp.md configs differ"
    entry = json.loads(snippet.group(1))["mcpServers"]["hmem"]
    args = list(entry["args"])
    data = args[args.index("--data") + 1]
    assert Path(entry["command"]).is_absolute() and Path(data).is_absolute(), entry
    assert Path(entry["command"]).name == "hmem" and Path(entry["command"]).parent.name == "bin"
    command = str(Path(sys.executable).with_name("hmem"))  # the same console script, in the tests' venv
    args[args.index(data)] = str(tmp_path / Path(data).name)
    client_dir = tmp_path / "client"
    client_dir.mkdir()
    params = StdioServerParameters(command=command, args=args, env=_env(tmp_path / "not-used"), cwd=str(client_dir))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            stored = _structured(await client.call_tool("remember", {"text": "I play the cello"}))
            hits = _structured(await client.call_tool("recall", {"query": "cello"}))["hits"]
            assert hits[0]["id"] == stored["item"]["id"]

    anyio.run(main)
    assert (tmp_path / Path(data).name / "hmem.sqlite3").exists()
    assert list(client_dir.iterdir()) == [] and not (tmp_path / "not-used").exists()


@pytest.mark.parametrize("extra", [[], ["--user", ""], ["--user", " alice"], ["--user", "a\tb"]])
def test_stdio_needs_a_valid_user_before_opening_anything(tmp_path: Path, extra: list[str]) -> None:
    data = tmp_path / "data"
    proc = subprocess.run([sys.executable, "-m", "hmem", "mcp", *extra], env=_env(data), cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "user" in proc.stderr.lower()
    assert not data.exists()  # refused before any store was opened


@pytest.mark.parametrize(
    ("args", "keys", "said"),
    [
        (["--transport", "http"], "", "needs a user"),  # no key and no --user: nobody to act for
        (["--transport", "http", "--user", "alice", "--host", "0.0.0.0"], "", "refusing to serve without API keys"),
        (["--transport", "http"], ":alice", "KEY or KEY:USER_ID"),  # a malformed HMEM_API_KEYS entry
    ],
)
def test_http_refuses_to_start_without_safe_keys(tmp_path: Path, args: list[str], keys: str, said: str) -> None:
    data = tmp_path / "data"
    proc = subprocess.run([sys.executable, "-m", "hmem", "mcp", *args, "--port", str(_free_port())],
                          env=_env(data, HMEM_API_KEYS=keys), cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stderr
    assert said in proc.stderr
    assert not data.exists()


# -- streamable HTTP ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _http_server(data: Path, *args: str, keys: str = f"{ALICE_KEY}:alice,{BOB_KEY}:bob,{OPEN_KEY}") -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hmem", "mcp", "--transport", "http", "--port", str(port), *args],
        env=_env(data, HMEM_API_KEYS=keys), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "server died"
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise TimeoutError("hmem mcp --transport http did not start within 120 s") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        reap(proc, 30)
    assert proc.returncode == 0  # SIGTERM is a clean stop: the memory was closed, not killed mid-write


@asynccontextmanager
async def _http_client(url: str, key: str | None) -> AsyncIterator[Client]:
    async with mcp_http_client(url, key) as client:
        yield client


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _http_server(tmp_path_factory.mktemp("mcp-http")) as url:
        yield url


def test_http_every_tool_and_resource(http_url: str) -> None:
    async def main() -> None:
        async with _http_client(http_url, ALICE_KEY) as client:
            await _exercise_every_tool(client)

    anyio.run(main)


def test_http_key_bound_to_alice_cannot_read_bob(http_url: str) -> None:
    secret = "bob-secret-" + secrets.token_hex(4)

    async def main() -> None:
        async with _http_client(http_url, BOB_KEY) as bob:
            _structured(await bob.call_tool("remember", {"text": f"my locker code is {secret}"}))
            _structured(await bob.call_tool("profile_set", {"key": "locker", "value": secret}))
            _structured(await bob.call_tool("remember", {"text": "bob session note", "session_id": "shared"}))
        async with _http_client(http_url, ALICE_KEY) as alice:
            hits = _structured(await alice.call_tool("recall", {"query": f"locker code {secret}", "k": 50}))["hits"]
            assert all(secret not in h["text"] for h in hits)
            assert _structured(await alice.call_tool("profile_get", {"key": "locker"}))["entry"] is None
            assert secret not in json.dumps(await _resource(alice, "hmem://profile"))
            ctx = _structured(await alice.call_tool("get_context", {"session_id": "shared", "query": "locker"}))
            assert secret not in json.dumps(ctx)
            # A user argument is not a way in: the schema has none, and an extra one is not obeyed.
            sneaky = _error_text(await alice.call_tool("recall", {"query": secret, "user_id": "bob"}))
            assert "unknown argument(s) ['user_id']" in sneaky and "no tool takes one" in sneaky
            assert _structured(await alice.call_tool("forget", {"all": True}))["deleted"] >= 0
        async with _http_client(http_url, BOB_KEY) as bob:  # alice's forget-all left bob untouched
            hits = _structured(await bob.call_tool("recall", {"query": f"locker code {secret}"}))["hits"]
            assert any(secret in h["text"] for h in hits)

    anyio.run(main)


@pytest.mark.parametrize(("key", "status"), [(None, 401), ("wrong-key", 401), (OPEN_KEY, 403)])
def test_http_refuses_missing_wrong_and_userless_keys(http_url: str, key: str | None, status: int) -> None:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    reply = httpx.post(http_url, json=body, headers={**headers, "Accept": "application/json, text/event-stream"},
                       timeout=30)
    assert reply.status_code == status
    assert reply.json()["error"]["type"] in {"unauthorized", "forbidden"}

    async def main() -> None:
        async with _http_client(http_url, key) as client:
            await client.list_tools()

    with pytest.raises(ExceptionGroup) as refused:  # the SDK's client wraps the HTTP error in its task groups
        anyio.run(main)
    assert refused.group_contains(MCPError, match="error response", depth=None)


def test_http_userless_key_acts_as_the_configured_user(tmp_path: Path) -> None:
    with _http_server(tmp_path, "--user", "carol") as url:
        async def main() -> None:
            async with _http_client(url, OPEN_KEY) as carol:
                _structured(await carol.call_tool("profile_set", {"key": "name", "value": "Carol"}))
            async with _http_client(url, ALICE_KEY) as alice:  # a bound key still wins over --user
                assert _structured(await alice.call_tool("profile_get", {"key": "name"}))["entry"] is None
            async with _http_client(url, OPEN_KEY) as carol:
                assert _structured(await carol.call_tool("profile_get", {"key": "name"}))["entry"]["value"] == "Carol"

        anyio.run(main)


@pytest.mark.parametrize(
    ("owner", "strangers"),
    [
        # bob's key; the unbound key, even naming alice (it may act as alice, but the session is not its own)
        ((ALICE_KEY, {}), [(BOB_KEY, {}), (OPEN_KEY, {"X-Hmem-User": "alice"}), (OPEN_KEY, {"X-Hmem-User": "bob"})]),
        # the unbound key that opened it, now acting as another user; alice's own key
        ((OPEN_KEY, {"X-Hmem-User": "alice"}), [(OPEN_KEY, {"X-Hmem-User": "bob"}), (ALICE_KEY, {})]),
    ],
    ids=["alice-key", "unbound-key-as-alice"],
)
def test_http_session_ids_are_bound_to_the_key_that_opened_them(
    http_url: str, owner: tuple[str, dict[str, str]], strangers: list[tuple[str, dict[str, str]]],
) -> None:
    """A legacy (pre-2026 protocol) connection is a session named by ``Mcp-Session-Id``. A
    request naming it with another key, or with its key acting as another user, gets the
    404 of a session that does not exist, for GET, POST and DELETE. The session goes on."""
    opened: list[str] = []

    async def note_session(response: Any) -> None:
        if sid := response.headers.get("mcp-session-id"):
            opened.append(sid)

    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "profile_get", "arguments": {"key": "city"}}}

    def attempts(key: str, session: str, extra: dict[str, str]) -> list[tuple[str, int, str]]:
        headers = {"Authorization": f"Bearer {key}", "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY_PROTOCOL,
                   "Accept": "application/json, text/event-stream", **extra}
        seen = []
        with httpx.Client(timeout=30) as http:
            for method in ("POST", "DELETE", "GET"):
                reply = http.request(method, http_url, headers=headers, json=call if method == "POST" else None)
                seen.append((method, reply.status_code, reply.text))
        return seen

    async def main() -> None:
        key, headers = owner
        city = "Porto-" + secrets.token_hex(4)
        async with mcp_http_client(http_url, key, headers=headers, event_hooks={"response": [note_session]},
                                   mode="legacy") as client:
            assert client.protocol_version == LEGACY_PROTOCOL  # what the strangers' requests claim too
            _structured(await client.call_tool("profile_set", {"key": "city", "value": city}))
            session = opened[0]
            unknown = attempts(key, secrets.token_hex(16), headers)  # the answer for a session that is not there
            assert {status for _, status, _ in unknown} == {404}
            for other_key, extra in strangers:
                got = await anyio.to_thread.run_sync(attempts, other_key, session, extra)
                assert got == unknown, (other_key[:4], extra)
            # None of it touched the session: it still answers, as alice.
            assert _structured(await client.call_tool("profile_get", {"key": "city"}))["entry"]["value"] == city

    anyio.run(main)


def test_get_context_query_is_the_current_user_turn(tmp_path: Path) -> None:
    """``get_context(query=…)``: the query is the user's current message, the last message of
    the prompt and its current turn (not stored); one that the session already ends with is
    not repeated."""
    from hmem.mcp.server import build_server

    question = "What could I cook tonight?"
    with Memory.open(str(tmp_path), vectors="memory") as memory:
        memory.add("alice", "s1", [{"role": "user", "content": "I'm vegetarian and live in Porto."},
                                   {"role": "assistant", "content": "Noted!"}])

        async def context(query: str) -> dict[str, Any]:
            async with Client(build_server(memory, user="alice")) as client:
                return _structured(await client.call_tool("get_context", {"session_id": "s1", "query": query}))

        ctx = anyio.run(context, question)
        chat = [(m["role"], m["content"]) for m in ctx["messages"] if m["role"] != "system"]
        assert chat == [("user", "I'm vegetarian and live in Porto."), ("assistant", "Noted!"), ("user", question)]
        current = next(t for t in ctx["report"]["tiers"] if t["tier"] == "current_turn")
        assert current["tokens"] > 0 and current["kept"] == 1
        assert [m.content for m in memory.history("alice", "s1")][-1] == "Noted!"  # the query was not stored

        memory.add("alice", "s1", [{"role": "user", "content": question}])
        again = anyio.run(context, question)
        assert [m["content"] for m in again["messages"]].count(question) == 1


def test_docs_http_client_snippet_runs_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/mcp.md's streamable HTTP client, run as a script against ``hmem mcp --transport
    http`` started with the docs' keys (only the port differs)."""
    page = (ROOT / "docs" / "mcp.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- skip: needs the HTTP server above running[^>]*-->\s*```python\n(.*?)```", page, re.S)
    assert found, "docs/mcp.md lost its HTTP client block"
    code = found.group(1)
    assert "http://127.0.0.1:8765/mcp" in code
    with _http_server(tmp_path, keys="k-alice:alice,k-bob:bob") as url:
        exec(compile(code.replace("http://127.0.0.1:8765/mcp", url), "<docs/mcp.md HTTP client>", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    assert "is_error=False" in printed and "'query': 'allergies'" in printed
