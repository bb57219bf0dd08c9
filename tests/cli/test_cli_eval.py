"""``hmem eval``'s answer-in-context flags: validation, help, and one ``--json`` run on
the first sample conversation."""

from __future__ import annotations

import json
from pathlib import Path

from cli_result import Runner


def test_help_documents_the_answer_flags(hmem: Runner) -> None:
    out = hmem("eval", "--help")
    assert out.code == 0
    for text in ("--answer-budgets", "500,1000,2000,4000", "--context-k", "answer", "--set NAME=VALUE"):
        assert text in out.out, text


def test_bad_answer_budgets_and_context_k_are_usage_errors(hmem: Runner) -> None:
    # tried: zero, negative, a word, empty, a zero among good values; k also above 1000
    for value in ("0", "-5", "abc", "", "500,0"):
        out = hmem("eval", "--configs", "answer", "--answer-budgets", value)
        assert out.code == 2, value
        assert "--answer-budgets takes comma-separated positive token counts" in out.err, out.err
    for value in ("0", "-5", "abc", "", "1001"):
        out = hmem("eval", "--configs", "answer", "--context-k", value)
        assert out.code == 2, value
        assert "--context-k takes an integer from 1 to 1000" in out.err, out.err


def test_json_run_reports_answers_per_budget(hmem: Runner, tmp_path: Path) -> None:
    out = hmem("eval", "--dataset", "sample", "--configs", "answer", "--limit-conversations", "1",
               "--limit-questions", "4", "--answer-budgets", "2000,500", "--context-k", "3",
               "--out", str(tmp_path / "res"), "--json", "--no-progress")
    assert out.code == 0, out.err
    data = json.loads(out.out)  # exactly one JSON document
    cfg = data["configs"]["answer"]
    assert cfg["context_k"] == 3
    assert list(cfg["answers"]) == ["500", "2000"]
    for budget, row in cfg["answers"].items():
        assert row["questions"] == 4
        assert 0 < row["mean_tokens"] <= int(budget)
        for key in ("strict", "loose", "evidence"):
            assert 0.0 <= row[key] <= 1.0
    # k=3 bounds the recalled tier: at most three distinct turns per question
    full = json.loads((tmp_path / "res" / "results.json").read_text())
    assert all(len(q["retrieved"]) <= 3 for q in full["questions_detail"]["answer"])
    assert "answer in context per budget" in (tmp_path / "res" / "results.md").read_text()


def test_set_opens_the_store_with_settings_and_the_report_lists_them(hmem: Runner, tmp_path: Path) -> None:
    # --set takes the key (feedback_rounds=1) or, as hmem.cli.eval_cmd.parse_setting allows, the
    # HMEM_ spelling of it; either way a keyword of the run, not an environment variable.
    out = hmem("eval", "--dataset", "sample", "--configs", "bm25,default", "--limit-conversations", "1",
               "--limit-questions", "3", "--set", "HMEM_SESSION_WEIGHT=0", "--set", "feedback_rounds=1",
               "--out", str(tmp_path / "res"), "--json", "--no-progress")
    assert out.code == 0, out.err
    assert json.loads(out.out)["settings"] == {"session_weight": 0.0, "feedback_rounds": 1}
    assert "`session_weight=0.0`, `feedback_rounds=1`" in (tmp_path / "res" / "results.md").read_text()


def test_bad_set_values_are_refused_with_what_to_write(hmem: Runner, tmp_path: Path) -> None:
    # tried: no "=", an empty name; then (checked when the run starts) a typo, a value out of
    # range, a word for a number, the data folder
    for value in ("session_weight", "=0"):
        out = hmem("eval", "--set", value)
        assert out.code == 2, value
        assert "--set takes NAME=VALUE" in out.err, out.err
    for value, says in (("sesion_weight=0", "unknown setting(s): ['sesion_weight']"),
                        ("session_weight=42", "session_weight must be a number in [0, 10]"),
                        ("candidates=many", "candidates='many' is invalid"),
                        ("data_dir=/tmp/elsewhere", "the run stores in its own folder")):
        out = hmem("eval", "--dataset", "sample", "--set", value, "--workdir", str(tmp_path / "w"), "--no-progress")
        assert out.code == 1, value
        assert says in out.err, out.err
        assert not (tmp_path / "w").exists()
