"""Background work: add() returns once the messages are stored, while a slow LLM
extracts the profile on the worker; flush() waits for it; nothing is lost. Extraction
and compaction share the user's lane of the Memory's worker; repeated compaction requests for
a session waiting in its queue coalesce into one run.

One add() can choose where its pipeline runs; a full backlog makes background adds wait.

Bad input tried: a job submitted to a closed worker (InvalidInput, nothing runs); a
per-call ``extraction`` of "later", "", True or 1 (InvalidInput, nothing stored).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hmem._pipeline import AfterAppend
from hmem._worker import SerialWorker
from hmem.build import build_parts
from hmem.config import Settings
from hmem.errors import InvalidInput
from hmem.memory import Memory
from hmem.session.compaction import CompactionResult, Compactor
from hmem.testing.llm_server import ScriptedLLMServer, ScriptedReply
from hmem.types import Message

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
    caplog.set_level(logging.ERROR, logger="hmem._worker")
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
            assert not [r for r in caplog.records if r.name == "hmem._worker"]  # no background job failed
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


def test_background_compaction_coalesces_per_session_in_the_users_lane(tmp_path: Path) -> None:
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
        while gated.runs == 0 and time.monotonic() < deadline:  # the first compaction now holds the worker
            time.sleep(0.01)
        for mid in sent[1:]:  # their extraction jobs queue behind it; each asks for a compaction again
            add(mid)
        started = [t for t in set(threading.enumerate()) - threads_before if t.name.startswith("hmem")]
        assert len(started) == 1 and started[0].name.startswith("hmem-pipeline-")  # one user: one lane's thread
        gated.gate.set()
        assert mem.flush(60)
        assert gated.runs == 2, "29 more requests: one queued run, the rest coalesced into it"
        buffered = [m.id for m in mem.history("u1", "s1")]
        archived = {it.source_message_id for it in mem.items("u1", kinds="turn")}
        summary = mem.summary("u1", "s1")
        assert summary is not None and summary.folded_count == len(archived) == len(sent) - len(buffered)
        assert set(buffered) | archived == set(sent) and not set(buffered) & archived
    finally:
        mem.close()
    assert not any(t.is_alive() for t in started)  # close() ended the worker


def test_a_closed_worker_refuses_jobs() -> None:
    worker = SerialWorker(name="t")
    ran: list[int] = []
    worker.submit(lambda: ran.append(1))
    worker.close()
    with pytest.raises(InvalidInput, match="closed"):
        worker.submit(lambda: ran.append(2))
    assert ran == [1]


def test_a_failing_job_is_kept_and_does_not_stop_later_jobs() -> None:
    worker = SerialWorker(name="t")
    ran: list[int] = []

    def boom() -> None:
        raise RuntimeError("boom")

    worker.submit(boom)
    worker.submit(lambda: ran.append(2))
    assert worker.flush(5)
    assert ran == [2] and isinstance(worker.errors[0], RuntimeError)
    worker.close()


def test_wait_below_holds_a_producer_until_the_worker_has_room() -> None:
    worker = SerialWorker(name="t")
    gate = threading.Event()
    worker.submit(gate.wait)
    worker.submit(lambda: None)
    assert worker.pending == 2
    assert worker.wait_below(2, timeout=0.05) is False  # still two queued
    assert worker.wait_below(3, timeout=0.05) is True
    gate.set()
    assert worker.wait_below(1, timeout=5) and worker.pending == 0
    worker.close()


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
    worker = SerialWorker(name="t")
    pipeline = AfterAppend(parts, worker, max_backlog=2)
    gate = threading.Event()
    worker.submit(gate.wait)
    msg = Message(role="user", content="hello", id="m1")
    parts.sessions.append("u1", "s1", [msg])
    pipeline.run("u1", "s1", [msg], "background")  # pending 2: room was there
    blocked = threading.Thread(target=pipeline.run, args=("u1", "s1", [msg], "background"))
    blocked.start()
    blocked.join(0.3)
    assert blocked.is_alive() and worker.pending == 2  # waits for room, queued nothing yet
    gate.set()
    blocked.join(10)
    assert not blocked.is_alive() and worker.flush(30)
    worker.close()
    for close in parts.on_close:
        close()


def test_lanes_run_side_by_side_and_each_lane_keeps_its_order() -> None:
    """Lanes 0 and 1 (ints hash to themselves, so they land on different threads of two):
    a job held on lane 0 does not hold lane 1, and each lane runs its jobs in order.
    Bad input tried: lanes=0 (InvalidInput)."""
    with pytest.raises(InvalidInput, match="at least one lane"):
        SerialWorker(name="t", lanes=0)
    worker = SerialWorker(name="t", lanes=2)
    gate = threading.Event()
    order: dict[int, list[int]] = {0: [], 1: []}
    worker.submit(gate.wait, lane=0)
    for n in range(20):
        worker.submit(partial(order[0].append, n), lane=0)
        worker.submit(partial(order[1].append, n), lane=1)
    deadline = time.monotonic() + 10
    while len(order[1]) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert order == {0: [], 1: list(range(20))}  # lane 1 finished while lane 0 was held
    gate.set()
    assert worker.flush(10) and order[0] == list(range(20))
    worker.close()
