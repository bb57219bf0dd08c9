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

import hashlib
import math
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from process_helpers import reap
from redis.cluster import RedisCluster

from hmem.backends.redis.client import ReplicaWait, connect_redis

NODES = 6
#: Every write waits for one replica (``HMEM_REDIS_WAIT_REPLICAS=1``): the WAIT path the
#: contract suites run on the cluster (a pipeline on the slot's master, or MULTI/EXEC/WAIT
#: on the watched connection).
WAIT_ONE = ReplicaWait(1, 2000)
_ARGV: dict[int, list[str]] = {}  # port -> how its redis-server was started (for restart_node)
_BUS_OFFSET = 10000  # Redis Cluster's node-to-node bus listens on port + 10000
_START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ClusterInfo:
    """A running test cluster: its ports, the URL hmem connects with, and how long
    it took to start (reported by the tests)."""

    ports: tuple[int, ...]
    url: str
    startup_seconds: float
    #: port -> its redis-server process, for the failover tests (:func:`kill_node`)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, compare=False, repr=False)


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
    procs: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for port in ports:
            argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                    "--cluster-config-file", str(workdir / f"nodes-{port}.conf"), "--cluster-node-timeout", "2000",
                    "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", str(workdir),
                    # replicas sync at once (default: 5 s later); a replica that never synced cannot take over
                    "--repl-diskless-sync-delay", "0",
                    "--enable-debug-command", "local",  # lag_replicas uses DEBUG SLEEP
                    "--logfile", str(workdir / f"redis-{port}.log")]
            procs[port] = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _ARGV[port] = argv
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
        _wait("every replica in sync with its master", lambda: all(map(_replica_synced, ports)), deadline)
        yield ClusterInfo(tuple(ports), f"redis://127.0.0.1:{ports[0]}/0", time.monotonic() - started, procs)
    finally:
        for proc in procs.values():  # restart_node may have replaced some
            proc.terminate()
        for proc in procs.values():
            reap(proc, 10)
        shutil.rmtree(workdir, ignore_errors=True)


def _replica_synced(port: int) -> bool:
    """True for a master, or a replica whose link to its master is up."""
    info = _cli(port, "info", "replication")
    return "role:master" in info or "master_link_status:up" in info


def _masters_with_slots(port: int) -> dict[int, str]:
    """port -> slot ranges of every master holding slots, as the node on ``port`` sees it
    (a failed master keeps its slots here until its replica takes them over)."""
    owners: dict[int, str] = {}
    for line in _cli(port, "cluster", "nodes").splitlines():
        parts = line.split()
        if len(parts) > 8 and "master" in parts[2]:
            owners[int(parts[1].split("@")[0].rsplit(":", 1)[1])] = " ".join(parts[8:])
    return owners


def master_port_of(cluster: ClusterInfo, key: str) -> int:
    """The port of the master that serves ``key``'s slot now."""
    live = [p for p in cluster.ports if cluster.processes.get(p) is None or cluster.processes[p].poll() is None]
    slot = int(_cli(live[0], "cluster", "keyslot", key).strip())
    for port, ranges in _masters_with_slots(live[0]).items():
        for part in ranges.split():
            low, _, high = part.partition("-")
            if part[0].isdigit() and int(low) <= slot <= int(high or low):
                return port
    raise RuntimeError(f"no master serves slot {slot} of {key!r}")


def replica_ports_of(master_port: int) -> list[int]:
    """Ports of the replicas of the master on ``master_port``."""
    lines = _cli(master_port, "cluster", "nodes").splitlines()
    me = next(ln.split()[0] for ln in lines if "myself" in ln)
    return [int(ln.split()[1].split("@")[0].rsplit(":", 1)[1]) for ln in lines if ln.split()[3] == me]


def lag_replicas(master_port: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """Make the master's replicas fall behind for ``seconds``: each replica sleeps
    (``DEBUG SLEEP``) and the master drops its links to them (``CLIENT KILL TYPE
    replica``), so the master's writes meanwhile exist on the master only, the window in
    which a crash loses acknowledged writes. (On loopback replication is otherwise too
    fast for a crash to ever lose one.) Returns the sleeping ``redis-cli`` processes."""
    sleepers = [subprocess.Popen(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "debug", "sleep", str(seconds)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for port in replica_ports_of(master_port)]
    time.sleep(0.05)  # the DEBUG SLEEP has started
    _cli(master_port, "client", "kill", "type", "replica")
    return sleepers


def kill_node(cluster: ClusterInfo, port: int) -> None:
    """SIGKILL the node on ``port``: a crash, no goodbye to clients or replicas."""
    proc = cluster.processes[port]
    proc.kill()
    proc.wait(timeout=10)


def restart_node(cluster: ClusterInfo, port: int, timeout_s: float = 30.0) -> None:
    """Start the killed node on ``port`` again; its nodes.conf makes it rejoin, as a
    replica of the master that replaced it. Returns once that replica is in sync."""
    cluster.processes[port] = subprocess.Popen(_ARGV[port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def in_sync() -> bool:
        return "role:slave" in _cli(port, "info", "replication") and _replica_synced(port)

    _wait(f"the restarted node on port {port} to sync as a replica", in_sync, time.monotonic() + timeout_s)


def wait_for_failover(cluster: ClusterInfo, dead_port: int, timeout_s: float = 30.0) -> float:
    """Seconds until every live node reports ``cluster_state:ok`` and a slot map, shared by
    all of them, in which ``dead_port`` serves no slot (its replica took over)."""
    started = time.monotonic()
    live = [p for p in cluster.ports if p != dead_port and cluster.processes[p].poll() is None]

    def promoted() -> bool:
        return _slot_maps_agree(live) and dead_port not in _masters_with_slots(live[0])

    _wait(f"a replica of the node on port {dead_port} to be promoted", promoted, started + timeout_s)
    return time.monotonic() - started


class HashEmbedder:
    """A deterministic bag-of-words embedder (no model) for tests where storage, not
    ranking, is under test: loading torch would only slow the cluster tests down."""

    model_name = "test-hash-64"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in text.lower().split():
                vec[int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


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
