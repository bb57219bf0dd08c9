"""A real Redis Cluster on loopback for tests: three masters, three replicas.

:func:`redis_cluster` (session scope) starts six ``redis-server --cluster-enabled yes``
processes on free ports, joins them with ``redis-cli --cluster create …
--cluster-replicas 1``, waits until every node reports ``cluster_state:ok`` and
agrees on the slot map, and at the end terminates the processes and removes their
directory. It skips (with the reason) only when ``redis-server`` or ``redis-cli`` is
not installed. Nothing persists: ``--save "" --appendonly no``.

Import the fixtures into a test module (``from cluster_helpers import redis_cluster,
cluster_client_prefix``); pytest puts ``tests/`` on ``sys.path``.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis.cluster import RedisCluster

from hmem.backends.redis.client import connect_redis

NODES = 6
_BUS_OFFSET = 10000  # Redis Cluster's node-to-node bus listens on port + 10000
_START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ClusterInfo:
    """A running test cluster: its ports, the URL hmem connects with, and how long
    it took to start (reported by the tests)."""

    ports: tuple[int, ...]
    url: str
    startup_seconds: float


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """``count`` ports P free on 127.0.0.1 whose bus port P+10000 is free too."""
    rng = secrets.SystemRandom()
    ports: list[int] = []
    for _ in range(2000):
        port = rng.randrange(20000, 30000)
        if port not in ports and _port_free(port) and _port_free(port + _BUS_OFFSET):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise RuntimeError(f"found only {len(ports)} free port pairs for the test cluster")


def _cli(port: int, *args: str, timeout: float = 5.0) -> str:
    done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    return done.stdout


def _wait(what: str, ready: object, deadline: float) -> None:
    assert callable(ready)
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"test Redis Cluster: timed out waiting for {what}")
        time.sleep(0.05)


def _slot_maps_agree(ports: list[int]) -> bool:
    maps = set()
    for port in ports:
        info = _cli(port, "cluster", "info")
        if "cluster_state:ok" not in info:
            return False
        lines = _cli(port, "cluster", "nodes").splitlines()
        # Compare which node serves which slots, as each node sees it.
        maps.add(frozenset((ln.split()[0], " ".join(ln.split()[8:])) for ln in lines if "master" in ln))
    return len(maps) == 1


@contextmanager
def running_cluster() -> Iterator[ClusterInfo]:
    """Start the six-node cluster; stop it and delete its files on exit."""
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="hmem-cluster-"))
    ports = free_ports(NODES)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            procs.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", str(workdir / f"nodes-{port}.conf"), "--cluster-node-timeout", "2000",
                 "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", str(workdir),
                 "--logfile", str(workdir / f"redis-{port}.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))
        deadline = time.monotonic() + _START_TIMEOUT_S
        for port in ports:
            _wait(f"redis-server on port {port}", lambda p=port: _cli(p, "ping").strip() == "PONG", deadline)
        created = subprocess.run(
            ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
             "--cluster-replicas", "1", "--cluster-yes"],
            capture_output=True, text=True, timeout=_START_TIMEOUT_S, check=False,
        )
        if created.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout[-2000:]} {created.stderr[-2000:]}")
        _wait("cluster_state:ok and one slot map on every node", lambda: _slot_maps_agree(ports), deadline)
        yield ClusterInfo(tuple(ports), f"redis://127.0.0.1:{ports[0]}/0", time.monotonic() - started)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


_shared: list[ClusterInfo] = []


@pytest.fixture(scope="session")
def redis_cluster(request: pytest.FixtureRequest) -> ClusterInfo:
    """A real six-node Redis Cluster for the whole test session (see the module doc).

    Each test module imports this fixture, and pytest would make one "session" fixture
    per importing module; so the cluster is kept here and started once per process,
    and stopped when pytest finishes (``config.add_cleanup``)."""
    missing = [tool for tool in ("redis-server", "redis-cli") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"Redis Cluster tests need {' and '.join(missing)} on PATH (apt-get install redis-server)")
    if not _shared:
        stack = ExitStack()
        request.config.add_cleanup(stack.close)
        _shared.append(stack.enter_context(running_cluster()))
    return _shared[0]


def delete_prefix(client: RedisCluster, prefix: str) -> int:
    """Delete every key under ``prefix`` on every master (SCAN runs on each node)."""
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    for key in keys:  # keys of many users live in many slots: one DEL each
        client.delete(key)
    return len(keys)


@contextmanager
def cluster_client_prefix(cluster: ClusterInfo) -> Iterator[tuple[RedisCluster, str]]:
    """A client made by hmem's own ``connect_redis`` and a fresh key prefix whose keys
    are removed afterwards."""
    client = connect_redis(cluster.url, socket_timeout=5.0)
    assert isinstance(client, RedisCluster), f"connect_redis did not detect the cluster at {cluster.url}"
    prefix = f"hmemtest-{secrets.token_hex(6)}"
    try:
        yield client, prefix
    finally:
        delete_prefix(client, prefix)
        client.close()
