"""Write-path benchmark (issue #17 §2): ``Memory.add`` of one turn against the floor of
one encode call of the same model, measured in the same run; cold start; and
``hmem serve`` on Redis with concurrent clients appending, archiving on.

    .venv/bin/python bench/bench_write_path.py                      # everything
    .venv/bin/python bench/bench_write_path.py --skip-serve --profile 15
    .venv/bin/python bench/bench_write_path.py --only serve --clients 20 --requests 50

1. **floor vs add** (embedded default, ``Memory.open`` on a temp folder, the packaged
   MiniLM on CPU): for each of the 422 turns of ``data/``'s sample conversations, one
   at a time and interleaved (so machine noise hits both alike): the floor = one
   ``embed([turn])`` call of the model itself, then ``Memory.add`` of that turn
   (defaults: archive on add, offline profile + fact extraction, foreground compaction).
   The model is wrapped in a :class:`~hmem.testing.embedders.CountingEmbedder` passed
   in as the embedder, which counts the model calls each add makes.
2. **cold start** (a new process on the store of 1., plus two users with 1,000 archived
   turns each): ``Memory.open``, model load, the first recall of a 1k-item user, the
   first add of another 1k-item user, and the next adds; once with the model just
   loaded and run, once after ``Memory.warm_up()`` (model, tokenizer, offline rules).
3. **serve**: ``hmem serve`` (one uvicorn worker, its own process; helpers imported from
   ``bench_server.py``) on Redis, vectors in embedded Chroma, archiving on,
   extraction and compaction off; N clients each append M one-message turns; then
   every acknowledged turn must be in its session and archived exactly once.
``--profile N`` prints the N most expensive functions (cumulative) of the adds of 1.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import httpx
from tqdm import tqdm

from hmem.eval.datasets import load_sample
from hmem.eval.runner import conversation_batches
from hmem.memory import Memory
from hmem.protocols import Embedder
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.testing.embedders import CountingEmbedder
from hmem.types import Message

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import KEY, Phase, loss_counts, run_phase, start_server

BIG_USERS = ("cold-a", "cold-b")  # 1,000 archived turns each


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def pct(values: Sequence[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) >= 2 else values[0]


def sample_turns() -> list[tuple[str, str, Message]]:
    """(user, session, message) of every turn of the sample conversations, in order."""
    out = []
    for conv in load_sample().conversations:
        for session_id, messages in conversation_batches(conv):
            out.extend((conv.id, session_id, m) for m in messages)
    return out


def filler(user: str, n: int) -> list[Message]:
    rng = random.Random(user)
    words = ["trip", "dinner", "Lisbon", "sister", "project", "deadline", "bakery", "marathon", "piano", "garden", "cat", "doctor"]
    base = datetime(2024, 1, 1, tzinfo=UTC)
    return [Message(role="user" if i % 2 == 0 else "assistant", id=f"{user}-{i}",
                    content=f"turn {i}: " + " ".join(rng.choice(words) for _ in range(12)),
                    created_at=base + timedelta(minutes=i)) for i in range(n)]


# -- 1. floor vs add ---------------------------------------------------------------------


def make_model(name: str) -> Embedder:
    """The embedder measured: ``e5`` (multilingual-e5-small on onnxruntime, the default
    since #34), ``minilm`` (sentence-transformers on torch) or ``onnx`` (the same MiniLM as
    int8 ONNX, ``HMEM_EMBED_PROVIDER=onnx``)."""
    if name == "e5":
        from hmem.providers.e5 import E5Embedder

        return E5Embedder()
    if name == "onnx":
        from hmem.providers.onnx import OnnxMiniLMEmbedder

        return OnnxMiniLMEmbedder()
    return SentenceTransformerEmbedder()


def floor_vs_add(data: Path, profile_top: int, limit: int | None = None, *, fill: bool = True,
                 embedder: str = "minilm", sentence_keys: bool = True) -> dict[str, Any]:
    model = make_model(embedder)
    counting = CountingEmbedder(model)
    mem = Memory.open(data, embedder=counting, sentence_keys=sentence_keys)
    try:
        mem.warm_up()
        model.embed(["load the model and run it once"])
        turns = sample_turns()[:limit]
        floor: list[float] = []
        adds: list[float] = []
        calls: list[int] = []
        profiler = cProfile.Profile() if profile_top else None
        for user, session, message in tqdm(turns, desc="floor + add", unit="turn", file=sys.stderr):
            t0 = time.perf_counter()
            model.embed([message.content or ""])
            floor.append(time.perf_counter() - t0)
            before = counting.calls
            if profiler:
                profiler.enable()
            t0 = time.perf_counter()
            mem.add(user, session, [message])
            adds.append(time.perf_counter() - t0)
            if profiler:
                profiler.disable()
            calls.append(counting.calls - before)
        for user in BIG_USERS if fill else ():  # the cold-start part reads these
            msgs = filler(user, 1000)
            for i in range(0, len(msgs), 200):
                mem.add(user, "history", msgs[i : i + 200])
        profile_text = ""
        if profiler:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(profile_top)
            profile_text = out.getvalue()
        return {"floor": floor, "adds": adds, "calls": calls, "profile": profile_text}
    finally:
        mem.close()


# -- 2. cold start (run in a child process) ------------------------------------------------


def cold_child(data: Path, warm: bool, embedder: str = "minilm") -> None:
    t0 = time.perf_counter()
    model = make_model(embedder)
    mem = Memory.open(data, embedder=model)
    opened = time.perf_counter() - t0
    t0 = time.perf_counter()
    if warm:
        mem.warm_up()
    else:
        model.embed(["load the model and run it once"])
    loaded = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        mem.recall(BIG_USERS[0], "when is the marathon?", 10)
        first_recall = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem.recall(BIG_USERS[0], "what did my sister bake?", 10)
        second_recall = time.perf_counter() - t0
        t0 = time.perf_counter()
        mem.add(BIG_USERS[1], "new", [{"role": "user", "content": "I signed up for a pottery class on Tuesdays."}])
        first_add = time.perf_counter() - t0
        later = []
        for i in range(10):
            t0 = time.perf_counter()
            mem.add(BIG_USERS[1], "new", [{"role": "assistant" if i % 2 else "user",
                                           "content": f"Pottery note {i}: glaze the bowl {i} times."}])
            later.append(time.perf_counter() - t0)
    finally:
        mem.close()
    print(json.dumps({"open": opened, "model": loaded, "first_recall": first_recall,
                      "second_recall": second_recall, "first_add": first_add,
                      "later_add_p50": statistics.median(later)}))


def cold_start(data: Path, warm: bool, embedder: str = "minilm") -> dict[str, float]:
    command = [sys.executable, __file__, "--cold-child", str(data), "--embedder", embedder,
               *(["--warm"] if warm else [])]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


# -- 3. serve on Redis ---------------------------------------------------------------------


async def serve_appends(url: str, clients: int, requests: int, sessions: int,
                        users: int = 1) -> tuple[Phase, str, int]:
    """Client ``n`` appends to user ``n % users`` (one user: all 20 share its lock and its
    Chroma collection, the worst case; one user per client: the writes run side by side)."""

    def user_of(n: int) -> str:
        return "write-path" if users == 1 else f"write-path-{n % users}"

    def append(http: httpx.AsyncClient, n: int, i: int) -> Any:
        msg = {"role": "user" if i % 2 == 0 else "assistant", "id": f"c{n}-{i}",
               "content": f"client {n}, turn {i}: we talked about the {random.choice(['trip', 'piano', 'job'])} plan"}
        return http.post(f"/v1/users/{user_of(n)}/sessions/s{(n + i) % sessions}/messages", json={"messages": [msg]})

    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
        warm = await http.post("/v1/users/write-path-warm/sessions/w/messages",
                               json={"messages": [{"role": "user", "content": "warm up the model"}]})
        warm.raise_for_status()
    label = f"append 1 turn, {clients} clients" + (f", {users} users" if users > 1 else ", 1 user")
    phase = await run_phase(label, clients, requests, append, url)
    lost = dup = archived = 0
    for u in sorted({user_of(n) for n in range(clients)}):
        sent = {f"c{n}-{i}" for n in range(clients) if user_of(n) == u for i in range(requests)}
        user_lost, user_dup = await loss_counts(url, u, sessions, sent)
        lost, dup = lost + user_lost, dup + user_dup
        async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120) as http:
            listed = await http.get(f"/v1/users/{u}/items", params={"limit": 10_000})
            listed.raise_for_status()
            archived += len({it["source_message_id"] for it in listed.json()["items"] if it["kind"] == "turn"})
    return phase, f"{clients * requests} appended, {lost} lost, {dup} duplicated", archived


def serve(args: argparse.Namespace) -> tuple[Phase, str, int]:
    prefix = f"hmembench-{secrets.token_hex(4)}"
    env = {"HMEM_REDIS_URL": args.redis_url, "HMEM_REDIS_PREFIX": prefix, "HMEM_VECTORS": args.serve_vectors,
           **dict(kv.split("=", 1) for kv in args.serve_env)}
    tuning = {"archive_turns": "on_add", **dict(kv.split("=", 1) for kv in args.serve_set)}
    with tempfile.TemporaryDirectory(prefix="hmem-serve-") as tmp:
        proc, url = start_server(env, Path(tmp), tuning)
        try:
            return asyncio.run(serve_appends(url, args.clients, args.requests, args.sessions, args.users))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            import redis

            client = redis.Redis.from_url(args.redis_url)
            keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
            if keys:
                client.delete(*keys)
            client.close()


# -- main ------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["embedded", "serve"], default=None)
    ap.add_argument("--skip-serve", action="store_true")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions of add()")
    ap.add_argument("--turns", type=int, default=None, help="only the first N turns of data/ (default: all 422)")
    ap.add_argument("--skip-cold", action="store_true", help="skip the cold-start processes")
    ap.add_argument("--no-sentence-keys", action="store_true", help="sentence_keys=false (the baseline)")
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--requests", type=int, default=50, help="appends per client")
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--users", type=int, default=1, help="client n appends to user n %% USERS (default: all to one)")
    ap.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--serve-vectors", default="chroma", help="HMEM_VECTORS of the server (chroma, memory)")
    ap.add_argument("--serve-env", nargs="*", default=[], metavar="HMEM_X=V",
                    help="more server environment settings (storage, models, keys: hmem.config.ENV_SETTINGS)")
    ap.add_argument("--serve-set", nargs="*", default=[], metavar="NAME=V",
                    help="more server tuning settings (e.g. buffer_tokens=3000), in the server's HMEM_CONFIG file")
    ap.add_argument("--embedder", choices=["e5", "minilm", "onnx"], default="e5",
                    help="the model of the embedded part (floor and add; cold start): multilingual e5 (the default), "
                         "torch MiniLM or its int8 ONNX")
    ap.add_argument("--cold-child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cold_child:
        cold_child(args.cold_child, args.warm, args.embedder)
        return 0
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if args.only != "serve":
        with tempfile.TemporaryDirectory(prefix="hmem-write-") as tmp:
            res = floor_vs_add(Path(tmp) / "data", args.profile, args.turns, fill=not args.skip_cold,
                               embedder=args.embedder, sentence_keys=not args.no_sentence_keys)
            colds = [] if args.skip_cold else [cold_start(Path(tmp) / "data", warm, args.embedder)
                                               for warm in (False, True)]
        floor, adds, calls = res["floor"], res["adds"], res["calls"]
        f50, a50 = statistics.median(floor), statistics.median(adds)
        print(f"\n### Memory.add of one turn vs one encode call ({len(adds)} turns of data/, embedded default)\n")
        print("| measure | p50 ms | p95 ms | × floor p50 |")
        print("|---|---|---|---|")
        model_name = {"e5": "multilingual-e5-small, onnxruntime", "onnx": "MiniLM int8 ONNX"}.get(args.embedder,
                                                                                                  "MiniLM, torch")
        print(f"| floor: one encode call of the turn ({model_name}, CPU) | {ms(f50)} | {ms(pct(floor, 95))} | 1.00 |")
        print(f"| Memory.add of the turn | {ms(a50)} | {ms(pct(adds, 95))} | {a50 / f50:.2f} |")
        print(f"\nmodel calls per add: mean {statistics.mean(calls):.2f}, max {max(calls)}, "
              f"adds with more than one: {sum(c > 1 for c in calls)} of {len(calls)}")
        for key, label in (("open", "Memory.open on the existing store (imports included)"),
                           ("model", "model load + one encode / warm_up()"),
                           ("first_recall", "first recall, user with 1k items"),
                           ("second_recall", "second recall, same user"),
                           ("first_add", "first add, another user with 1k items"),
                           ("later_add_p50", "next 10 adds, p50")):
            if key == "open" and colds:
                print("\n### Cold start (a new process on that store; two users with 1,000 archived turns)\n")
                print("| step | ms, model loaded and run once | ms, after Memory.warm_up() |")
                print("|---|---|---|")
            if colds:
                print(f"| {label} | {ms(colds[0][key])} | {ms(colds[1][key])} |")
        if res["profile"]:
            print("\n### Profile of the adds (cumulative)\n")
            print(res["profile"])
    if args.only != "embedded" and not args.skip_serve:
        phase, check, archived = serve(args)
        print(f"\n### hmem serve on Redis (vectors {args.serve_vectors}), archiving on\n")
        print("| phase                        |   reqs | errs |    req/s | p50 ms  | p95 ms  | p99 ms  |")
        print("|------------------------------|--------|------|----------|---------|---------|---------|")
        print(phase.row())
        print(f"\n{check}; archived turns: {archived}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
