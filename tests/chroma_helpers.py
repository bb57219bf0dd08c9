"""A real ``chroma run`` server on a free loopback port, for contract and
integration tests. Import the fixture into a test module
(``from chroma_helpers import chroma_server``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from process_helpers import reap


@dataclass(frozen=True)
class ChromaServer:
    host: str
    port: int
    path: Path
    process: subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chroma_exe() -> str:
    exe = Path(sys.executable).with_name("chroma")
    found = str(exe) if exe.exists() else shutil.which("chroma")
    if not found:
        pytest.fail("the `chroma` CLI is not installed (pip install chromadb)")
    return found


def start_chroma(path: Path, timeout_s: float = 60.0) -> ChromaServer:
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [_chroma_exe(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"chroma run exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1) as resp:
                if resp.status == 200:
                    return ChromaServer("127.0.0.1", port, path, proc)
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    pytest.fail(f"chroma run did not answer its heartbeat within {timeout_s}s")


def stop_chroma(server: ChromaServer) -> None:
    server.process.terminate()
    reap(server.process, 10)


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    server = start_chroma(tmp_path_factory.mktemp("chroma-server"))
    try:
        yield server
    finally:
        stop_chroma(server)
