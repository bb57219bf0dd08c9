"""A throw-away ``redis-server`` on a free loopback port, for fault tests.

Never the shared server on 6379: a test may kill, stop or restart this one. With
``aof=True`` it appends every write to a file in ``workdir`` with ``fsync`` on
every write, so a ``SIGKILL`` loses nothing acknowledged and a restart on the
same port reloads it. With ``password`` it starts with ``--requirepass`` (``url``
then carries the password).

Example::

    srv = RedisServer(tmp_path, aof=True)
    srv.start()
    ...  # use srv.url
    srv.kill()
    srv.start()  # same port, same data
    srv.stop()
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import redis

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    """A loopback TCP port nothing listens on (right now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, workdir: Path, *, aof: bool = False, password: str | None = None) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.aof = aof
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        if REDIS_SERVER is None:
            raise RuntimeError("redis-server is not installed: apt-get install -y redis-server")
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--dir", str(self.workdir), "--logfile", str(self.workdir / "redis.log")]
        args += ["--appendonly", "yes", "--appendfsync", "always"] if self.aof else ["--appendonly", "no"]
        args += ["--requirepass", self.password] if self.password else []
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                # PING answers LOADING while the AOF is replayed; wait for a real PONG
                if redis.Redis(port=self.port, password=self.password, socket_connect_timeout=0.2).ping():
                    return
            except redis.exceptions.RedisError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not start; see {self.workdir / 'redis.log'}")

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, like a crash."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def signal(self, sig: int) -> None:
        """Send ``sig`` (e.g. SIGSTOP to make the server hang, SIGCONT to resume it)."""
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        """Kill the server if it still runs, stopped or not (for teardown)."""
        if self.proc is not None and self.proc.poll() is None:
            self.signal(signal.SIGCONT)
            self.kill()
