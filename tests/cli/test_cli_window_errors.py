"""``hmem window`` replay counts, and bad input: clear message on stderr, exit 1, nothing changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_result import Runner

from hmem.eval.sample import load_sample
from hmem.tokens import get_tokenizer


@pytest.mark.parametrize(("policy", "budget"), [("hybrid", "400"), ("token", "300"), ("message", "8")])
def test_window_replay_keeps_plus_evicts_everything(hmem: Runner, policy: str, budget: str) -> None:
    out = hmem("window", "--conversation", "zh_01", "--policy", policy, "--budget", budget, "--json")
    assert out.code == 0, out.err
    data = out.json
    conv = load_sample().conversation("zh_01_liwen_shenzhen")
    all_ids = [t.id for _, t in conv.iter_turns()]
    kept = [k["id"] for k in data["kept"]]
    evicted = [e["id"] for e in data["evicted"]]
    assert data["totals"]["kept"] + data["totals"]["evicted"] == data["totals"]["messages"] == len(all_ids)
    assert sorted(kept + evicted) == sorted(all_ids) and not set(kept) & set(evicted)
    assert evicted  # the conversation is far bigger than any of these budgets
    assert len(data["steps"]) == len(all_ids)
    if policy == "token":
        assert data["totals"]["final_buffer_tokens"] <= int(budget)
    if policy == "message":
        assert len(kept) <= int(budget)
    tok = get_tokenizer("gpt-4o-mini")
    first = conv.sessions[0].turns[0]
    assert data["steps"][0]["tokens"] == tok.count_message({"role": first.role, "content": first.text})


def test_window_in_a_real_subprocess_prints_plain_text_and_json() -> None:
    exe = Path(sys.executable).with_name("hmem")
    text = subprocess.run([str(exe), "window", "--policy", "token", "--budget", "500"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 0, text.stderr
    assert "\x1b[" not in text.stdout  # piped: plain text, no colour codes
    assert "evicted" in text.stdout and "en_01_maya_lisbon" in text.stdout
    as_json = subprocess.run([str(exe), "window", "--json", "--session", "S1", "--session", "S2"],
                             capture_output=True, text=True, timeout=120, check=False)
    data = json.loads(as_json.stdout)
    assert {s["id"].split(":")[0] for s in data["steps"]} == {"S1", "S2"}


# Bad inputs tried (each: exit code 1, a message naming the problem, no traceback, nothing stored):
#   user id with surrounding whitespace, empty session id, --file with invalid JSON, --file that does not
#   exist, --file holding a message with an unknown role, TEXT and --file together, nothing to add,
#   import of a missing file, import of a non-export file, context with a budget too small (BudgetError),
#   window with an unknown conversation, window with an unknown session.
def _bad_file(tmp_path: Path) -> str:
    path = tmp_path / "bad.json"
    path.write_text('[{"role": "user", "content": "unterminated}]')
    return str(path)


def _bad_role(tmp_path: Path) -> str:
    path = tmp_path / "role.json"
    path.write_text('[{"role": "wizard", "content": "hi"}]')
    return str(path)


def _not_export(tmp_path: Path) -> str:
    path = tmp_path / "plain.jsonl"
    path.write_text('{"type": "item"}\n')
    return str(path)


BAD_WRITES = [
    (lambda tmp: ["add", " u1", "s1", "hello"], "user_id"),
    (lambda tmp: ["add", "u1", "", "hello"], "session_id"),
    (lambda tmp: ["add", "u1", "s1", "--file", _bad_file(tmp)], "not valid JSON"),
    (lambda tmp: ["add", "u1", "s1", "--file", str(tmp / "missing.json")], "does not exist"),
    (lambda tmp: ["add", "u1", "s1", "--file", _bad_role(tmp)], "role"),
    (lambda tmp: ["add", "u1", "s1", "hello", "--file", _bad_role(tmp)], "either TEXT or --file"),
    (lambda tmp: ["add", "u1", "s1"], "nothing to add"),
    (lambda tmp: ["import", str(tmp / "missing.jsonl"), "--as", "u1"], "does not exist"),
    (lambda tmp: ["import", _not_export(tmp), "--as", "u1"], "not an hmem export"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_WRITES)
def test_bad_input_is_refused_and_changes_nothing(hmem: Runner, tmp_path: Path, argv, message: str) -> None:  # type: ignore[no-untyped-def]
    assert hmem("add", "u1", "s0", "a message that was there before").code == 0
    before = hmem("export", "u1", str(tmp_path / "before.jsonl"), "--json").json["stats"]
    out = hmem(*argv(tmp_path))
    assert out.code == 1
    assert message in out.err and out.err.startswith("hmem: error:")
    assert "Traceback" not in out.err and out.out == ""
    after = hmem("export", "u1", str(tmp_path / "after.jsonl"), "--json").json["stats"]
    assert after == before


def test_budget_too_small_is_a_clear_error(hmem: Runner) -> None:
    hmem("add", "u1", "s1", "Please plan a three-week trip through Japan with a rail pass and ryokan stays.")
    out = hmem("context", "u1", "s1", "--budget", "5", "--system", "You are a meticulous travel planner.")
    assert out.code == 1
    assert "budget" in out.err.lower() and "5" in out.err and "Traceback" not in out.err


@pytest.mark.parametrize(("argv", "message"), [
    (["window", "--conversation", "nope"], "choose from: en_01_maya_lisbon"),
    (["window", "--conversation", "en_01", "--session", "S9"], "has no session S9"),
])
def test_window_bad_input(hmem: Runner, argv: list[str], message: str) -> None:
    out = hmem(*argv)
    assert out.code == 1 and message in out.err and "Traceback" not in out.err
