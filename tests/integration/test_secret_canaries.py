"""No configured secret is ever shown (issue 32, defects 2 and 5).

A canary value sits in every setting that holds a secret: the LLM and embedding keys,
passwords and ``?api_key=`` / ``?token=`` / ``?key=`` parameters of the LLM, embedding
and upstream URLs, the Redis password, the Chroma server URL's ``?token=``, the upstream
key, the keys of ``HMEM_API_KEYS``. The endpoints are real: a local server that refuses every call with 401 and echoes what
it received (the Authorization header, the path with its query), as some gateways do,
and a closed loopback port. Then every surface is swept for the canaries: the log
records (every logger, DEBUG), the HTTP error bodies, the proxy's relayed upstream
errors, the ``/ui`` pages, the CLI's output and the exceptions' text and tracebacks.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import secrets
import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_fixtures import embedder
from settings_helpers import settings_file

from hmem.cli.main import main
from hmem.config import Settings
from hmem.errors import HmemError
from hmem.memory import Memory
from hmem.providers.embed import OpenAICompatibleEmbedder
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.server import create_app
from hmem.server.live import serve_in_thread
from hmem.server.proxy import ProxyOptions
from hmem.types import Message

pytestmark = pytest.mark.integration

CANARIES = {name: f"canary{name}{secrets.token_hex(6)}" for name in (
    "llmkey", "llmpassword", "llmquerykey", "llmtoken", "embedkey", "embedquerykey", "embedpassword",
    "redispassword", "vectorstoken", "upstreamkey", "upstreampassword", "upstreamquerykey", "admin", "alice", "callerkey")}
C = CANARIES


class EchoingEndpoint:
    """An OpenAI-compatible endpoint on loopback that refuses every call with 401 and
    puts what it received (Authorization, X-Api-Key, the path and query) in its error."""

    def __init__(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                endpoint.calls += 1
                said = f"invalid credentials {self.headers.get('Authorization')!r} for {self.path}"
                body = json.dumps({"error": {"message": said, "type": "invalid_request_error",
                                             "code": "invalid_api_key", "param": self.headers.get("Authorization"),
                                             "received": dict(self.headers)}}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.calls = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def __enter__(self) -> EchoingEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def canary_env(endpoint_port: int, data_dir: Path, redis_port: int, tuning: Path) -> dict[str, str]:
    """The HMEM_* variables of the canary deployment; its tuning settings go to the file
    ``tuning`` (written here), which HMEM_CONFIG names."""
    # buffer_tokens: compaction, so the summarizer asks the LLM too
    settings_file(tuning, redis_timeout_s=2, buffer_tokens=60, summary_min_messages=2)
    return {
        "HMEM_CONFIG": str(tuning),
        "HMEM_DATA_DIR": str(data_dir),
        "HMEM_VECTORS": "memory",
        "HMEM_LLM_MODEL": "m",
        "HMEM_LLM_API_KEY": C["llmkey"],
        "HMEM_LLM_BASE_URL": f"http://llm:{C['llmpassword']}@127.0.0.1:{endpoint_port}/v1"
                             f"?api_key={C['llmquerykey']}&token={C['llmtoken']}",
        "HMEM_EMBED_PROVIDER": "openai",
        "HMEM_EMBED_MODEL": "e",
        "HMEM_EMBED_API_KEY": C["embedkey"],
        "HMEM_EMBED_BASE_URL": f"http://emb:{C['embedpassword']}@127.0.0.1:{endpoint_port}/v1"
                               f"?api_key={C['embedquerykey']}",
        "HMEM_REDIS_URL": f"redis://:{C['redispassword']}@127.0.0.1:{redis_port}/0",
        "HMEM_REDIS_FALLBACK_TO_MEMORY": "true",
        "HMEM_API_KEYS": f"{C['admin']},{C['alice']}:alice",
    }


def upstream_url(port: int) -> str:
    # No user:password here: httpx would send those as Basic credentials instead of the key.
    return f"http://127.0.0.1:{port}/v1?key={C['upstreamquerykey']}"


#: The user names of the URLs' passwords: an HTTP client sends them as Basic credentials.
URL_USERS = {"llmpassword": "llm", "embedpassword": "emb", "upstreampassword": "up"}
SHAPES = {**CANARIES, **{f"{name} as Basic credentials": base64.b64encode(f"{user}:{C[name]}".encode()).decode()
                         for name, user in URL_USERS.items()}}


def assert_no_canary(where: str, text: str) -> None:
    found = sorted(name for name, value in SHAPES.items() if value in text)
    assert not found, f"{where} shows the secrets {found}: {text[:3000]}"


def ui_pages(http: httpx.Client) -> dict[str, httpx.Response]:
    return {
        "ui user": http.get("/ui/users/alice"),
        "ui session": http.get("/ui/users/alice/sessions/s1"),
        "ui ask": http.get("/ui/users/alice/ask", params={"q": "where does she live"}),
        "ui users": http.get("/ui"),
    }


def exception_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc)


TURNS = [{"role": "user", "content": "I moved to Lisbon last month and I work at a bakery now."},
         {"role": "assistant", "content": "Lisbon and a bakery: noted."},
         {"role": "user", "content": "My sister Lena lives in Porto."},
         {"role": "assistant", "content": "Porto is close by."}]


def test_rest_api_ui_and_logs_show_no_secret_when_the_embedder_refuses(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    shown: dict[str, str] = {}
    with EchoingEndpoint() as endpoint:
        settings = Settings.from_env(canary_env(endpoint.port, tmp_path, closed_port(), tmp_path / "hmem.toml"))
        assert (settings.buffer_tokens, settings.summary_min_messages, settings.redis_timeout_s) == (60, 2, 2.0)
        memory = Memory.from_settings(settings)  # embeddings and LLM: the echoing endpoint
        try:
            with serve_in_thread(create_app(memory, settings)) as url, \
                    httpx.Client(base_url=url, headers={"Authorization": f"Bearer {C['admin']}"}, timeout=60) as http:
                for i, turn in enumerate(TURNS):
                    shown[f"add {i}"] = http.post("/v1/users/alice/sessions/s1/messages", json={"messages": [turn]}).text
                calls = {
                    "context": http.post("/v1/users/alice/sessions/s1/context", json={"query": "where does she live"}),
                    "search": http.post("/v1/users/alice/items/search", json={"query": "bakery"}),
                    "remember": http.post("/v1/users/alice/items", json={"text": "Likes custard tarts"}),
                    "history": http.get("/v1/users/alice/sessions/s1/messages"),
                    "items": http.get("/v1/users/alice/items"),
                    "profile": http.get("/v1/users/alice/profile"),
                    "readyz": http.get("/readyz"),
                    "healthz": http.get("/healthz"),
                    **ui_pages(http),
                }
                shown.update({name: response.text for name, response in calls.items()})
            assert calls["context"].status_code == 502 and calls["search"].status_code == 502
            assert "embeddings request to" in calls["search"].json()["error"]["message"]  # the endpoint said no
            assert endpoint.calls > 0
            with pytest.raises(HmemError) as failed:
                memory.recall("alice", "bakery")
            shown["exception"] = exception_text(failed.value)
            shown["settings repr"] = repr(settings)
        finally:
            memory.close()
    shown["log"] = caplog.text
    for where, text in shown.items():
        assert_no_canary(where, text)


def test_proxy_extraction_and_ui_show_no_secret_when_the_llm_and_upstream_refuse(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    shown: dict[str, str] = {}
    with EchoingEndpoint() as endpoint:
        settings = Settings.from_env(canary_env(endpoint.port, tmp_path, closed_port(), tmp_path / "hmem.toml"))
        memory = Memory.from_settings(settings, embedder=embedder())  # recall works; the LLM and upstream refuse
        options = ProxyOptions(upstream=upstream_url(endpoint.port), api_key=C["upstreamkey"])
        try:
            with serve_in_thread(create_app(memory, settings, proxy=options)) as url, \
                    httpx.Client(base_url=url, headers={"Authorization": f"Bearer {C['alice']}"}, timeout=60) as http:
                for i, turn in enumerate(TURNS * 2):  # extraction asks the LLM; compaction its summarizer
                    added = http.post("/v1/users/alice/sessions/s1/messages", json={"messages": [turn]})
                    assert added.status_code == 201, added.text
                    shown[f"add {i}"] = added.text
                shown.update({name: page.text for name, page in ui_pages(http).items()})
                chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Where do I live?"}]}
                plain = http.post("/v1/chat/completions", json=chat)
                streamed = http.post("/v1/chat/completions", json={**chat, "stream": True})
                own_key = http.post("/v1/chat/completions", json=chat, headers={"X-Upstream-Key": C["callerkey"]})
        finally:
            memory.close()
    relayed = {"plain": plain, "stream": streamed, "own key": own_key}
    shown.update({f"proxy {name}": response.text for name, response in relayed.items()})
    shown["log"] = caplog.text
    for where, text in shown.items():
        assert_no_canary(where, text)
    logged = [record.getMessage() for record in caplog.records]
    assert any("extraction: the LLM failed" in line and "401" in line for line in logged)  # it did refuse
    for response in relayed.values():
        assert response.status_code == 401, response.text
        error = response.json()["error"]
        assert error["type"] == "upstream_error" and "invalid credentials" in error["message"]
        assert set(error["details"]["upstream"]) <= {"message", "type", "code", "param"}
        assert error["details"]["upstream"]["code"] == "invalid_api_key"  # what the caller can act on


def test_cli_errors_show_no_configured_secret(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)

    def hmem(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    with EchoingEndpoint() as endpoint:
        for name, value in canary_env(endpoint.port, tmp_path / "store", closed_port(), tmp_path / "hmem.toml").items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("HMEM_UPSTREAM_API_KEY", C["upstreamkey"])
        runs = {
            "recall": hmem("recall", "alice", "bakery"),  # the embeddings endpoint refuses
            "add": hmem("add", "alice", "s1", "I work at a bakery now."),
            "upstream url": hmem("proxy", "--upstream", f"ftp://up:{C['upstreampassword']}@127.0.0.1:9/v1"),
        }
        monkeypatch.setenv("HMEM_EMBED_PROVIDER", "onnx")  # the chat's recall works; its LLM refuses
        monkeypatch.delenv("HMEM_EMBED_MODEL")
        runs["chat"] = hmem("chat", "alice", "s2", stdin="Where do I live?\n")
        monkeypatch.setenv("HMEM_VECTORS", f"http://127.0.0.1:{closed_port()}/?token={C['vectorstoken']}")
        runs["vectors"] = hmem("recall", "alice", "bakery")  # no Chroma server there
        monkeypatch.setenv("HMEM_REDIS_FALLBACK_TO_MEMORY", "false")  # Redis down: an error, not a fallback
        runs["redis"] = hmem("inspect", "alice", "s1")
    for name in ("recall", "upstream url", "chat", "vectors", "redis"):
        code, _, err = runs[name]
        assert code == 1 and err.startswith("hmem: error: ") and "Traceback" not in err, (name, runs[name])
    for name, (_, out, err) in runs.items():
        assert_no_canary(f"hmem {name}", out + err)
    assert_no_canary("log", caplog.text)


def test_provider_exceptions_and_reprs_show_no_secret() -> None:
    with EchoingEndpoint() as endpoint:
        llm_url = f"http://127.0.0.1:{endpoint.port}/v1?api_key={C['llmquerykey']}"  # the key as Bearer
        llm = OpenAICompatibleLLM(base_url=llm_url, api_key=C["llmkey"], model="m", max_attempts=1)
        with pytest.raises(HmemError) as refused:
            llm.complete([Message(role="user", content="hi")])
        down = OpenAICompatibleLLM(base_url=f"http://127.0.0.1:{closed_port()}/v1?token={C['llmtoken']}",
                                   api_key=C["llmkey"], model="m", max_attempts=2, backoff_s=0.0)
        with pytest.raises(HmemError) as unreachable:
            down.complete([Message(role="user", content="hi")])
        embed = OpenAICompatibleEmbedder(f"http://127.0.0.1:{endpoint.port}/v1?api_key={C['embedquerykey']}",
                                         C["embedkey"], "e", max_retries=0)
        with pytest.raises(HmemError) as embed_refused:
            embed.embed(["hi"])
    assert "401" in str(refused.value) and "401" in str(embed_refused.value)
    for name, exc in (("llm 401", refused.value), ("llm down", unreachable.value), ("embed 401", embed_refused.value)):
        assert_no_canary(name, exception_text(exc))
    assert_no_canary("reprs", repr(llm) + repr(down) + repr(embed.__dict__.get("_client")))
