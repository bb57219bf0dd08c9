"""Background work: add() returns once the messages are stored, while a slow LLM
extracts the profile in a durable ``after_add`` job of the Memory's engine (hmem.jobs);
flush() waits for it; nothing is lost. Compaction is a job kind of its own (``compact``),
keyed by session: repeated requests for a session whose compaction waits in the queue
coalesce into one run. Per kind, one user's jobs run in order, one batch at a time.

One add() can choose where its pipeline runs; a full backlog makes background adds wait.
The engine as the pipeline relies on it: close() runs what waits, a failing job is set
aside without stopping the user's later jobs, wait_below() holds a producer, one user's
held job does not hold another user's.

Bad input tried: a job submitted to a closed engine (InvalidInput, nothing runs); a kind
with lanes=0 (ConfigError); a per-call ``extraction`` of "later", "", True or 1
(InvalidInput, nothing stored).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hmem._pipeline import AFTER_ADD, COMPACT, WORKER_LANES, AfterAppend
from hmem.backends.memory.jobs import MemoryJobQueue
from hmem.backends.sentence_keys import KIND as SENTENCE_KEYS
from hmem.build import build_parts
from hmem.config import Settings
from hmem.errors import ConfigError, InvalidInput
from hmem.jobs import JobEngine, JobKind, RetryPolicy
from hmem.memory import Memory
from hmem.session.compaction import CompactionResult, Compactor
from hmem.testing.llm_server import ScriptedLLMServer, ScriptedReply
from hmem.types import Job, JobSpec, Message

pytestmark = pytest.mark.slow

LLM_DELAY_S = 0.6


def _answer(request: Any) -> ScriptedReply:
    """Profile extraction asks for {"updates": …}, fact extraction for {"facts": …}."""
    time.sleep(LLM_DELAY_S)
    system = str(request.body["messages"][0]["content"])
    if "profile" in system:
        body = {"updates": [{"key": "location", "operation": "set", "value": "Lisbon", "confidence": 0.9,
                             "evidence": "I live in Lisbon"}]}
    else:
        body = {"facts": [{"kind": "fact", "text": "The user lives in Lisbon.", "importance": 0.7}]}
    return ScriptedReply("text", json.dumps(body))


def test_add_returns_before_a_slow_llm_extraction_and_flush_waits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="hmem.jobs")
    with ScriptedLLMServer() as server:
        server.respond_with(_answer)
        settings = Settings.from_env(
            {}, data_dir=str(tmp_path), vectors="memory", extraction="background",
            llm_base_url=server.base_url, llm_api_key="test", llm_model="test-model",
        )
        mem = Memory.from_settings(settings)
        try:
            # The embedding model loads on first use (seconds); this test times add()
            # against the LLM, so it loads first (alone, add() paid for the load).
            mem.warm_up()
            started = time.perf_counter()
            result = mem.add("u1", "s1", [{"role": "user", "content": "I live in Lisbon now."}])
            elapsed = time.perf_counter() - started
            # two LLM calls (profile + facts) take >= 1.2 s; add() must not wait for them
            assert elapsed < LLM_DELAY_S, f"add() blocked for {elapsed:.2f}s"
            assert result.profile is None and result.facts == ()
            assert [m.content for m in mem.history("u1", "s1")] == ["I live in Lisbon now."]
            assert mem.flush(30)
            entry = mem.profile.get("u1", "location")
            assert entry is not None and entry.value == "Lisbon"
            assert any(it.text.startswith("The user lives in Lisbon (as of ") for it in mem.items("u1"))
            assert not [r for r in caplog.records if r.name == "hmem.jobs"]  # no background job failed
            assert mem._engine.report()["quarantined"] == []
        finally:
            mem.close()


def test_background_pipeline_keeps_order_and_loses_nothing(tmp_path: Path) -> None:
    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory", extraction="background",
                                 buffer_tokens=300, summary_min_messages=4, compaction="foreground")
    mem = Memory.from_settings(settings)
    try:
        sent = []
        for i in range(40):
            mid = f"m{i}"
            sent.append(mid)
            mem.add("u1", "s1", [{"role": "user", "content": f"note {i} about the garden", "id": mid}])
        assert mem.flush(60)
        turns = {it.source_message_id for it in mem.items("u1") if it.kind == "turn"}
        assert turns == set(sent)  # every turn archived exactly once (deterministic ids)
        assert sum(1 for it in mem.items("u1") if it.kind == "turn") == len(sent)
        buffered = [m.id for m in mem.history("u1", "s1")]
        summary = mem.summary("u1", "s1")
        assert summary is not None and summary.folded_count + len(buffered) == len(sent)
        assert buffered == sent[-len(buffered):]
    finally:
        mem.close()


class GatedCompactor(Compactor):
    """A real compactor whose first run waits for ``gate``, counting its runs."""

    def __init__(self, base: Compactor) -> None:
        super().__init__(base.sessions, base.summaries, base.summarizer, base.policy, archive=base.archive)
        self.gate = threading.Event()
        self.runs = 0

    def compact(self, user_id: str, session_id: str) -> CompactionResult:
        self.runs += 1
        assert self.gate.wait(60)
        return super().compact(user_id, session_id)


def test_background_compaction_coalesces_per_session(tmp_path: Path) -> None:
    """While one compaction of the session runs (held), 29 more adds each ask for one: one
    more run follows, the other 28 requests coalesce into it. The work runs on the engine's
    threads, at most ``lanes`` per kind, and close() ends them."""
    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory", compaction="background",
                                 extraction="background", buffer_tokens=300, summary_min_messages=4,
                                 extract_facts=False, archive_turns="on_evict")
    parts = build_parts(settings)
    gated = GatedCompactor(parts.compactor)
    threads_before = set(threading.enumerate())
    mem = Memory(replace(parts, compactor=gated))
    try:
        sent = [f"m{i}" for i in range(30)]

        def add(mid: str) -> None:
            mem.add("u1", "s1", [{"role": "user", "content": f"note {mid} about the garden shed", "id": mid}])

        add(sent[0])
        deadline = time.monotonic() + 30
        while gated.runs == 0 and time.monotonic() < deadline:  # the first compaction now runs, held
            time.sleep(0.01)
        for mid in sent[1:]:  # each add's after_add job asks for a compaction again
            add(mid)
        # after_add is a kind of its own: its jobs do not queue behind the held compaction
        assert parts.engine.flush(60, kinds=[AFTER_ADD])
        counts = parts.engine.queue.counts()[COMPACT]
        assert gated.runs == 1 and (counts.running, counts.waiting) == (1, 1)  # the held run, one waiting for 29
        started = [t for t in set(threading.enumerate()) - threads_before if t.name.startswith("hmem")]
        assert started and all(t.name.startswith("hmem-jobs-") for t in started), [t.name for t in started]
        per_kind = Counter(t.name.removeprefix("hmem-jobs-").rsplit("-", 1)[0] for t in started)
        lanes = {AFTER_ADD: WORKER_LANES, COMPACT: WORKER_LANES, SENTENCE_KEYS: 1}
        assert set(per_kind) <= set(lanes) and all(n <= lanes[kind] for kind, n in per_kind.items()), per_kind
        gated.gate.set()
        assert mem.flush(60)
        assert gated.runs == 2, "29 more requests: one queued run, the rest coalesced into it"
        buffered = [m.id for m in mem.history("u1", "s1")]
        archived = {it.source_message_id for it in mem.items("u1", kinds="turn")}
        summary = mem.summary("u1", "s1")
        assert summary is not None and summary.folded_count == len(archived) == len(sent) - len(buffered)
        assert set(buffered) | archived == set(sent) and not set(buffered) & archived
    finally:
        gated.gate.set()
        mem.close()
    assert not any(t.is_alive() for t in started)  # close() ended the engine's threads


# -- the engine as the pipeline uses it (hmem.jobs; its own suite: tests/core/test_job_engine.py) --

FAST = RetryPolicy(attempts=2, first_s=0.01, max_s=0.05)


def _engine(run: Callable[[Sequence[Job]], None], **kind: Any) -> JobEngine:
    engine = JobEngine(MemoryJobQueue(), policy=FAST)
    engine.register(JobKind("k", run, **kind))
    return engine


def test_close_runs_the_waiting_jobs_then_refuses_more() -> None:
    ran: list[int] = []
    # idle_s: the job waits for a pause in submissions, which close() does not wait for
    engine = _engine(lambda jobs: ran.extend(j.payload["n"] for j in jobs), idle_s=30.0)
    engine.submit([JobSpec("k", "u1", {"n": 1})])
    engine.close()
    assert ran == [1]
    with pytest.raises(InvalidInput, match="closed"):
        engine.submit([JobSpec("k", "u1", {"n": 2})])
    assert ran == [1] and engine.queue.counts() == {}


def test_a_failing_job_is_set_aside_and_the_users_later_jobs_still_run() -> None:
    ran: list[int] = []

    def run(jobs: Sequence[Job]) -> None:
        for job in jobs:
            if job.payload["n"] == 1:
                raise RuntimeError("boom")
            ran.append(job.payload["n"])

    engine = _engine(run)
    engine.submit([JobSpec("k", "u1", {"n": 1}), JobSpec("k", "u1", {"n": 2})])  # one user: in order
    assert engine.flush(5)  # a quarantined job does not hold flush up
    [stuck] = engine.report("u1")["quarantined"]
    assert ran == [2] and stuck["attempts"] == FAST.attempts and "RuntimeError: boom" in stuck["error"]
    engine.close()


def test_wait_below_holds_a_producer_until_the_engine_has_room() -> None:
    gate = threading.Event()

    def held(jobs: Sequence[Job]) -> None:
        assert gate.wait(10)

    engine = _engine(held)
    engine.submit([JobSpec("k", "u1"), JobSpec("k", "u1")])
    counts = engine.queue.counts()["k"]
    assert counts.waiting + counts.running == 2
    assert engine.wait_below("k", 2, timeout=0.05) is False  # still two queued
    assert engine.wait_below("k", 3, timeout=0.05) is True
    gate.set()
    assert engine.wait_below("k", 1, timeout=5) and engine.queue.counts() == {}
    engine.close()


def test_lanes_run_users_side_by_side_and_each_user_keeps_its_order() -> None:
    """Two lanes: u0's first job is held, and u1's 20 jobs all run meanwhile; each user's
    jobs run in submission order. Bad input tried: lanes=0 (ConfigError)."""
    with pytest.raises(ConfigError, match="lanes >= 1"):
        JobKind("k", lambda jobs: None, lanes=0)
    gate = threading.Event()
    order: dict[str, list[int]] = {"u0": [], "u1": []}

    def run(jobs: Sequence[Job]) -> None:
        for job in jobs:
            if job.payload["n"] < 0:
                assert gate.wait(10)
            else:
                order[job.user_id].append(job.payload["n"])

    engine = _engine(run, lanes=2)
    engine.submit([JobSpec("k", "u0", {"n": -1})])
    engine.submit([JobSpec("k", user, {"n": n}) for n in range(20) for user in ("u0", "u1")])
    deadline = time.monotonic() + 10
    while len(order["u1"]) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == {"u0": [], "u1": list(range(20))}  # u1 finished while u0 was held
    gate.set()
    assert engine.flush(10) and order["u0"] == list(range(20))
    engine.close()


def test_one_add_can_choose_background_or_foreground_and_a_bad_choice_stores_nothing(tmp_path: Path) -> None:
    """The per-call ``extraction`` overrides the Memory's setting both ways. Bad input
    tried: "later", "", True and 1 (InvalidInput naming the field; the session stays empty)."""
    mem = Memory.open(tmp_path, vectors="memory", compaction="off")
    try:
        for bad in ("later", "", True, 1):
            with pytest.raises(InvalidInput, match="extraction must be") as caught:
                mem.add("u1", "s1", [{"role": "user", "content": "I keep bees"}], extraction=bad)  # type: ignore[arg-type]
            assert caught.value.field == "extraction"
        assert mem.history("u1", "s1") == [] and mem.items("u1") == []
        queued = mem.add("u1", "s1", [{"role": "user", "content": "I keep bees", "id": "b1"}], extraction="background")
        assert queued.profile is None and queued.fact_report is None  # queued: the foreground reports both
        assert [m.id for m in mem.history("u1", "s1")] == ["b1"]
        assert mem.flush(30)
        assert [it.source_message_id for it in mem.items("u1", kinds="turn")] == ["b1"]
    finally:
        mem.close()
    mem = Memory.open(tmp_path / "bg", vectors="memory", compaction="off", extraction="background")
    try:
        done = mem.add("u1", "s1", [{"role": "user", "content": "I live in Leeds", "id": "f1"}], extraction="foreground")
        location = mem.profile.get("u1", "location")
        assert done.profile is not None and location is not None and location.value == "Leeds"
        assert [it.source_message_id for it in mem.items("u1", kinds="turn")] == ["f1"]  # archived before add returned
    finally:
        mem.close()


def test_a_full_backlog_makes_the_next_background_add_wait(tmp_path: Path) -> None:
    parts = build_parts(Settings.from_env({}, data_dir=str(tmp_path), vectors="memory", compaction="off"))
    pipeline = AfterAppend(parts, max_backlog=2)
    kinds = {kind.name: kind for kind in pipeline.job_kinds()}
    gate = threading.Event()
    ran: list[str] = []

    def held(jobs: Sequence[Job]) -> None:  # the pipeline's own handler, once the gate opens
        assert gate.wait(30)
        kinds[AFTER_ADD].run(jobs)
        ran.extend(m["id"] for job in jobs for m in job.payload["messages"])

    parts.engine.register(replace(kinds[AFTER_ADD], run=held))
    parts.engine.register(kinds[COMPACT])
    msgs = [Message(role="user", content=f"hello {i}", id=f"m{i}") for i in range(3)]
    parts.sessions.append("u1", "s1", msgs)
    try:
        for msg in msgs[:2]:
            pipeline.run("u1", "s1", [msg], "background")  # room was there: fewer than 2 waiting or running
        blocked = threading.Thread(target=pipeline.run, args=("u1", "s1", [msgs[2]], "background"))
        blocked.start()
        blocked.join(0.3)
        counts = parts.engine.queue.counts()[AFTER_ADD]
        assert blocked.is_alive() and counts.waiting + counts.running == 2  # waits for room, queued nothing yet
        gate.set()
        blocked.join(10)
        assert not blocked.is_alive() and parts.engine.flush(30)
        assert ran == ["m0", "m1", "m2"] and parts.engine.report()["quarantined"] == []
    finally:
        gate.set()
        parts.engine.close()
        for close in parts.on_close:
            close()
