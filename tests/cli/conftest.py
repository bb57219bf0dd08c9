"""Fixtures of the CLI tests: run ``hmem`` in-process with captured output."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from cli_result import CliResult, Runner

from hmem.cli.main import main


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh store per test; in-memory vectors (the real model still embeds)."""
    folder = tmp_path / "store"
    monkeypatch.setenv("HMEM_DATA_DIR", str(folder))
    monkeypatch.setenv("HMEM_VECTORS", "memory")
    for name in ("HMEM_LLM_MODEL", "HMEM_LLM_BASE_URL", "HMEM_LLM_API_KEY", "HMEM_REDIS_URL", "HMEM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return folder


@pytest.fixture
def hmem(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Runner:
    """``hmem(*argv, stdin="...")`` runs the CLI in this process."""

    def run(*argv: str, stdin: str = "") -> CliResult:
        capsys.readouterr()  # drop anything printed before
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
