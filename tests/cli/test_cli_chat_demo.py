"""``hmem chat`` (no LLM, and a real local OpenAI-compatible server) and ``hmem demo``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_result import Runner
from settings_helpers import settings_file

from hmem.testing.llm_server import RecordedRequest, ScriptedLLMServer, ScriptedReply

ANSWER = "Lyon has great bouchons; try one near Place Bellecour."


def test_chat_without_llm_shows_the_context_of_each_turn(hmem: Runner) -> None:
    out = hmem("chat", "u1", "s1", "--json", stdin="I live in Lyon and love cycling.\n\n/context\n/quit\nnever read\n")
    assert out.code == 0, out.err
    data = out.json
    assert data["llm"] is None
    assert [t["input"] for t in data["turns"]] == ["I live in Lyon and love cycling.", "/context"]
    first = data["turns"][0]
    assert first["reply"] is None
    assert first["context"]["messages"][-1] == {"role": "user", "content": "I live in Lyon and love cycling."}
    history = hmem("inspect", "u1", "s1", "--json").json["buffer"]
    assert [m["content"] for m in history] == ["I live in Lyon and love cycling."]  # "/context" is not a message
    text = hmem("chat", "u1", "s1", stdin="And I have a dog.\n")
    assert text.code == 0 and "And I have a dog." in text.out and "Budget:" in text.out


def _responder(request: RecordedRequest) -> ScriptedReply:
    body = request.body or {}
    if body.get("response_format"):  # profile / fact extraction in JSON mode: nothing to extract
        return ScriptedReply("text", '{"facts": [], "updates": []}')
    return ScriptedReply("text", ANSWER)


def test_chat_with_an_openai_compatible_model_in_a_subprocess(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("hmem")
    with ScriptedLLMServer() as server:
        server.respond_with(_responder)
        env = {
            **os.environ, "HMEM_DATA_DIR": str(tmp_path / "store"), "HMEM_VECTORS": "memory",
            "HMEM_LLM_BASE_URL": server.base_url, "HMEM_LLM_MODEL": "scripted-chat", "HMEM_LLM_API_KEY": "test-key",
        }
        run = subprocess.run([str(exe), "chat", "u1", "s1", "--json", "--system", "Be brief."],
                             input="Where should I eat tonight in Lyon?\n/quit\n",
                             capture_output=True, text=True, env=env, timeout=180, check=False)
        assert run.returncode == 0, run.stderr
        data = json.loads(run.stdout)
        assert data["llm"] == "scripted-chat"
        assert data["turns"][0]["reply"] == ANSWER
        chat_calls = [r.body for r in server.completion_requests if not r.body.get("response_format")]
        assert len(chat_calls) == 1
        sent = chat_calls[0]["messages"]
        assert sent[0]["role"] == "system" and sent[0]["content"].startswith("Be brief.")
        assert sent[-1] == {"role": "user", "content": "Where should I eat tonight in Lyon?"}
        assert server.requests[-1].headers["authorization"] == "Bearer test-key"
        shown = subprocess.run([str(exe), "inspect", "u1", "s1", "--json"], capture_output=True, text=True,
                               env=env, timeout=180, check=False)
    buffer = json.loads(shown.stdout)["buffer"]
    assert [(m["role"], m["content"]) for m in buffer] == [
        ("user", "Where should I eat tonight in Lyon?"), ("assistant", ANSWER)]


def _call_kind(request: RecordedRequest) -> str:
    body = request.body or {}
    if not body.get("response_format"):
        return "reply"
    return "profile" if "user's profile" in str(body["messages"][0]["content"]) else "facts"


@pytest.mark.parametrize(
    ("failure", "calls_each"),
    [
        pytest.param(ScriptedReply("text", "Sure! The user lives in Lyon."), 1, id="not-json"),
        pytest.param(ScriptedReply("text", '{"updates": "none", "facts": "none"}'), 1, id="wrong-schema"),
        pytest.param(ScriptedReply("empty"), 1, id="empty"),
        pytest.param(ScriptedReply("malformed"), 1, id="malformed-body"),
        pytest.param(ScriptedReply("error", "bad request", 400), 1, id="400"),
        pytest.param(ScriptedReply("error", "unprocessable", 422), 1, id="422"),
        pytest.param(ScriptedReply("error", "slow down", 429), 3, id="429"),
        pytest.param(ScriptedReply("error", "overloaded", 503), 3, id="503"),
        pytest.param(ScriptedReply("text", '{"updates": [], "facts": []}', delay_s=3.0), 3, id="timeout"),
    ],
)
def test_a_chat_turn_retries_only_transient_extraction_failures(
    hmem: Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failure: ScriptedReply, calls_each: int,
) -> None:
    """With ``HMEM_LLM_*`` set, one ``hmem chat`` turn makes one profile and one fact
    extraction call before the reply (docs/cli.md). Every extraction answer here is
    ``failure``: a transient one (429, 5xx, a timeout) is tried up to 3 times, a client
    error or an answer that does not parse is not tried again (the offline rules read the
    turn), and the reply still comes."""
    with ScriptedLLMServer() as server:
        server.respond_with(lambda request: ScriptedReply("text", ANSWER) if _call_kind(request) == "reply"
                            else failure)
        # llm_timeout_s = 1 (a tuning setting: the HMEM_CONFIG file) so the 3 s reply times out.
        tuning = settings_file(tmp_path / "hmem.toml", llm_timeout_s=1)
        for name, value in {"HMEM_LLM_BASE_URL": server.base_url, "HMEM_LLM_MODEL": "scripted-chat",
                            "HMEM_LLM_API_KEY": "test-key", "HMEM_CONFIG": str(tuning)}.items():
            monkeypatch.setenv(name, value)
        out = hmem("chat", "u1", "s1", "--json", stdin="I moved to Lyon last month.\n/quit\n")
        made = [_call_kind(r) for r in server.completion_requests]
    assert out.code == 0, out.err
    assert out.json["turns"][0]["reply"] == ANSWER
    assert sorted(made) == sorted(["profile"] * calls_each + ["facts"] * calls_each + ["reply"])


@pytest.mark.slow
def test_demo_end_to_end_on_the_embedded_default(hmem: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HMEM_VECTORS")  # the real default: Chroma PersistentClient + the packaged model
    out = hmem("demo", "-c", "en_01", "-c", "zh_01", "--questions", "2", "--json")
    assert out.code == 0, out.err
    data = out.json
    assert data["settings"]["vectors"] == "chroma" and data["data_dir"] is None
    assert {c["id"] for c in data["conversations"]} == {"en_01_maya_lisbon", "zh_01_liwen_shenzhen"}
    for conv in data["conversations"]:
        stats = conv["stats"]
        assert stats["summaries"] == conv["sessions"]  # every session overflowed its small buffer
        assert stats["items_by_kind"].get("turn", 0) > 0  # evicted turns were archived
        rows = {r["key"]: r for r in conv["profile"]}
        assert rows["name"]["held"] is True  # every stated key is a row, checked against what the user said
        assert all(isinstance(r["held"], bool) for r in rows.values() if r["stated"] is not None)
    liwen = {r["key"]: r for r in next(c for c in data["conversations"] if c["id"].startswith("zh_01"))["profile"]}
    assert liwen["location"]["held"] and [h["value"] for h in liwen["location"]["history"]] == ["杭州"]  # the move
    assert len(data["questions"]) == 4
    recalled_gold = []
    for q in data["questions"]:
        assert q["report"]["total"] <= q["report"]["budget"]
        assert q["messages"][-1] == {"role": "user", "content": q["question"]}
        asked_dates = {e["session"] for e in q["evidence"]}
        assert asked_dates <= {"S1", "S2", "S3"}  # evidence from an early session
        for r in q["recalled"]:
            if r["kept"] and r["is_evidence"]:
                recalled_gold.append(r)
                assert r["session_id"] in asked_dates
                assert r["session_id"] != q["session_id"]
    assert recalled_gold, "no question got its early-session evidence into the prompt"
    # what an earlier session said is in the prompt text, with its date and session
    q = next(q for q in data["questions"] if q["evidence_recalled"])
    system = q["messages"][0]["content"]
    gold = next(r for r in q["recalled"] if r["kept"] and r["is_evidence"])
    assert f"[{gold['created_at'][:10]}, session {gold['session_id']}]" in system
    assert data["timing_s"]["total"] > 0
