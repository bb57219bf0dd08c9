"""Overhead of the memory proxy (``POST /v1/chat/completions``) over calling the
upstream directly, at 10k long-term items per user.

One process: :class:`~hmem.testing.ScriptedLLMServer` is the upstream (it answers at
once, so the difference is hmem's work: store the turn, recall over 10k items,
assemble, forward, store the reply); the proxy is a real uvicorn on loopback. Each
round sends a new user turn both ways (direct first, then through the proxy) with an
``httpx.Client``; p50/p95 over the rounds. Filler items get seeded vectors
(see ``bench_memory.BenchEmbedder``); every query is embedded by the real model.

    .venv/bin/python bench/bench_proxy.py                     # 10k items, 200 rounds
    .venv/bin/python bench/bench_proxy.py --items 1000 --rounds 50
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import BenchEmbedder, fill, question, sentence  # a sibling script

from hmem.build import build_parts
from hmem.config import Settings
from hmem.memory import Memory
from hmem.server import create_app
from hmem.server.live import serve_in_thread
from hmem.server.proxy import ProxyOptions
from hmem.testing import ScriptedLLMServer, ScriptedReply

USER = "bench-user"


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000, help="long-term items of the user")
    parser.add_argument("--rounds", type=int, default=200, help="requests each way")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured rounds first")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a Settings override, e.g. extraction=background (repeatable)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    rng = random.Random(5)
    emb = BenchEmbedder()
    with tempfile.TemporaryDirectory(prefix="hmem-bench-proxy-") as tmp, ScriptedLLMServer() as upstream:
        overrides = dict(item.split("=", 1) for item in args.set)
        settings = Settings.from_env({}, data_dir=str(Path(tmp)), **overrides)
        parts = build_parts(settings, embedder=emb)
        memory = Memory(parts)
        try:
            emb.real.embed(["warm up the model"])
            emb.fake = True
            count, fill_s = fill(parts.longterm, USER, args.items, rng, 0)
            emb.fake = False
            print(f"filled {parts.longterm.count(USER):,} items in {fill_s:.0f} s")
            upstream.respond_with(lambda request: upstream_reply(rng))
            app = create_app(memory, settings, proxy=ProxyOptions(upstream=upstream.base_url))
            with serve_in_thread(app) as url, httpx.Client(timeout=60) as http:
                direct, proxied = run(http, upstream.base_url, url + "/v1", args.rounds, args.warmup, rng=rng)
        finally:
            memory.close()
    overhead = [p - d for d, p in zip(direct, proxied, strict=True)]
    print(f"\n{args.rounds} rounds at {count:,} items per user, settings {overrides or 'default'}\n")
    print("| path | p50 ms | p95 ms |")
    print("| --- | --- | --- |")
    print(f"| upstream directly | {ms(direct, 50):.1f} | {ms(direct, 95):.1f} |")
    print(f"| through the hmem proxy | {ms(proxied, 50):.1f} | {ms(proxied, 95):.1f} |")
    print(f"| overhead (paired) | {statistics.median(overhead) * 1000:.1f} | {ms(overhead, 95):.1f} |")
    return 0


def upstream_reply(rng: random.Random) -> ScriptedReply:
    return ScriptedReply("text", sentence(rng))


def run(http: httpx.Client, direct_url: str, proxy_url: str, rounds: int, warmup: int, *,
        rng: random.Random) -> tuple[list[float], list[float]]:
    direct: list[float] = []
    proxied: list[float] = []
    chat: list[dict[str, str]] = []
    for i in range(warmup + rounds):
        chat = [*chat[-8:], {"role": "user", "content": question(rng)}]
        body = {"model": "gpt-4o-mini", "max_tokens": 2000, "user": USER, "messages": chat}
        t0 = time.perf_counter()
        http.post(f"{direct_url}/chat/completions", json=body).raise_for_status()
        t1 = time.perf_counter()
        answer = http.post(f"{proxy_url}/chat/completions", json=body, headers={"X-Hmem-Session": "live"})
        t2 = time.perf_counter()
        answer.raise_for_status()
        chat.append({"role": "assistant", "content": answer.json()["choices"][0]["message"]["content"]})
        if i >= warmup:
            direct.append(t1 - t0)
            proxied.append(t2 - t1)
    return direct, proxied


if __name__ == "__main__":
    sys.exit(main())
