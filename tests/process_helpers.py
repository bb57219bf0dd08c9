"""Stopping the servers and workers the tests start as subprocesses."""

from __future__ import annotations

import subprocess
from typing import Any


def reap(proc: subprocess.Popen[Any], timeout: float) -> None:
    """Wait up to ``timeout`` seconds for ``proc`` to exit (after a terminate or a quit
    command), then kill it, so no test leaves a process behind."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
