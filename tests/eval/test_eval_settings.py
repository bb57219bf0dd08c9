"""``run_eval(settings=…)`` / ``hmem eval --set``: a run measures the store opened with the
chosen settings (the real model, the embedded default otherwise), records them in its
report with secrets hidden, and refuses bad ones before anything is written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from eval_fixtures import open_memory

from hmem.errors import ConfigError, InvalidInput
from hmem.eval.model import EvalConversation, EvalDataset, EvalQuestion, EvalSession, EvalTurn
from hmem.eval.opener import check_settings
from hmem.eval.report import summary, to_markdown
from hmem.eval.runner import run_eval

D1 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
_SAID = [
    ("Ana", "Where did you go skiing last winter, Ben?"),
    ("Ben", "We spent a week in Aspen and the snow was perfect."),
    ("Ana", "I repainted my kitchen a bright lemon yellow."),
    ("Ben", "My brother plays the cello in an orchestra in Vienna."),
]
_TURNS = tuple(EvalTurn(id=f"D1:{i}", speaker=who, role="user" if who == "Ana" else "assistant", text=text)
               for i, (who, text) in enumerate(_SAID, start=1))
DATASET = EvalDataset(
    name="tiny",
    conversations=(EvalConversation(id="c", language="en", speakers=("Ana", "Ben"),
                                    sessions=(EvalSession("s1", D1, _TURNS),)),),
    questions=(EvalQuestion("q", "c", "Where did Ben go skiing last winter?", "Aspen", ("D1:2",), "single-hop"),),
)


def _ranking(settings: dict[str, Any] | None) -> tuple[str, ...]:
    run = run_eval(DATASET, configs=["default"], settings=settings, progress=False)
    return run.configs["default"].results[0].retrieved


def test_the_settings_reach_the_store_the_run_measures() -> None:
    # The question turn shares every word with the question; how far it is scored down is
    # the setting: not at all (it ranks first), or to nothing (it ranks last).
    asked = _ranking({"question_weight": "0"})
    assert asked[:2] == ("D1:1", "D1:2")
    demoted = _ranking({"question_weight": 1.0})
    assert demoted[0] == "D1:2" and demoted[-1] == "D1:1"
    assert sorted(asked) == sorted(demoted) == ["D1:1", "D1:2", "D1:3", "D1:4"]


def test_the_report_lists_the_settings_with_secrets_hidden() -> None:
    run = run_eval(DATASET, configs=["bm25"], settings={"session_weight": "0", "redis_url": None,
                                                        "llm_api_key": "sk-very-secret"}, progress=False)
    assert run.settings == {"session_weight": 0.0, "redis_url": None, "llm_api_key": "****"}
    data = summary(run)
    assert data["settings"] == {"session_weight": 0.0, "redis_url": None, "llm_api_key": "****"}
    assert "sk-very-secret" not in json.dumps(data) and "sk-very-secret" not in to_markdown(run)
    assert "`session_weight=0.0`" in to_markdown(run)
    plain = run_eval(DATASET, configs=["bm25"], progress=False)  # no settings: nothing to list
    assert plain.settings == {} and "settings" not in summary(plain) and "Settings" not in to_markdown(plain)


@pytest.mark.parametrize(("settings", "error", "says"), [
    ({"sesion_weight": "0"}, ConfigError, "unknown setting"),           # a typo
    ({"session_weight": "11"}, ConfigError, "in \\[0, 10\\]"),          # above the range
    ({"session_weight": "-1"}, ConfigError, "^session_weight=-1"),       # below it
    ({"question_weight": "much"}, ConfigError, "^question_weight='much'"),  # not a number
    ({"candidates": 0}, ConfigError, "candidates must be an integer from 1"),  # LongTermConfig's own range
    ({"fusion": "max"}, ConfigError, "unknown setting"),                # a LongTermConfig field, not a setting
    ({"data_dir": "/elsewhere"}, InvalidInput, "its own folder"),       # the run owns its folder
    ([("session_weight", "0")], InvalidInput, "must be a mapping"),     # not a mapping
    ({1: "0"}, InvalidInput, "must be a mapping of Settings field names"),  # a name that is not a string
])
def test_bad_settings_are_refused_before_anything_is_written(
    tmp_path: Path, settings: Any, error: type[Exception], says: str,
) -> None:
    work = tmp_path / "work"
    with pytest.raises(error, match=says):
        run_eval(DATASET, configs=["bm25"], settings=settings, workdir=work, progress=False)
    assert not work.exists()


def test_settings_beside_a_callers_own_opener_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="your own open_memory"):
        run_eval(DATASET, configs=["bm25"], settings={"session_weight": 0}, open_memory=open_memory,
                 workdir=tmp_path / "work", progress=False)
    assert not (tmp_path / "work").exists()
    assert check_settings(None) == check_settings({}) == {}
