"""Background extraction: add() returns once the messages are stored, while a slow
LLM extracts the profile on the worker; flush() waits for it; nothing is lost.

Bad input tried: extraction="background" without a worker (InvalidInput), a job
submitted to a closed worker (InvalidInput).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hmem._worker import SerialWorker
from hmem.build import build_memory
from hmem.config import Settings
from hmem.errors import InvalidInput
from hmem.memory import Memory, MemoryOptions
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


def test_add_returns_before_a_slow_llm_extraction_and_flush_waits(tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        server.respond_with(_answer)
        settings = Settings.from_env(
            {}, data_dir=str(tmp_path), vectors="memory", extraction="background",
            llm_base_url=server.base_url, llm_api_key="test", llm_model="test-model",
        )
        mem = build_memory(settings)
        try:
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
            assert any(it.text == "The user lives in Lisbon." for it in mem.items("u1"))
            assert not mem.worker.errors  # type: ignore[union-attr]
        finally:
            mem.close()


def test_background_pipeline_keeps_order_and_loses_nothing(tmp_path: Path) -> None:
    settings = Settings.from_env({}, data_dir=str(tmp_path), vectors="memory", extraction="background",
                                 buffer_tokens=300, summary_min_messages=4, compaction="foreground")
    mem = build_memory(settings)
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
        summary = mem.summaries.get("u1", "s1")
        assert summary is not None and summary.folded_count + len(buffered) == len(sent)
        assert buffered == sent[-len(buffered):]
    finally:
        mem.close()


def test_background_extraction_needs_a_worker_and_a_closed_worker_refuses_jobs(tmp_path: Path) -> None:
    mem = Memory.open(tmp_path / "fg", vectors="memory")
    try:
        with pytest.raises(InvalidInput, match="worker"):
            Memory(sessions=mem.sessions, summaries=mem.summaries, profile=mem.profile, longterm=mem.longterm,
                   compactor=mem.compactor, options=MemoryOptions(extraction="background"))
    finally:
        mem.close()
    worker = SerialWorker(name="t")
    worker.submit(lambda: None)
    worker.close()
    with pytest.raises(InvalidInput, match="closed"):
        worker.submit(lambda: None)


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
