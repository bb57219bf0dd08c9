"""Append latency with background compaction vs foreground vs none.

Appends N messages to one session (SQLite file, the embedded default, and memory),
calling the compactor after each append the way ``Memory.add()`` does, and reports
p50 / p95 / max of the append call (append + submit/compact) in milliseconds.

  none        append only (no summary at all: the floor)
  background  append + a ``compact`` job on a JobEngine, coalesced per session (what Memory
              does with compaction="background": the engine's thread folds while we append;
              the job queue is SQLite in the same file for sqlite, in memory for memory)
  foreground  append + Compactor.compact() (the caller pays for the fold)

The summarizer is the offline extractive one; ``--llm-delay`` adds a local scripted
OpenAI-compatible server answering after that many seconds, to show what a slow LLM
does to each mode. Ratios are vs ``none`` in the same run.

Usage::

    .venv/bin/python bench/bench_compaction.py --messages 1000
    .venv/bin/python bench/bench_compaction.py --messages 1000 --llm-delay 0.2 --backends sqlite
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hmem.backends.memory.jobs import MemoryJobQueue
from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.memory.summaries import MemorySummaryStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.jobs import SqliteJobQueue
from hmem.backends.sqlite.sessions import SqliteSessionStore
from hmem.backends.sqlite.summaries import SqliteSummaryStore
from hmem.jobs import JobEngine, JobKind
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.session.compaction import Compactor
from hmem.session.summarizer import Summarizer
from hmem.session.window import hybrid_window
from hmem.testing.llm_server import ScriptedLLMServer, ScriptedReply
from hmem.tokens import get_tokenizer
from hmem.types import Job, JobSpec, Message

TOK = get_tokenizer("gpt-4o-mini")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(mode: str, backend: str, *, n: int, budget: int, llm: Any, tmp: Path, pace_s: float) -> dict[str, float]:
    if backend == "sqlite":
        db = SqliteDatabase(tmp / f"{mode}-{time.monotonic_ns()}.db")
        sessions: Any = SqliteSessionStore(db)
        summaries: Any = SqliteSummaryStore(db)
        queue: Any = SqliteJobQueue(db)
    else:
        sessions, summaries, queue = MemorySessionStore(), MemorySummaryStore(), MemoryJobQueue()
    archived: list[int] = []
    compactor = Compactor(
        sessions,
        summaries,
        Summarizer(llm, TOK),
        lambda msgs: hybrid_window(msgs, TOK, budget),
        archive=lambda u, s, msgs: archived.append(len(msgs)),
    )

    def compact_jobs(jobs: Sequence[Job]) -> None:
        for job in jobs:
            compactor.compact(job.user_id, job.payload["session"])

    engine = JobEngine(queue)
    engine.register(JobKind("compact", compact_jobs, coalesce=True))
    after: Callable[[], object] = {
        "none": lambda: None,
        "background": lambda: engine.submit([JobSpec("compact", "u", {"session": "s"}, key="s")]),
        "foreground": lambda: compactor.compact("u", "s"),
    }[mode]
    latencies: list[float] = []
    for i in range(n):
        m = Message(role="user" if i % 2 == 0 else "assistant", content=f"Turn {i}: I paid {i} euros in Oslo on 2 June.", id=f"m{i}")
        t0 = time.perf_counter()
        sessions.append("u", "s", [m])
        after()
        latencies.append((time.perf_counter() - t0) * 1000)
        if pace_s:
            time.sleep(pace_s)  # a conversation's pace: the engine runs between appends
    engine.close(timeout=None)
    assert engine.report()["quarantined"] == [], "a compaction failed"
    buffer = len(sessions.load("u", "s").messages)
    assert buffer + sum(archived) == n, "lost or duplicated messages"
    return {
        "p50": statistics.median(latencies),
        "p95": pct(latencies, 0.95),
        "max": max(latencies),
        "compactions": len(archived),
        "buffer": buffer,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--budget", type=int, default=400, help="hybrid window budget in tokens")
    parser.add_argument("--llm-delay", type=float, default=0.0, help="seconds per LLM summary (0 = offline)")
    parser.add_argument("--backends", default="sqlite,memory")
    parser.add_argument("--pace-ms", type=float, default=1.0, help="pause between appends (not timed)")
    args = parser.parse_args()
    server = None
    llm = None
    if args.llm_delay > 0:
        server = ScriptedLLMServer().start()
        server.respond_with(lambda req: ScriptedReply(text="The user paid several amounts in Oslo.", delay_s=args.llm_delay))
        llm = OpenAICompatibleLLM(base_url=server.base_url, api_key="k", model="bench", timeout=30)
    summarizer_name = f"LLM (local server, {args.llm_delay * 1000:.0f} ms/answer)" if llm else "offline extractive"
    print(
        f"{args.messages} appends to one session, {args.pace_ms:g} ms apart; hybrid window budget "
        f"{args.budget} tokens; summarizer: {summarizer_name}"
    )
    print(f"{'backend':8} {'mode':11} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>9} {'p95 / none':>10} {'compactions':>11}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for backend in args.backends.split(","):
                base: dict[str, float] | None = None
                for mode in ("none", "background", "foreground"):
                    r = run(mode, backend, n=args.messages, budget=args.budget, llm=llm, tmp=Path(tmp), pace_s=args.pace_ms / 1000)
                    base = base or r
                    print(
                        f"{backend:8} {mode:11} {r['p50']:8.3f} {r['p95']:8.3f} {r['max']:9.1f} "
                        f"{r['p95'] / base['p95']:9.2f}x {int(r['compactions']):11d}"
                    )
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
