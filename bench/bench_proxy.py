"""Overhead of the memory proxy (``POST /v1/chat/completions``) over calling the
upstream directly, at 10k long-term items per user.

One process: :class:`~hmem.testing.ScriptedLLMServer` is the upstream (it answers at
once, so the difference is hmem's work: store the turn, recall over 10k items,
assemble, forward, store the reply); the proxy is a real uvicorn on loopback. Each
round sends a new user turn both ways (direct first, then through the proxy) with an
``httpx.Client``; p50/p95 over the rounds. Filler items get seeded vectors
(see ``bench_memory.BenchEmbedder``); every query is embedded by the real model.
``--pause-ms`` waits between rounds, as a user reads and types: the proxy appends both
turns and queues their archiving on the Memory's worker, which runs in that pause (back
to back, it competes with the next round for the CPU).

    .venv/bin/python bench/bench_proxy.py                     # 10k items, 200 rounds
    .venv/bin/python bench/bench_proxy.py --items 1000 --rounds 50
    .venv/bin/python bench/bench_proxy.py --pause-ms 500        # think time between turns
"""

from __future__ import annotations

import argparse
import contextlib
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
    parser.add_argument("--pause-ms", type=float, default=0.0, help="unmeasured pause after each round")
    parser.add_argument("--warm-up", action="store_true",
                        help="Memory.warm_up() first, as `hmem proxy --warm-up` does at start-up: models loaded "
                             "and run, then gc.freeze() (the user's indexes load later, on the first request)")
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
            if args.warm_up:
                memory.warm_up()
            emb.real.embed(["warm up the model"])
            emb.fake = True
            count, fill_s = fill(parts.longterm, USER, args.items, rng, 0)
            # The filler's sentence keys are built behind; build them now, with the same seeded
            # vectors, or the rounds would race a 20k-sentence background build for the CPU
            # (the proxy's context span measured 262-332 ms that way instead of ~30).
            parts.longterm.flush_keys(3600)
            emb.fake = False
            print(f"filled {parts.longterm.count(USER):,} items in {fill_s:.0f} s")
            upstream.respond_with(lambda request: upstream_reply(rng))
            with contextlib.ExitStack() as stack:
                app = create_app(memory, settings, proxy=ProxyOptions(upstream=upstream.base_url))
                urls = {"through the hmem proxy": stack.enter_context(serve_in_thread(app)) + "/v1"}
                http = stack.enter_context(httpx.Client(timeout=60))
                direct, proxied = run(http, upstream.base_url, urls, args.rounds, args.warmup, rng=rng,
                                      pause_s=args.pause_ms / 1000)
            embed_s = []  # the floor the overhead is held to: one new query embedded by the same model
            for _ in range(max(20, args.rounds // 2)):
                t0 = time.perf_counter()
                emb.real.embed_query([sentence(rng)])
                embed_s.append(time.perf_counter() - t0)
        finally:
            memory.close()
    print(f"\n{args.rounds} rounds at {count:,} items per user, settings {overrides or 'default'}, "
          f"pause {args.pause_ms:g} ms, warm-up {'on' if args.warm_up else 'off'}\n")
    print("| path | p50 ms | p95 ms |")
    print("| --- | --- | --- |")
    print(f"| upstream directly | {ms(direct, 50):.1f} | {ms(direct, 95):.1f} |")
    for name, (times, _) in proxied.items():
        overhead = [p - d for d, p in zip(direct, times, strict=True)]
        print(f"| {name} | {ms(times, 50):.1f} | {ms(times, 95):.1f} |")
        print(f"| overhead (paired) | {statistics.median(overhead) * 1000:.1f} | {ms(overhead, 95):.1f} |")
    print(f"| one query embedding (same run) | {ms(embed_s, 50):.1f} | {ms(embed_s, 95):.1f} |")
    for name, (times, _) in proxied.items():
        overhead = [p - d for d, p in zip(direct, times, strict=True)]
        print(f"\n{name}: overhead p50 = {statistics.median(overhead) / statistics.median(embed_s):.2f}x "
              "one query embedding")
    print("\nwhere the proxy's time went (its Server-Timing header), p50 / p95 ms:\n")
    names = list(next(iter(proxied.values()))[1])
    print("| path | " + " | ".join(names) + " |")
    print("| --- " * (len(names) + 1) + "|")
    for name, (_, spans) in proxied.items():
        cells = [f"{ms(spans[n], 50):.1f} / {ms(spans[n], 95):.1f}" for n in names]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


def upstream_reply(rng: random.Random) -> ScriptedReply:
    return ScriptedReply("text", sentence(rng))


Timings = tuple[list[float], dict[str, list[float]]]  # wall times; Server-Timing spans by name (seconds)


def run(http: httpx.Client, direct_url: str, proxy_urls: dict[str, str], rounds: int, warmup: int, *,
        rng: random.Random, pause_s: float = 0.0) -> tuple[list[float], dict[str, Timings]]:
    """Each round: the upstream directly, then every proxy (own session each; the order
    rotates per round). Each proxy's new user message gets its own suffix: the embedder's
    cache must not let one proxy reuse the vectors another one just computed."""
    direct: list[float] = []
    proxied: dict[str, Timings] = {name: ([], {}) for name in proxy_urls}
    chat: list[dict[str, str]] = []
    for i in range(warmup + rounds):
        chat = [*chat[-8:], {"role": "user", "content": question(rng)}]
        body = {"model": "gpt-4o-mini", "max_tokens": 2000, "user": USER, "messages": chat}
        t0 = time.perf_counter()
        http.post(f"{direct_url}/chat/completions", json=body).raise_for_status()
        if i >= warmup:
            direct.append(time.perf_counter() - t0)
        content = ""
        order = list(enumerate(proxy_urls.items()))
        for n, (name, url) in order[i % len(order):] + order[:i % len(order)]:
            own = {**body, "messages": [*chat[:-1], {"role": "user", "content": f"{chat[-1]['content']} ({n})"}]}
            t1 = time.perf_counter()
            answer = http.post(f"{url}/chat/completions", json=own, headers={"X-Hmem-Session": f"live{n}"})
            t2 = time.perf_counter()
            answer.raise_for_status()
            content = content or answer.json()["choices"][0]["message"]["content"]
            if i >= warmup:
                proxied[name][0].append(t2 - t1)
                for part in answer.headers["server-timing"].split(","):
                    span, _, dur = part.strip().partition(";dur=")
                    proxied[name][1].setdefault(span, []).append(float(dur) / 1000)
        chat.append({"role": "assistant", "content": content})
        time.sleep(pause_s)
    return direct, proxied


if __name__ == "__main__":
    sys.exit(main())
