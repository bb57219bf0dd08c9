"""The ``answer`` configuration end to end: the first sample conversation replayed
through the real write path (SQLite, in-memory vectors, the real MiniLM model), every
question asked through ``Memory.context`` at each budget."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from eval_fixtures import open_memory

from hmem.errors import InvalidInput
from hmem.eval.answer_run import ANSWER_BUDGETS, answerable
from hmem.eval.datasets import load_sample
from hmem.eval.report import summary, to_markdown, write_results
from hmem.eval.runner import EvalRun, run_eval
from hmem.memory import Memory

SAMPLE = load_sample()
FIRST = SAMPLE.conversations[0]
SCORED = [q for q in SAMPLE.questions_for(FIRST.id) if answerable(q)]


@pytest.fixture(scope="module")
def run() -> EvalRun:
    return run_eval(SAMPLE, configs=["answer"], open_memory=open_memory, limit_conversations=1, progress=False)


def test_the_sample_conversation_has_questions_to_score() -> None:
    # guards the test below: abstention questions are left out, everything else is scored
    assert len(SCORED) >= 15
    assert {q.category for q in SCORED} == {"single-hop", "multi-hop", "temporal", "knowledge-update", "preference"}


def test_every_budget_is_measured_for_every_answerable_question(run: EvalRun) -> None:
    assert list(run.configs) == ["answer"]
    result = run.configs["answer"]
    answers = result.answers
    assert answers is not None and answers.budgets == ANSWER_BUDGETS and answers.k is None
    assert list(answers.summaries) == list(ANSWER_BUDGETS)
    assert len(answers.records) == len(SCORED) * len(ANSWER_BUDGETS)
    for budget, s in answers.summaries.items():
        assert s.overall.questions == len(SCORED), budget
        assert sum(c.questions for c in s.per_category.values()) == len(SCORED)
        assert "abstention" not in s.per_category
        for value in (s.overall.strict, s.overall.loose, s.overall.evidence):
            assert value is not None and 0.0 <= value <= 1.0
    # the ordinary recall report covers every question, like the other configurations
    assert result.report.overall.n == len(SCORED) and result.report.overall.no_evidence == 2


def test_more_budget_never_holds_less_and_never_overspends(run: EvalRun) -> None:
    answers = run.configs["answer"].answers
    assert answers is not None
    for r in answers.records:
        assert 0 < r.tokens <= r.budget, r
        assert r.loose or not r.strict, r  # the whole answer present means its words are
    overall = [answers.summaries[b].overall for b in ANSWER_BUDGETS]
    for smaller, larger in itertools.pairwise(overall):
        assert (larger.evidence or 0.0) >= (smaller.evidence or 0.0)
        assert (larger.loose or 0.0) >= (smaller.loose or 0.0)
        assert (larger.mean_tokens or 0.0) >= (smaller.mean_tokens or 0.0)
    # the measure finds something: most answers are in a 4,000-token prompt
    assert (overall[-1].loose or 0.0) >= 0.5 and (overall[-1].evidence or 0.0) >= 0.5


def test_evidence_is_the_share_of_gold_turns_kept_at_that_budget(run: EvalRun) -> None:
    result = run.configs["answer"]
    assert result.answers is not None
    kept = {r.question_id: set(r.retrieved) for r in result.results}  # turns kept at the largest budget
    largest = [r for r in result.answers.records if r.budget == ANSWER_BUDGETS[-1]]
    gold = {q.id: set(q.evidence) for q in SCORED}
    assert len(largest) == len(SCORED)
    for r in largest:
        assert r.evidence == pytest.approx(len(gold[r.question_id] & kept[r.question_id]) / len(gold[r.question_id]))


def test_summary_markdown_and_files(run: EvalRun, tmp_path: Path) -> None:
    data = json.loads(json.dumps(summary(run)))
    cfg = data["configs"]["answer"]
    assert cfg["context_k"] is None
    assert list(cfg["answers"]) == ["500", "1000", "2000", "4000"]
    for row in cfg["answers"].values():
        assert set(row) == {"strict", "loose", "evidence", "mean_tokens", "questions", "per_category"}
        assert row["questions"] == len(SCORED)
        assert set(row["per_category"]["temporal"]) == set(row) - {"per_category"}
    md = to_markdown(run)
    assert "answer in context per budget" in md
    assert "| budget | strict | loose | evidence | mean tokens | questions |" in md
    assert md.count(f"| {len(SCORED)} |") >= len(ANSWER_BUDGETS)
    paths = write_results(run, tmp_path / "out", plot=False)
    detail = json.loads(paths["json"].read_text())["answers_detail"]["answer"]
    assert len(detail) == len(SCORED) * len(ANSWER_BUDGETS)
    assert {"id", "category", "budget", "strict", "loose", "evidence", "tokens"} == set(detail[0])


def test_bad_budgets_and_k_fail_before_anything_is_written() -> None:
    def never(path: Path) -> Memory:
        raise AssertionError(f"must fail before opening a store at {path}")

    # tried: no budgets, a zero and a negative budget, a string budget, k of 0, 1001 and "5"
    for kwargs in ({"answer_budgets": ()}, {"answer_budgets": (0, 500)}, {"answer_budgets": (-5,)},
                   {"answer_budgets": ("500",)}, {"context_k": 0}, {"context_k": 1001}, {"context_k": "5"}):
        with pytest.raises(InvalidInput):
            run_eval(SAMPLE, configs=["answer"], open_memory=never, progress=False, **kwargs)  # type: ignore[arg-type]
