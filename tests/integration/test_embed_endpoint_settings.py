"""``HMEM_EMBED_PROVIDER=openai`` without a key (issue 32, defect 9): refused at start with
the missing setting — by the settings, the CLI (a clean message, exit 1) and ``hmem
serve`` (which exits instead of serving 500s behind a ready ``/readyz``). An endpoint
of its own (``HMEM_EMBED_BASE_URL``, e.g. a local server) needs no key
(tests/integration/test_embed.py)."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hmem.cli.main import main
from hmem.config import Settings
from hmem.errors import ConfigError

pytestmark = pytest.mark.integration

NO_KEY = {"HMEM_EMBED_PROVIDER": "openai", "HMEM_EMBED_MODEL": "text-embedding-3-small"}
SAYS = "HMEM_EMBED_PROVIDER=openai needs HMEM_EMBED_API_KEY"


def test_settings_refuse_the_openai_api_without_a_key() -> None:
    with pytest.raises(ConfigError, match=SAYS):
        Settings.from_env(NO_KEY)
    assert Settings.from_env({**NO_KEY, "HMEM_EMBED_API_KEY": "sk-x"}).embed_api_key == "sk-x"


def test_the_cli_prints_the_missing_setting_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in {**NO_KEY, "HMEM_DATA_DIR": str(tmp_path), "HMEM_VECTORS": "memory"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HMEM_EMBED_API_KEY", raising=False)
    monkeypatch.delenv("HMEM_EMBED_BASE_URL", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main(["recall", "alice", "where do I live"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith(f"hmem: error: {SAYS}"), err
    assert "Traceback" not in err


def test_hmem_serve_refuses_to_start(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {key: value for key, value in os.environ.items() if not key.startswith("HMEM_")}
    env.update(NO_KEY)
    exe = Path(sys.executable).with_name("hmem")
    run = subprocess.run([str(exe), "serve", "--port", str(port), "--data", str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1 and SAYS in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
