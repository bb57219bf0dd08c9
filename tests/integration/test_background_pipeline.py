"""Background work: add() returns once the messages are stored, while a slow LLM
extracts the profile on the worker; flush() waits for it; nothing is lost. Extraction
and compaction share the Memory's one worker thread; repeated compaction requests for
a session waiting in its queue coalesce into one run.

Bad input tried: a job submitted to a closed worker (InvalidInput, nothing runs).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hmem._worker import SerialWorker
from hmem.build import build_parts
from hmem.config import Settings
from hmem.errors import InvalidInput
from hmem.memory import Memory
from hmem.session.compaction import CompactionResult, Compactor
from hmem.testing.llm_server import ScriptedLLMServer, ScriptedReply

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


def test_background_compaction_coalesces_per_session_on_the_one_worker(tmp_path: Path) -> None:
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
        assert [t.name for t in started] == ["hmem-pipeline"]  # extraction and compaction: one thread
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
