"""The HTTP servers' limits on what a client sends (issue #32, defect 8), against real
uvicorn servers: ``create_app`` and MCP's ``http_app`` in-process, and ``hmem serve`` /
``hmem mcp --transport http`` as subprocesses.

* a header block over the limit is refused (431 in hmem's error shape), and an 8 MB one
  is cut off by the HTTP parser before it is read whole;
* a body that does not arrive in time gets 408 and its connection is closed;
* only UTF-8 JSON is accepted (UTF-16 and UTF-32 get 422);
* a body that is not JSON is placed by line and column, never by a character offset
  that reads like an array index;
* MCP's oversized body gets 413 in hmem's error shape, not the SDK's plain text.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from process_helpers import reap

from hmem.memory import Memory
from hmem.server import ServerOptions
from hmem.server.auth import KeyRing
from hmem.server.live import serve_in_thread
from tests.integration.server_fixtures import ADMIN_KEY, ALICE_KEY, KEYS, embedder, fast_settings, live_server

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
#: Over the 32 KiB limit of a header block, under what the HTTP parser buffers.
BIG_HEADER = "a" * 40_000
EIGHT_MB = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    settings = fast_settings(tmp_path_factory.mktemp("server-limits"))
    with live_server(settings, options=ServerOptions(body_timeout_s=1.0)) as pair:
        yield pair


def _error(r: httpx.Response, status: int, type_: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["type"] == type_, body
    return dict(body["error"])


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (the socket's timeout guards a server
    that never does: the test then fails on it)."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _huge_header_answer(url: str) -> bytes:
    """Send a request with an 8 MB header; what came back before the server hung up (a
    server that stops reading may reset the connection before its answer is read)."""
    with socket.create_connection(_address(url), timeout=30) as sock:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hmem\r\nX-Filler: ")
            sock.sendall(b"a" * EIGHT_MB + b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while it was still being sent
        try:
            return _read_until_closed(sock)
        except ConnectionResetError:
            return b""


def _stalled_uploads(url: str, path: str, key: str, count: int) -> list[bytes]:
    """``count`` uploads that declare 200 bytes, send 20 and stall; each one's answer."""
    head = (f"POST {path} HTTP/1.1\r\nHost: hmem\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "Content-Length: 200\r\n\r\n").encode() + b'{"text": "stalled...'
    socks = [socket.create_connection(_address(url), timeout=30) for _ in range(count)]
    try:
        for sock in socks:
            sock.sendall(head)
        return [_read_until_closed(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def _status_and_error(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        size, _, rest = body.partition(b"\r\n")
        body = rest[: int(size, 16)]
    return status, json.loads(body)["error"]


# -- headers ----------------------------------------------------------------------------------


def test_a_header_block_over_the_limit_is_431_in_hmems_error_shape(server: tuple[str, Memory]) -> None:
    url, _ = server
    r = httpx.get(f"{url}/healthz", headers={"X-Filler": BIG_HEADER}, timeout=30)
    error = _error(r, 431, "headers_too_large")
    assert "32768" in error["message"]
    assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200


def test_an_8_mb_header_is_cut_off_by_the_parser_and_the_server_keeps_serving(server: tuple[str, Memory]) -> None:
    url, _ = server
    answer = _huge_header_answer(url)
    # The parser gives up at its buffer cap (uvicorn's plain 400) or the connection is
    # reset mid-send: either way the 8 MB were never read whole, so never answered.
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200


# -- body: time, encoding, syntax ---------------------------------------------------------------


def test_stalled_uploads_get_408_and_their_connections_are_closed(server: tuple[str, Memory]) -> None:
    url, memory = server
    answers = _stalled_uploads(url, "/v1/users/alice/items", ADMIN_KEY, count=20)
    for answer in answers:
        status, error = _status_and_error(answer)
        assert (status, error["type"]) == (408, "request_timeout")
        assert "1 s" in error["message"]
    assert memory.items("alice") == []


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_json_in_another_encoding_than_utf8_is_422(server: tuple[str, Memory], encoding: str) -> None:
    url, memory = server
    body = json.dumps({"text": "I keep bees"}).encode(encoding)
    r = httpx.post(f"{url}/v1/users/alice/items", content=body, timeout=30,
                   headers={"Authorization": f"Bearer {ALICE_KEY}", "Content-Type": "application/json"})
    error = _error(r, 422, "invalid_input")
    assert error["field"] == "body" and "UTF-8" in error["message"] and encoding[:6].upper() in error["message"]
    assert memory.items("alice") == []


def test_utf8_json_with_a_byte_order_mark_is_accepted(server: tuple[str, Memory]) -> None:
    url, memory = server
    r = httpx.post(f"{url}/v1/users/bom-user/items", content=json.dumps({"text": "I keep bees"}).encode("utf-8-sig"),
                   headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 201, r.text
    assert [item.text for item in memory.items("bom-user")] == ["I keep bees"]


def test_malformed_json_is_placed_by_line_and_column(server: tuple[str, Memory]) -> None:
    url, _ = server
    body = b'{\n  "text": "peanuts",\n  "kind" "fact"\n}'
    r = httpx.post(f"{url}/v1/users/alice/items", content=body, timeout=30,
                   headers={"Authorization": f"Bearer {ALICE_KEY}", "Content-Type": "application/json"})
    error = _error(r, 422, "invalid_input")
    assert error["field"] == "body"
    assert "line 3, column 10" in error["message"] and "Expecting ':' delimiter" in error["message"]


def test_the_proxy_refuses_utf16_and_places_malformed_json_by_line_and_column(tmp_path: Path) -> None:
    from tests.integration.test_proxy import MODEL, proxy

    with proxy(tmp_path) as (url, memory, upstream):
        headers = {"Authorization": f"Bearer {ALICE_KEY}", "Content-Type": "application/json"}
        utf16 = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}).encode("utf-16")
        error = _error(httpx.post(f"{url}/chat/completions", content=utf16, headers=headers, timeout=30),
                       422, "invalid_input")
        assert error["field"] == "body" and "UTF-16" in error["message"]
        broken = b'{"model": "gpt-4o-mini",\n "messages": [}'
        error = _error(httpx.post(f"{url}/chat/completions", content=broken, headers=headers, timeout=30),
                       422, "invalid_input")
        assert error["field"] == "body" and "line 2, column 15" in error["message"]
        assert [i.session_id for i in memory.session_infos("alice")] == [] and upstream.completion_requests == []


# -- MCP over HTTP ------------------------------------------------------------------------------


@contextmanager
def _mcp_in_process(tmp_path: Path, **limits: Any) -> Iterator[str]:
    pytest.importorskip("mcp")
    from hmem.mcp.server import build_server, http_app

    settings = fast_settings(tmp_path)
    memory = Memory.from_settings(settings, embedder=embedder())
    try:
        app = http_app(build_server(memory), KeyRing.parse(KEYS), **limits)
        with serve_in_thread(app) as url:
            yield url
    finally:
        memory.close()


def test_mcp_refuses_an_oversized_body_in_hmems_error_shape(tmp_path: Path) -> None:
    with _mcp_in_process(tmp_path) as url:
        oversized = b"[" + b" " * (5 * 1024 * 1024) + b"]"
        r = httpx.post(f"{url}/mcp", content=oversized, timeout=60,
                       headers={"Authorization": f"Bearer {ALICE_KEY}", "Content-Type": "application/json",
                                "Accept": "application/json, text/event-stream"})
        error = _error(r, 413, "payload_too_large")
        assert error["details"]["max_bytes"] == 4 * 1024 * 1024


def test_mcp_stalled_uploads_get_408_and_headers_are_limited(tmp_path: Path) -> None:
    with _mcp_in_process(tmp_path, body_timeout_s=1.0) as url:
        for answer in _stalled_uploads(url, "/mcp", ALICE_KEY, count=3):
            status, error = _status_and_error(answer)
            assert (status, error["type"]) == (408, "request_timeout")
        r = httpx.get(f"{url}/mcp", headers={"Authorization": f"Bearer {ALICE_KEY}", "X-Filler": BIG_HEADER},
                      timeout=30)
        _error(r, 431, "headers_too_large")


# -- the commands start uvicorn with the limits ----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _command(tmp_path: Path, *args: str) -> Iterator[str]:
    """``python -m hmem <args> --port P --data D`` until the block ends; yields its base URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMEM_")}
    env.update({"HMEM_VECTORS": "memory", "HF_HUB_OFFLINE": "1", "HMEM_API_KEYS": ",".join(KEYS)})
    proc = subprocess.Popen([sys.executable, "-m", "hmem", *args, "--port", str(port), "--data", str(tmp_path / "d")],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "the server died"
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"hmem {args[0]} did not start within 120 s"
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        reap(proc, 30)


@pytest.mark.slow
def test_hmem_serve_limits_headers_and_body_time(tmp_path: Path) -> None:
    with _command(tmp_path, "serve", "--body-timeout", "1") as url:
        _error(httpx.get(f"{url}/healthz", headers={"X-Filler": BIG_HEADER}, timeout=30), 431, "headers_too_large")
        answer = _huge_header_answer(url)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 400 "), answer[:200]
        (answer,) = _stalled_uploads(url, "/v1/users/alice/items", ADMIN_KEY, count=1)
        assert _status_and_error(answer)[0] == 408


@pytest.mark.slow
def test_hmem_mcp_over_http_limits_headers(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    with _command(tmp_path, "mcp", "--transport", "http", "--user", "alice") as url:
        r = httpx.get(f"{url}/mcp", headers={"Authorization": f"Bearer {ALICE_KEY}", "X-Filler": BIG_HEADER},
                      timeout=30)
        _error(r, 431, "headers_too_large")
        answer = _huge_header_answer(url)
        assert answer == b"" or answer.startswith(b"HTTP/1.1 400 "), answer[:200]
