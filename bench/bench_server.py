"""HTTP load benchmark of ``hmem serve``: N concurrent clients x M requests appending
to K shared sessions, then reading them back; latency p50/p95/p99 and throughput.

The server runs as its own process (uvicorn, one worker) on a free loopback port; the
clients are httpx.AsyncClient tasks in this process. Every run ends with a loss
check: each session is read back and the stored message ids are compared with
what was acknowledged.

    .venv/bin/python bench/bench_server.py                         # redis + sqlite, 50 x 200 into 10 sessions
    .venv/bin/python bench/bench_server.py --backends redis --clients 20 --requests 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

KEY = "bench-" + secrets.token_hex(8)
SERVE = (
    "import argparse, sys\n"
    "from hmem.cli import serve_cmd\n"
    "p = argparse.ArgumentParser(prog='hmem'); serve_cmd.register(p.add_subparsers(dest='command'))\n"
    "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n"
)


@dataclass
class Phase:
    name: str
    latencies: list[float]
    errors: int
    seconds: float

    def row(self) -> str:
        lat = sorted(self.latencies)
        q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else lat * 99
        return (f"| {self.name:<28} | {len(lat):>6} | {self.errors:>4} | {len(lat) / self.seconds:>8.0f} | "
                f"{statistics.median(lat) * 1000:>7.1f} | {q[94] * 1000:>7.1f} | {q[98] * 1000:>7.1f} |")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(env_extra: dict[str, str], data: Path,
                 tuning: Mapping[str, object] | None = None) -> tuple[subprocess.Popen[bytes], str]:
    """``hmem serve`` on ``data``: ``env_extra`` adds HMEM_* variables (storage, models,
    keys), ``tuning`` adds tuning settings (``extract_facts``, ``archive_turns`` …) to the
    TOML file ``data``/hmem-bench.toml that HMEM_CONFIG names: hmem refuses those as variables."""
    port = _free_port()
    settings = {"extract_profile": False, "extract_facts": False, **(tuning or {})}
    data.mkdir(parents=True, exist_ok=True)
    config = data / "hmem-bench.toml"
    config.write_text("[hmem]\n" + "".join(f"{name} = {json.dumps(value)}\n" for name, value in settings.items()),
                      encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMEM_")}
    env.update({"HF_HUB_OFFLINE": "1", "HMEM_API_KEYS": KEY, "HMEM_VECTORS": "memory", "HMEM_COMPACTION": "off",
                "HMEM_CONFIG": str(config), **env_extra})
    proc = subprocess.Popen([sys.executable, "-c", SERVE, "serve", "--port", str(port), "--data", str(data),
                             "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not become ready")


async def run_phase(name: str, clients: int, requests: int,
                    call: Callable[[httpx.AsyncClient, int, int], Awaitable[httpx.Response]], url: str) -> Phase:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120,
                                 limits=limits) as http:

        async def one(n: int) -> None:
            nonlocal errors
            for i in range(requests):
                t0 = time.perf_counter()
                r = await call(http, n, i)
                latencies.append(time.perf_counter() - t0)
                errors += r.status_code >= 400

        started = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(clients)))
        return Phase(name, latencies, errors, time.perf_counter() - started)


async def bench_backend(label: str, url: str, args: argparse.Namespace) -> tuple[list[Phase], str]:
    user = "bench-user"

    def session(n: int, i: int) -> str:
        return f"s{(n + i) % args.sessions}"

    def append(http: httpx.AsyncClient, n: int, i: int) -> Awaitable[httpx.Response]:
        msg = {"role": "user", "content": f"client {n} says hello number {i}", "id": f"c{n}-{i}"}
        return http.post(f"/v1/users/{user}/sessions/{session(n, i)}/messages", json={"messages": [msg]})

    def history(http: httpx.AsyncClient, n: int, i: int) -> Awaitable[httpx.Response]:
        return http.get(f"/v1/users/{user}/sessions/{session(n, i)}/messages", params={"last_n": 20})

    def context(http: httpx.AsyncClient, n: int, i: int) -> Awaitable[httpx.Response]:
        return http.post(f"/v1/users/{user}/sessions/{session(n, i)}/context", json={"budget": 2000, "k": 0})

    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
        await context(http, 0, 0)  # warm-up: the tokenizer loads on first use, not part of the numbers
    phases = [await run_phase(f"{label}: append 1 msg", args.clients, args.requests, append, url)]
    reads = max(1, args.requests // 4)
    phases.append(await run_phase(f"{label}: history last 20", args.clients, reads, history, url))
    phases.append(await run_phase(f"{label}: context (no recall)", args.clients, reads, context, url))
    sent = {f"c{n}-{i}" for n in range(args.clients) for i in range(args.requests)}
    return phases, f"{label}: {await loss_check(url, user, args.sessions, sent)}"


async def loss_counts(url: str, user: str, sessions: int, sent: set[str]) -> tuple[int, int]:
    """(lost, duplicated) of the acknowledged message ids ``sent``, which must each be
    stored exactly once in sessions s0..s<n-1>."""
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
        seen: Counter[str] = Counter()
        for k in range(sessions):
            r = await http.get(f"/v1/users/{user}/sessions/s{k}/messages")
            seen.update(m["id"] for m in r.json()["messages"])
    return len(sent - set(seen)), sum(c - 1 for c in seen.values() if c > 1)


async def loss_check(url: str, user: str, sessions: int, sent: set[str]) -> str:
    """Every acknowledged message id of ``sent`` is stored exactly once in sessions s0..s<n-1>."""
    lost, dup = await loss_counts(url, user, sessions, sent)
    return f"{len(sent)} appended, {lost} lost, {dup} duplicated"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=200, help="appends per client")
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--backends", default="redis,sqlite", help="comma-separated: redis, sqlite")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = ap.parse_args()
    rows: list[Phase] = []
    checks: list[str] = []
    for backend in args.backends.split(","):
        prefix = f"hmembench-{secrets.token_hex(4)}"
        env = {"HMEM_REDIS_URL": args.redis_url, "HMEM_REDIS_PREFIX": prefix} if backend == "redis" else {}
        with tempfile.TemporaryDirectory() as tmp:
            proc, url = start_server(env, Path(tmp))
            try:
                phases, check = asyncio.run(bench_backend(backend, url, args))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
                if backend == "redis":
                    import redis

                    client = redis.Redis.from_url(args.redis_url)
                    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
                    if keys:
                        client.delete(*keys)
                    client.close()
        rows += phases
        checks.append(check)
    print(f"hmem serve: {args.clients} clients x {args.requests} appends into {args.sessions} sessions "
          f"(reads: {args.clients} x {max(1, args.requests // 4)}); {os.cpu_count()} CPUs, client and server share them")
    print("| phase                        |   reqs | errs |    req/s | p50 ms  | p95 ms  | p99 ms  |")
    print("|------------------------------|--------|------|----------|---------|---------|---------|")
    for phase in rows:
        print(phase.row())
    by = {p.name: p for p in rows}
    if "redis: append 1 msg" in by and "sqlite: append 1 msg" in by:
        r, s = by["redis: append 1 msg"], by["sqlite: append 1 msg"]
        ratio = (len(r.latencies) / r.seconds) / (len(s.latencies) / s.seconds)
        print(f"\nappend throughput redis / sqlite: {ratio:.2f}x "
              f"(p50 {statistics.median(r.latencies) / statistics.median(s.latencies):.2f}x)")
    print()
    for check in checks:
        print(check)


if __name__ == "__main__":
    main()
