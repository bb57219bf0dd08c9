"""The project's own sample set (data/): size, coverage and internal consistency.

These tests protect the data a retrieval evaluation stands on: a question whose
evidence points at the wrong turn silently lowers every recall number.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from hmem.eval.datasets import CATEGORIES, EvalDataset, load_sample

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def ds() -> EvalDataset:
    return load_sample(DATA)


def test_default_path_is_the_repository_data_folder(ds: EvalDataset) -> None:
    assert load_sample() == ds


def test_size_and_languages(ds: EvalDataset) -> None:
    assert len(ds.conversations) >= 6
    assert len(ds.questions) >= 100
    langs = Counter(c.language for c in ds.conversations)
    assert langs["en"] >= 3
    assert langs["zh"] >= 2


def test_every_conversation_is_long_and_dated(ds: EvalDataset) -> None:
    for conv in ds.conversations:
        assert len(conv.sessions) >= 5, conv.id
        assert conv.turn_count >= 60, conv.id
        dates = [s.date for s in conv.sessions]
        assert dates == sorted(dates), conv.id
        assert len({d.date() for d in dates}) == len(dates), f"{conv.id}: two sessions on one day"
        assert {t.role for _, t in conv.iter_turns()} >= {"user", "assistant"}


def test_every_category_is_present_with_enough_questions(ds: EvalDataset) -> None:
    counts = Counter(q.category for q in ds.questions)
    assert set(counts) == set(CATEGORIES)
    for cat in CATEGORIES:
        assert counts[cat] >= 10, cat


def test_evidence_ids_exist_and_abstention_has_none(ds: EvalDataset) -> None:
    for q in ds.questions:
        known = ds.conversation(q.conversation_id).turn_ids
        assert set(q.evidence) <= known, q.id
        assert set(q.previous_evidence) <= known, q.id
        assert (q.category == "abstention") == (not q.evidence), q.id
        assert q.answer.strip(), q.id


def test_knowledge_updates_point_from_old_to_new(ds: EvalDataset) -> None:
    def position(conv_id: str, turn_id: str) -> int:
        ids = [t.id for _, t in ds.conversation(conv_id).iter_turns()]
        return ids.index(turn_id)

    for q in ds.questions:
        if q.category == "knowledge-update":
            assert q.previous_evidence, q.id
            newest_old = max(position(q.conversation_id, t) for t in q.previous_evidence)
            assert all(position(q.conversation_id, t) > newest_old for t in q.evidence), q.id


def test_evidence_turns_are_not_tool_plumbing(ds: EvalDataset) -> None:
    # Gold must be something a person said; a call with empty text cannot be retrieved.
    for q in ds.questions:
        conv = ds.conversation(q.conversation_id)
        for tid in q.evidence:
            assert conv.turn(tid).text.strip(), (q.id, tid)


def test_tool_calls_are_present_and_answered(ds: EvalDataset) -> None:
    convs_with_tools = 0
    for conv in ds.conversations:
        calls = {c.id for _, t in conv.iter_turns() for c in t.tool_calls}
        answered = {t.tool_call_id for _, t in conv.iter_turns() if t.role == "tool"}
        assert calls == answered, conv.id
        convs_with_tools += bool(calls)
    assert convs_with_tools >= 1


def test_questions_reach_far_back(ds: EvalDataset) -> None:
    # All questions are asked after the last session; many must need session 1.
    first_session = [q for q in ds.questions if any(t.startswith("S1:") for t in q.evidence)]
    assert len(first_session) >= 10
    for q in ds.questions:
        last = ds.conversation(q.conversation_id).sessions[-1].date
        assert q.asked_at is None or q.asked_at >= last, q.id


def _shingles(text: str, language: str) -> set[str]:
    if language == "en":
        words = re.findall(r"\w+", text.lower())
        return {" ".join(words[i : i + 5]) for i in range(len(words) - 4)}
    # Chinese: runs of 6 Han characters (Latin terms such as "paternity leave" are
    # names, not copied sentences).
    runs = re.findall(r"[\u4e00-\u9fff]+", text)
    return {r[i : i + 6] for r in runs for i in range(len(r) - 5)}


def test_questions_paraphrase_their_evidence(ds: EvalDataset) -> None:
    # A question that copies a long span of its evidence makes retrieval trivially easy.
    for q in ds.questions:
        conv = ds.conversation(q.conversation_id)
        lang = "en" if re.search(r"[a-zA-Z]{3}", q.question) and not re.search(r"[\u4e00-\u9fff]", q.question) else "zh"
        for tid in q.evidence:
            shared = _shingles(q.question, lang) & _shingles(conv.turn(tid).text, lang)
            assert not shared, (q.id, tid, shared)


def test_files_match_the_json_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((DATA / "schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    files = sorted((DATA / "conversations").glob("*.json"))
    assert len(files) >= 6
    for f in files:
        errors = [e.message for e in validator.iter_errors(json.loads(f.read_text(encoding="utf-8")))]
        assert not errors, (f.name, errors[:3])
