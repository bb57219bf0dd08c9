"""Issue 32, defect 6: one process per embedded data folder.

Embedded Chroma keeps its index in the memory of the process that opened it, so a second
opener of the folder — another process, or a second ``Memory`` in this one — is refused
at once with what to do (one process per folder; Redis and a Chroma server for many). The
lock is the operating system's: freed by ``close()`` and by the death of its holder,
however it dies. Sequential opens (``hmem demo --data D`` then ``hmem serve --data D``,
``hmem inspect`` after a server stopped) keep working.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from process_helpers import reap

from hmem.errors import BackendUnavailable
from hmem.memory import Memory

pytestmark = pytest.mark.integration

WHAT_TO_DO = ("one process at a time", "--data / HMEM_DATA_DIR", "HMEM_REDIS_URL", "HMEM_VECTORS=chroma://")

#: Opens the embedded default on a folder, says so, and waits for stdin to close.
HOLDER = (
    "import sys\n"
    "from hmem.memory import Memory\n"
    "mem = Memory.open(sys.argv[1])\n"
    "print('open', flush=True)\n"
    "sys.stdin.read()\n"
    "mem.close()\n"
)


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``hmem ARGV`` in a process of its own, with no HMEM_* setting (the embedded default)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMEM_")}
    return subprocess.run([sys.executable, "-m", "hmem", *argv], env={**env, "HF_HUB_OFFLINE": "1"},
                          capture_output=True, text=True, timeout=300, check=False)


def holder(folder: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open", proc.stderr
    return proc


def test_a_second_process_on_the_folder_is_refused_with_what_to_do(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    with Memory.open(folder) as mem:
        mem.add("u1", "s1", [{"role": "user", "content": "I keep bees on the roof."}])
        refused = cli("inspect", "u1", "s1", "--data", str(folder))
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.startswith(f"hmem: error: the data folder {folder} is in use by another process "
                                         f"(pid {os.getpid()})"), refused.stderr
        for advice in WHAT_TO_DO:
            assert advice in refused.stderr, advice
        assert "Traceback" not in refused.stderr
        assert [m.content for m in mem.history("u1", "s1")] == ["I keep bees on the roof."]  # the holder goes on
    shown = cli("inspect", "u1", "s1", "--data", str(folder), "--json")  # once closed, the next one opens
    assert shown.returncode == 0, shown.stderr
    assert "I keep bees on the roof." in shown.stdout


def test_a_second_memory_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = Memory.open(tmp_path)
    try:
        with pytest.raises(BackendUnavailable) as refused:
            Memory.open(tmp_path)
        assert f"the data folder {tmp_path} is already open in this process" in str(refused.value)
        assert "close that one first" in str(refused.value)
        first.add("u1", "s1", [{"role": "user", "content": "still mine"}])  # the refusal closed nothing of it
        assert [m.content for m in first.history("u1", "s1")] == ["still mine"]
    finally:
        first.close()
    with Memory.open(tmp_path) as second:  # freed by close()
        assert [m.content for m in second.history("u1", "s1")] == ["still mine"]


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    proc = holder(tmp_path)
    try:
        with pytest.raises(BackendUnavailable, match=rf"in use by another process \(pid {proc.pid}\)"):
            Memory.open(tmp_path)
        proc.send_signal(signal.SIGKILL)  # no close(), no atexit: only the OS frees the lock
        proc.wait(timeout=30)
    finally:
        reap(proc, 30)
    with Memory.open(tmp_path) as mem:
        assert mem.users() == []


def test_a_process_that_closes_frees_the_folder_for_the_next(tmp_path: Path) -> None:
    proc = holder(tmp_path)
    try:
        assert proc.stdin is not None
        proc.stdin.close()  # the holder closes its Memory and exits
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        reap(proc, 30)
    Memory.open(tmp_path).close()


def test_a_failed_open_leaves_the_folder_free(tmp_path: Path) -> None:
    # Redis on a port nobody listens on: the build fails after the folder was locked.
    with pytest.raises(BackendUnavailable, match="Redis"):
        Memory.open(tmp_path, sessions="redis://127.0.0.1:1/0", redis_timeout_s=0.5)
    Memory.open(tmp_path).close()


def test_stores_meant_for_several_processes_are_not_locked(tmp_path: Path) -> None:
    """SQLite alone (WAL) serves several processes: without embedded Chroma in the folder
    (here in-process vectors; in production a Chroma server) nothing is refused."""
    with Memory.open(tmp_path, vectors="memory") as one, Memory.open(tmp_path, vectors="memory") as two:
        one.add("u1", "s1", [{"role": "user", "content": "written by one"}])
        assert [m.content for m in two.history("u1", "s1")] == ["written by one"]
