"""Recall's ranking stages (hmem/longterm/stages.py): one list, in one place, that a
config or a setting can cut down for an ablation; bad names are refused with the list.

Bad inputs tried: an unknown stage name, a misspelt one among good ones, a number instead
of names, an unknown name through the ``recall_stages`` setting."""

from __future__ import annotations

import pytest

from hmem.build import longterm_config
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.longterm.stages import STAGE_NAMES, Feedback, SessionSupport, SpeakerPrior, check_stage_names, default_stages
from hmem.longterm.types import LongTermConfig


def test_the_default_stages_run_in_the_listed_order() -> None:
    # feedback and specific are off by default (docs/bench-ablation.md); turned on, every
    # stage runs in the one listed order.
    assert tuple(s.name for s in LongTermConfig().stages) == ("time", "session", "question", "speaker", "current",
                                                              "superseded")
    on = LongTermConfig(feedback_rounds=2, specific_weight=0.3)
    assert tuple(s.name for s in on.stages) == STAGE_NAMES


def test_a_subset_keeps_the_canonical_order_whatever_order_it_is_named_in() -> None:
    cfg = LongTermConfig(recall_stages=("superseded", "session"))
    assert [s.name for s in cfg.stages] == ["session", "superseded"]
    assert LongTermConfig(recall_stages=()).stages == ()


def test_a_weight_that_turns_a_stage_off_leaves_it_out() -> None:
    cfg = LongTermConfig(session_weight=0.0, feedback_rounds=1, superseded_weight=1.0, specific_weight=0.3)
    assert [s.name for s in cfg.stages] == ["time", "question", "speaker", "current", "specific"]
    assert "speaker" not in [s.name for s in LongTermConfig(speaker_weight=0.0).stages]


def test_each_stage_carries_its_own_config_from_the_long_term_config() -> None:
    cfg = LongTermConfig(session_weight=0.7, feedback_rounds=3, feedback_terms=5, speaker_weight=0.6)
    by_name = {s.name: s for s in cfg.stages}
    assert by_name["session"] == SessionSupport(weight=0.7)
    assert by_name["speaker"] == SpeakerPrior(weight=0.6)
    assert by_name["feedback"] == Feedback(rounds=3, docs=3, terms=5, weight=0.2)


@pytest.mark.parametrize("bad", [("session", "sesion"), ("rerank",), 3])
def test_unknown_or_malformed_stage_names_are_refused_with_the_list(bad: object) -> None:
    with pytest.raises(ConfigError, match="stage") as err:
        LongTermConfig(recall_stages=bad)  # type: ignore[arg-type]
    if not isinstance(bad, int):
        assert "session" in str(err.value) and "superseded" in str(err.value)


def test_a_comma_separated_setting_selects_stages_and_a_bad_one_names_the_setting() -> None:
    cfg = longterm_config(Settings.from_env({}, recall_stages="time, session"))
    assert cfg is not None and [s.name for s in cfg.stages] == ["time", "session"]
    with pytest.raises(ConfigError, match=r"^recall_stages="):
        longterm_config(Settings.from_env({}, recall_stages="time,bogus"))


def test_check_stage_names_accepts_a_string_or_a_sequence() -> None:
    assert check_stage_names("feedback") == ("feedback",)
    assert check_stage_names(["time", "mmr"][:1]) == ("time",)
    assert [s.name for s in default_stages(only=["question"])] == ["question"]
