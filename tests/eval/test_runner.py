"""The evaluation runner, report and plot, on a small hand-made dataset replayed
through the real write path (``Memory.open``: SQLite, in-memory vectors, the real
MiniLM model)."""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime
from pathlib import Path

import pytest
from eval_fixtures import open_memory

from hmem.errors import InvalidInput
from hmem.eval.model import EvalConversation, EvalDataset, EvalQuestion, EvalSession, EvalTurn
from hmem.eval.plot import recall_curve
from hmem.eval.report import summary, to_markdown, write_results
from hmem.eval.runner import CONFIG_NAMES, EvalRun, conversation_batches, run_eval, turn_content
from hmem.memory import Memory

D1 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
D2 = datetime(2023, 6, 20, 9, 0, tzinfo=UTC)


def _conv(cid: str, facts: list[tuple[str, str, str]]) -> EvalConversation:
    """Two sessions of alternating Ana (user) / Ben (assistant) turns."""
    turns = [EvalTurn(id=tid, speaker=spk, role="user" if spk == "Ana" else "assistant", text=text)
             for tid, spk, text in facts]
    s1 = tuple(t for t in turns if t.id.startswith("D1:"))
    s2 = tuple(t for t in turns if t.id.startswith("D2:"))
    return EvalConversation(id=cid, language="en", speakers=("Ana", "Ben"),
                            sessions=(EvalSession("session_1", D1, s1), EvalSession("session_2", D2, s2)))


CONV_A = _conv("conv-a", [
    ("D1:1", "Ana", "I finally adopted a tabby kitten from the shelter, her name is Pixel."),
    ("D1:2", "Ben", "Congratulations! How is Pixel settling in?"),
    ("D1:3", "Ana", "She hides under the sofa most of the day."),
    ("D1:4", "Ben", "My brother plays the cello in an orchestra in Vienna."),
    ("D2:1", "Ana", "I started training for the Berlin marathon next September."),
    ("D2:2", "Ben", "That is a big goal. How many kilometres do you run each week?"),
    ("D2:3", "Ana", "About forty kilometres, mostly along the river at dawn."),
    ("D2:4", "Ben", "I just repainted my kitchen a bright lemon yellow."),
])
CONV_B = _conv("conv-b", [
    ("D1:1", "Ana", "My grandmother taught me to bake sourdough bread."),
    ("D1:2", "Ben", "I have been learning Portuguese with an app every evening."),
    ("D2:1", "Ana", "We booked a sailing trip around the Greek islands in July."),
    ("D2:2", "Ben", "I broke my wrist skateboarding, so no climbing for a while."),
])
QUESTIONS = (
    EvalQuestion("a1", "conv-a", "What is the name of Ana's cat?", "Pixel", ("D1:1",), "single-hop"),
    EvalQuestion("a2", "conv-a", "Which race is Ana preparing for?", "Berlin marathon", ("D2:1",), "single-hop"),
    EvalQuestion("a3", "conv-a", "What instrument does Ben's brother play, and what colour is Ben's kitchen?",
                 "cello; yellow", ("D1:4", "D2:4"), "multi-hop"),
    EvalQuestion("a4", "conv-a", "What is Ana's favourite opera?", "not mentioned", (), "abstention"),
    EvalQuestion("b1", "conv-b", "Who taught Ana to bake bread?", "her grandmother", ("D1:1",), "single-hop"),
    EvalQuestion("b2", "conv-b", "How did Ben hurt his wrist?", "skateboarding", ("D2:2",), "single-hop"),
)
DATASET = EvalDataset(name="tiny", conversations=(CONV_A, CONV_B), questions=QUESTIONS)


@pytest.fixture(scope="module")
def run() -> EvalRun:
    return run_eval(DATASET, open_memory=open_memory, ks=(1, 3, 5), progress=False)


def test_turns_become_messages_with_turn_ids_speakers_dates_and_captions() -> None:
    photo = EvalTurn(id="D1:2", speaker="Ben", role="assistant", text="Look at this!", image_caption="a dog on a beach")
    conv = EvalConversation(id="c", language="en", speakers=("Ana", "Ben"), sessions=(
        EvalSession("session_1", D1, (EvalTurn("D1:1", "Ana", "user", "hi"), photo)),))
    [(session_id, messages)] = conversation_batches(conv)
    assert session_id == "session_1"
    assert [m.id for m in messages] == ["D1:1", "D1:2"]
    assert [(m.role, m.name) for m in messages] == [("user", "Ana"), ("assistant", "Ben")]
    assert messages[1].content == "Look at this! [shares a photo: a dog on a beach]"
    assert all(m.created_at.date() == D1.date() for m in messages)
    assert messages[0].created_at < messages[1].created_at  # order survives equal session dates
    assert turn_content(EvalTurn("x", "Ana", "user", "", image_caption="a cake")) == "[shares a photo: a cake]"


def test_every_configuration_is_scored_and_finds_the_planted_turns(run: EvalRun) -> None:
    assert list(run.configs) == list(CONFIG_NAMES)
    assert run.ingest.turns == 12 and run.ingest.conversations == 2 and run.ingest.sessions == 4
    assert run.ingest.items >= 12  # every turn archived (+ facts extracted from user turns)
    for name, result in run.configs.items():
        report = result.report
        assert report.overall.n == 5 and report.overall.no_evidence == 1, name
        assert report.per_category["abstention"].recall[1] is None
        assert report.latency is not None and report.latency.n == 6
        for r in result.results:
            assert len(set(r.retrieved)) == len(r.retrieved), "a turn must count once (facts map to their turn)"
            assert set(r.retrieved) <= (CONV_A.turn_ids if r.question_id.startswith("a") else CONV_B.turn_ids)
    default = run.configs["default"].report
    assert default.overall.recall[5] == 1.0
    assert default.overall.mrr is not None and default.overall.mrr >= 0.8
    assert run.configs["context"].extra["mean_turns_in_context"] >= 1


def test_users_do_not_see_each_others_turns(run: EvalRun) -> None:
    # conv-b has only 4 turns: nothing from conv-a's 8 may pad its lists.
    for result in run.configs.values():
        for r in result.results:
            if r.question_id.startswith("b"):
                assert len(r.retrieved) <= 4


def test_limits_and_bad_arguments(tmp_path: Path) -> None:
    calls: list[Path] = []

    def never(path: Path) -> Memory:
        calls.append(path)
        raise AssertionError("must fail before opening a store")

    for kwargs in ({"configs": ["bm25", "nope"]}, {"configs": []}, {"ks": (0, 5)}, {"limit_questions": 0},
                   {"limit_conversations": -1}, {"context_budget": 0}):
        with pytest.raises(InvalidInput):
            run_eval(DATASET, open_memory=never, progress=False, **kwargs)  # type: ignore[arg-type]
    assert calls == []
    small = run_eval(DATASET, open_memory=open_memory, configs=["bm25"], limit_conversations=1, limit_questions=2,
                     ks=(1,), progress=False, workdir=tmp_path / "kept")
    assert [r.question_id for r in small.configs["bm25"].results] == ["a1", "a2"]
    assert small.ingest.conversations == 1 and (tmp_path / "kept").is_dir()


def test_summary_json_markdown_and_plot(run: EvalRun, tmp_path: Path) -> None:
    data = json.loads(json.dumps(summary(run)))
    assert set(data["configs"]) == set(CONFIG_NAMES)
    d = data["configs"]["default"]
    for key in ("recall@1", "recall@3", "recall@5", "mrr", "ndcg@10", "questions"):
        assert key in d
    assert d["latency_ms"]["p95"] >= d["latency_ms"]["p50"] > 0
    assert set(d["per_category"]) == {"single-hop", "multi-hop", "abstention"}
    assert d["per_category"]["single-hop"]["questions"] == 4
    md = to_markdown(run)
    assert "| `default` |" in md and "multi-hop" in md and "DRAGON" not in md  # no reference for this dataset
    paths = write_results(run, tmp_path / "out")
    png = paths["plot"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 600 and height >= 400
    full = json.loads(paths["json"].read_text())
    assert full["questions_detail"]["default"][0]["gold"] == ["D1:1"]
    curve = recall_curve(run, "default")
    assert len(curve) == 5 and curve == sorted(curve)  # recall@k never drops as k grows
    assert curve[4] == pytest.approx(100 * run.configs["default"].report.overall.recall[5])


def test_the_ablation_runs_default_and_each_stage_off_in_one_run() -> None:
    from hmem.eval.runner import ABLATIONS, select_configs
    from hmem.longterm.stages import STAGE_NAMES

    chosen = select_configs(["ablation", "bm25"])
    assert [c.name for c in chosen] == ["default", *(f"without-{s}" for s in STAGE_NAMES), "no-stages", "bm25"]
    for name in STAGE_NAMES:
        assert name not in (ABLATIONS[f"without-{name}"].stages or ()) and len(ABLATIONS[f"without-{name}"].stages
                                                                                or ()) == len(STAGE_NAMES) - 1
    run = run_eval(DATASET, open_memory=open_memory, configs=["ablation"], ks=(1, 3, 5), progress=False)
    assert list(run.configs) == [c.name for c in chosen[:-1]]
    for name, result in run.configs.items():  # every variant answers every question from the same store
        assert result.report.overall.n == 5, name
    with pytest.raises(InvalidInput, match="ablation"):
        select_configs(["without-nothing"])
