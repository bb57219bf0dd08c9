"""``HMEM_QUERY_PLANNER=llm`` end to end: a Memory with the packaged embedding model and an
OpenAI-compatible LLM over real HTTP (ScriptedLLMServer). The LLM's queries find a turn
the question shares no word with; when the LLM fails (HTTP 500, malformed body, too
slow), recall answers exactly as without a planner and the log says why."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.testing.llm_server import RecordedRequest, ScriptedLLMServer, ScriptedReply

pytest.importorskip("openai")

QUESTION = "What did Ann's dentist tell her?"
ANSWER = "Dr. Okafor said I should switch to a softer brush and floss at night."
FILLER = [
    "I started a pottery class on Thursdays, it is so calming.",
    "My brother moved to Glasgow for a new job at a bank.",
    "We watched the meteor shower from the hill last night.",
    "The dentist podcast my friend recommended was actually funny.",
    "I need to renew my passport before the trip to Lisbon.",
    "The kids want a puppy, but our landlord says no pets.",
    "I finished reading a novel about a lighthouse keeper.",
    "Work has been busy with the quarterly report due Friday.",
    "I tried a new ramen place near the station, great broth.",
    "My dentist appointment got moved again, annoying.",
    "We are planning a camping weekend in the Lake District.",
    "I signed up for a 10k charity run in the spring.",
]
PLAN = '{"queries": ["Dr. Okafor advice", "softer toothbrush and flossing"]}'


def _messages() -> list[dict[str, Any]]:
    turns = [*FILLER, ANSWER]  # last: no later turn's index key repeats it (it holds the turn before)
    return [{"role": "user", "content": t, "id": f"t{i}"} for i, t in enumerate(turns)]


@contextmanager
def _memory(path: Path, llm_url: str | None) -> Iterator[Memory]:
    llm = None if llm_url is None else OpenAICompatibleLLM(base_url=llm_url, api_key="k", model="planner-model",
                                                         max_attempts=1, backoff_s=0.0, timeout=1.0)
    mem = Memory.open(path, llm=llm, vectors="memory", extract_profile=False, extract_facts=False,
                      query_planner="llm" if llm else "off")
    try:
        mem.add("ann", "s1", _messages())
        assert mem.flush()
        yield mem
    finally:
        mem.close()


def _ids(mem: Memory, k: int = 2) -> list[str | None]:
    return [h.item.source_message_id for h in mem.recall("ann", QUESTION, k)]


@pytest.fixture(scope="module")
def offline_ids(tmp_path_factory: pytest.TempPathFactory) -> list[str | None]:
    """What recall answers without a planner: the baseline every failure must equal."""
    with _memory(tmp_path_factory.mktemp("offline"), None) as mem:
        ids = _ids(mem)
        assert mem.stats("ann")["query_planner"] == "off"
        return ids


def test_the_planned_queries_find_the_turn_the_question_shares_no_word_with(
    tmp_path: Path, offline_ids: list[str | None]
) -> None:
    assert "t12" not in offline_ids  # offline, the turns that say "dentist" and their neighbours lead
    with ScriptedLLMServer() as server:
        server.respond_with(lambda request: ScriptedReply("text", PLAN))
        with _memory(tmp_path, server.base_url) as mem:
            hits = mem.recall("ann", QUESTION, 2)
            again = mem.recall("ann", QUESTION, 2)
            ctx = mem.context("ann", "s2", QUESTION, budget=2000)
            stats = mem.stats("ann")
        requests = server.completion_requests
    found = {h.item.source_message_id: h for h in hits}
    assert "t12" in found and dict(found["t12"].boosts).get("planned") == 0.8
    assert [h.item.id for h in again] == [h.item.id for h in hits]
    assert any(ANSWER in str(m["content"]) for m in ctx.messages)
    # one LLM call for the question (the plan is remembered), with the question as asked
    assert len(requests) == 1
    body = requests[0].body
    assert body["model"] == "planner-model" and body["messages"][-1]["content"] == QUESTION
    assert body["response_format"] == {"type": "json_object"}
    assert stats["query_planner"] == "LLMQueryPlanner(model=None, max_queries=3)"


@pytest.mark.parametrize("failure", ["error", "malformed", "stall"])
def test_a_failing_llm_leaves_recall_as_it_is_offline(
    tmp_path: Path, offline_ids: list[str | None], failure: str, caplog: pytest.LogCaptureFixture,
) -> None:
    def fail(request: RecordedRequest) -> ScriptedReply:
        if failure == "error":
            return ScriptedReply("error", "model overloaded", 500)
        if failure == "malformed":
            return ScriptedReply("malformed")
        return ScriptedReply("text", PLAN, 200, 3.0)  # past the client's 1 s timeout

    caplog.set_level(logging.WARNING, logger="hmem.longterm.planner")
    with ScriptedLLMServer() as server:
        server.respond_with(fail)
        with _memory(tmp_path, server.base_url) as mem:
            assert _ids(mem) == offline_ids
    assert "query planner: the LLM failed" in caplog.text


def test_the_planner_needs_an_llm_and_refuses_before_making_any_file(tmp_path: Path) -> None:
    # Tried: query_planner="llm" with no LLM model and no llm= object; an unknown value.
    folder = tmp_path / "data"
    with pytest.raises(ConfigError, match="HMEM_QUERY_PLANNER=llm needs an LLM"):
        Memory.open(folder, query_planner="llm")
    assert not folder.exists()
    with pytest.raises(ConfigError, match=r"HMEM_QUERY_PLANNER='gpt' is invalid"):
        Memory.open(folder, query_planner="gpt")
    assert not folder.exists()
