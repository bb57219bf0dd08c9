"""``hmem serve`` and its safety rules: no API key → loopback only (or an explicit
``--allow-unauthenticated``), said at start-up; the key syntax ``KEY[:USER_ID]``; no
password or key of a store URL in the start-up log or a settings error."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from redis_helpers import REDIS_URL, delete_prefix, new_prefix

from hmem.cli import serve_cmd
from hmem.cli.main import COMMAND_MODULES
from hmem.errors import ConfigError
from hmem.server.auth import KeyRing, check_bind, is_loopback

pytestmark = pytest.mark.integration

# Runs exactly the `hmem serve` parser and handler (independent of the other subcommands).
SERVE = (
    "import argparse, sys\n"
    "from hmem.cli import serve_cmd\n"
    "p = argparse.ArgumentParser(prog='hmem'); serve_cmd.register(p.add_subparsers(dest='command'))\n"
    "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n"
)


def test_serve_is_a_registered_command() -> None:
    assert "hmem.cli.serve_cmd" in COMMAND_MODULES


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)
    warning = check_bind(host, KeyRing())
    assert warning is not None and "no API key" in warning


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com", ""])
def test_open_api_refuses_non_loopback_unless_allowed(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ConfigError, match="HMEM_API_KEYS"):
        check_bind(host, KeyRing())
    assert "open to anyone" in (check_bind(host, KeyRing(), allow_unauthenticated=True) or "")
    assert check_bind(host, KeyRing.parse(["k"])) is None


def test_key_syntax() -> None:
    ring = KeyRing.parse(["admin", " alice-key : alice ", "", "svc:tenant:42"])
    assert [(k.user_id) for k in ring.keys] == [None, "alice", "tenant:42"]
    assert ring.lookup("alice-key").user_id == "alice"  # type: ignore[union-attr]
    assert ring.lookup("svc").user_id == "tenant:42"  # type: ignore[union-attr]
    assert ring.lookup("alice") is None and ring.lookup("") is None
    assert "alice-key" not in repr(ring)
    for bad in ([":alice"], ["k:"], ["k", "k:bob"]):
        with pytest.raises(ConfigError):
            KeyRing.parse(bad)


def test_serve_refuses_a_public_bind_without_keys_before_opening_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HMEM_API_KEYS", raising=False)
    monkeypatch.delenv("HMEM_CONFIG", raising=False)
    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    data = tmp_path / "data"
    args = parser.parse_args(["serve", "--host", "0.0.0.0", "--port", "1", "--data", str(data)])
    with pytest.raises(ConfigError, match="refusing to serve without API keys"):
        args.func(args)
    assert not data.exists()  # no store was opened


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(tmp_path: Path, extra_env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMEM_")}
    env.update({"HMEM_VECTORS": "memory", "HF_HUB_OFFLINE": "1", **extra_env})
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "--port", str(port), "--data", str(tmp_path / "data")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"hmem serve exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("hmem serve did not come up")


def _stop(proc: subprocess.Popen[str], sig: int = signal.SIGINT) -> str:
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    return out


@pytest.mark.slow
def test_serve_without_keys_says_so_and_serves_loopback(tmp_path: Path) -> None:
    proc, url = _start(tmp_path, {})
    try:
        r = httpx.post(f"{url}/v1/users/u1/sessions/s1/messages",
                       json={"messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert r.status_code == 201
    finally:
        out = _stop(proc)
    assert "no API key configured (HMEM_API_KEYS)" in out
    assert "loopback" in out


@pytest.mark.slow
def test_serve_with_keys_requires_them(tmp_path: Path) -> None:
    proc, url = _start(tmp_path, {"HMEM_API_KEYS": "k1,k2:alice"})
    try:
        assert httpx.get(f"{url}/v1/users/alice/sessions", timeout=10).status_code == 401
        ok = httpx.get(f"{url}/v1/users/alice/sessions", headers={"Authorization": "Bearer k2"}, timeout=10)
        assert ok.status_code == 200
        assert httpx.get(f"{url}/v1/users/bob/sessions", headers={"Authorization": "Bearer k2"},
                         timeout=10).status_code == 403
    finally:
        out = _stop(proc, signal.SIGTERM)  # what a process manager sends: still a clean exit
    assert "hmem server stopped" in out
    assert "no API key" not in out
    assert "2 API key(s), 1 bound to one user" in out


@pytest.mark.slow
def test_serve_start_up_log_masks_store_passwords_and_secret_parameters(tmp_path: Path) -> None:
    import redis

    # The shared Redis needs no password, so a password in the URL is accepted and unused.
    url = REDIS_URL.replace("redis://", "redis://:hunter2@", 1) + "?password=hunter2"
    prefix = new_prefix()
    proc, _ = _start(tmp_path, {"HMEM_REDIS_URL": url, "HMEM_REDIS_PREFIX": prefix})
    try:
        out = _stop(proc)
    finally:
        delete_prefix(redis.Redis.from_url(REDIS_URL), prefix)
    assert "hmem serving" in out and "hunter2" not in out
    assert "sessions redis://:****@" in out and "?password=****" in out


def test_serve_settings_error_does_not_echo_an_unencoded_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HMEM_CONFIG", raising=False)
    monkeypatch.setenv("HMEM_REDIS_URL", "redis://:hun#ter?2/x@127.0.0.1:6379/0")
    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["serve", "--port", "1", "--data", str(tmp_path / "data")])
    with pytest.raises(ConfigError) as info:
        args.func(args)
    assert "ter?2" not in str(info.value) and "hun" not in str(info.value) and "percent-encode" in str(info.value)
