"""Dataset loaders: our format, LoCoMo (read from ../shared, never copied), LongMemEval.

Bad input tried (each must raise InvalidInput naming the file and the field, and
leave the file untouched): wrong schema_version, unknown top-level key, unknown
language, empty session list, bad session id, bad date, sessions out of order,
duplicate turn id, turn id of another session, unknown role, empty user text,
tool result without a call, tool_calls on a user turn, arguments that are not JSON,
evidence that does not exist, duplicate evidence, abstention with evidence,
non-abstention without evidence, knowledge-update without old turn, unknown category,
not JSON at all, a JSON list instead of an object; LoCoMo: bad date, bad category,
missing question text, non-list root, bad dia_id; LongMemEval: mismatched list
lengths, bad date, unknown role, non-bool has_answer.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.eval.datasets import (
    load_locomo,
    load_longmemeval,
    load_sample,
    load_sample_file,
    normalise_evidence,
    parse_locomo_date,
)

REPO = Path(__file__).resolve().parents[2]
LOCOMO_DIR = REPO.parent / "shared" / "data" / "locomo"
LOCOMO = LOCOMO_DIR / "locomo_dev.json"
AUDIT = LOCOMO_DIR / "audit_corrections_dev.json"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

needs_locomo = pytest.mark.skipif(
    not LOCOMO.exists(), reason=f"LoCoMo dev split not found at {LOCOMO} (it is never copied into the repo)"
)

# -- our format -----------------------------------------------------------------


def _valid_doc() -> dict[str, Any]:
    return {
        "schema_version": 1,
        "id": "t_01",
        "language": "en",
        "speakers": {"user": "Ada", "assistant": "Bot"},
        "sessions": [
            {
                "id": "S1",
                "date": "2024-01-01T10:00:00+00:00",
                "turns": [
                    {"id": "S1:T1", "role": "user", "text": "I keep bees on my roof."},
                    {
                        "id": "S1:T2",
                        "role": "assistant",
                        "text": "",
                        "tool_calls": [{"id": "c1", "name": "lookup", "arguments": '{"q": "bees"}'}],
                    },
                    {"id": "S1:T3", "role": "tool", "name": "lookup", "tool_call_id": "c1", "text": "{}"},
                ],
            },
            {
                "id": "S2",
                "date": "2024-02-01T10:00:00+00:00",
                "turns": [{"id": "S2:T1", "role": "user", "text": "I moved the hives to a garden."}],
            },
        ],
        "questions": [
            {
                "id": "q1",
                "question": "Where are the hives?",
                "answer": "A garden",
                "category": "knowledge-update",
                "evidence": ["S2:T1"],
                "previous_evidence": ["S1:T1"],
            },
            {
                "id": "q2",
                "question": "What is Ada's cat called?",
                "answer": "Not mentioned",
                "category": "abstention",
                "evidence": [],
            },
        ],
    }


def _write(tmp_path: Path, doc: object, name: str = "conv.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def test_valid_document_loads_with_roles_speakers_and_tool_calls(tmp_path: Path) -> None:
    conv, questions = load_sample_file(_write(tmp_path, _valid_doc()))
    assert conv.speakers == ("Ada", "Bot")
    t1, t2, t3 = conv.sessions[0].turns
    assert (t1.speaker, t1.role) == ("Ada", "user")
    assert t2.tool_calls[0].name == "lookup" and t2.text == ""
    assert (t3.role, t3.tool_call_id, t3.speaker) == ("tool", "c1", "lookup")
    assert conv.sessions[0].date == datetime(2024, 1, 1, 10, tzinfo=UTC)
    assert [q.evidence for q in questions] == [("S2:T1",), ()]
    assert questions[0].previous_evidence == ("S1:T1",)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        *head, last = path.split(".")
        target: Any = doc
        for part in head:
            target = target[int(part)] if part.isdigit() else target[part]
        if value is _DELETE:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value

    return apply


_DELETE = object()

BAD_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("schema_version", _set("schema_version", 2), "schema_version"),
    ("unknown top key", _set("colour", "red"), "colour"),
    ("language", _set("language", "fr"), "language"),
    ("no sessions", _set("sessions", []), "sessions"),
    ("session id", _set("sessions.1.id", "session2"), "sessions[1].id"),
    ("date", _set("sessions.0.date", "yesterday"), "sessions[0].date"),
    ("date order", _set("sessions.1.date", "2023-01-01T00:00:00"), "sessions[1].date"),
    ("dup turn", _set("sessions.1.turns.0.id", "S1:T1"), "sessions[1].turns[0].id"),
    ("turn of other session", _set("sessions.1.turns.0.id", "S3:T1"), "sessions[1].turns[0].id"),
    ("role", _set("sessions.0.turns.0.role", "system"), "sessions[0].turns[0].role"),
    ("empty text", _set("sessions.0.turns.0.text", "  "), "sessions[0].turns[0].text"),
    ("text type", _set("sessions.0.turns.0.text", 5), "sessions[0].turns[0].text"),
    ("orphan tool", _set("sessions.0.turns.2.tool_call_id", "c9"), "sessions[0].turns[2].tool_call_id"),
    (
        "user calls tool",
        _set("sessions.1.turns.0.tool_calls", [{"id": "x", "name": "n", "arguments": "{}"}]),
        "sessions[1].turns[0].tool_calls",
    ),
    (
        "args not json",
        _set("sessions.0.turns.1.tool_calls.0.arguments", "{oops"),
        "sessions[0].turns[1].tool_calls[0].arguments",
    ),
    ("missing evidence turn", _set("questions.0.evidence", ["S9:T1"]), "questions[0].evidence[0]"),
    ("dup evidence", _set("questions.0.evidence", ["S2:T1", "S2:T1"]), "questions[0].evidence[1]"),
    ("abstention with evidence", _set("questions.1.evidence", ["S1:T1"]), "questions[1].evidence"),
    ("evidence missing", _set("questions.0.evidence", _DELETE), "questions[0].evidence"),
    ("no old value", _set("questions.0.previous_evidence", []), "questions[0].previous_evidence"),
    ("category", _set("questions.0.category", "trivia"), "questions[0].category"),
    ("dup question id", _set("questions.1.id", "q1"), "questions[1].id"),
    ("speakers", _set("speakers", {"user": "Ada"}), "speakers.assistant"),
    # the stated profile: key not canonical, twice, unknown field, no or unknown evidence, bad lists, empty value
    ("profile key", _set("profile", [{"key": "colour", "value": "red", "evidence": ["S1:T1"]}]), "profile[0].key"),
    ("profile dup key", _set("profile", [{"key": "name", "value": "Ada", "evidence": ["S1:T1"]}] * 2),
     "profile[1].key"),
    ("profile field", _set("profile", [{"key": "name", "value": "Ada", "evidence": ["S1:T1"], "why": "x"}]),
     "profile[0].why"),
    ("profile no evidence", _set("profile", [{"key": "name", "value": "Ada", "evidence": []}]), "profile[0].evidence"),
    ("profile turn", _set("profile", [{"key": "name", "value": "Ada", "evidence": ["S9:T1"]}]),
     "profile[0].evidence[0]"),
    ("profile accept", _set("profile", [{"key": "name", "value": "Ada", "evidence": ["S1:T1"], "accept": [3]}]),
     "profile[0].accept"),
    ("profile value", _set("profile", [{"key": "name", "value": " ", "evidence": ["S1:T1"]}]), "profile[0].value"),
    ("profile type", _set("profile", {"name": "Ada"}), "profile"),
]


def test_stated_profile_loads_and_matches_spellings(tmp_path: Path) -> None:
    doc = copy.deepcopy(_valid_doc())
    doc["profile"] = [{"key": "location", "value": "Lisbon", "accept": ["Campo de Ourique"], "evidence": ["S1:T1"],
                       "earlier": ["Manchester"]}]
    conv, _ = load_sample_file(_write(tmp_path, doc))
    (stated,) = conv.profile
    assert (stated.key, stated.evidence, stated.earlier) == ("location", ("S1:T1",), ("Manchester",))
    assert stated.matches("lisbon") and stated.matches("a flat in Campo de Ourique")
    assert not stated.matches("Manchester") and not stated.matches(None)


@pytest.mark.parametrize(("label", "mutate", "field"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_sample_file_names_file_and_field(
    tmp_path: Path, label: str, mutate: Callable[..., None], field: str
) -> None:
    doc = copy.deepcopy(_valid_doc())
    mutate(doc)
    path = _write(tmp_path, doc)
    before = path.read_bytes()
    with pytest.raises(InvalidInput) as exc:
        load_sample(tmp_path)
    assert exc.value.field == field
    assert str(path) in str(exc.value)
    assert path.read_bytes() == before


def test_non_json_and_wrong_root_are_rejected(tmp_path: Path) -> None:
    p = tmp_path / "broken.json"
    p.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"broken\.json"):
        load_sample_file(p)
    p.write_text("[]", encoding="utf-8")
    with pytest.raises(InvalidInput, match="must be a JSON object") as exc:
        load_sample_file(p)
    assert exc.value.field == "(root)"


def test_conversation_ids_must_be_unique_across_files(tmp_path: Path) -> None:
    _write(tmp_path, _valid_doc(), "a.json")
    doc = _valid_doc()
    doc["questions"] = []
    _write(tmp_path, doc, "b.json")
    with pytest.raises(InvalidInput, match=r"b\.json: id: conversation id 't_01' is also used by"):
        load_sample(tmp_path)


def test_missing_sample_folder_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="pass path=") as exc:
        load_sample(tmp_path / "nowhere")
    assert exc.value.field == "path"
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInput, match="no conversation files"):
        load_sample(tmp_path / "empty")


# -- LoCoMo ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "ids", "rejected"),
    [
        ("D1:3", ["D1:3"], []),
        ("D8:6; D9:17", ["D8:6", "D9:17"], []),
        ("D9:1 D4:4 D4:6", ["D9:1", "D4:4", "D4:6"], []),
        ("D:11:26", ["D11:26"], []),
        ("D30:05", ["D30:5"], []),
        ("D", [], ["D"]),
        ("", [], []),
        ("D0:3, D2:x", [], ["D0:3", "D2:x"]),
    ],
)
def test_normalise_evidence(raw: str, ids: list[str], rejected: list[str]) -> None:
    assert normalise_evidence(raw) == (ids, rejected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("10:04 AM on 19 December 2023", datetime(2023, 12, 19, 10, 4, tzinfo=UTC)),
    ],
)
def test_parse_locomo_date(text: str, expected: datetime) -> None:
    assert parse_locomo_date(text) == expected


@pytest.mark.parametrize("text", ["8 May 2023", "13:56 pm on 8 May, 2023", "1:56 pm on 8 Mai, 2023", ""])
def test_parse_locomo_date_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_locomo_date(text)


def _tiny_locomo() -> list[dict[str, Any]]:
    # Hand-written in LoCoMo's layout (no LoCoMo text is copied).
    return [
        {
            "sample_id": "tiny-1",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Ben",
                "session_1_date_time": "9:00 am on 2 March, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I planted tulips."},
                    {
                        "speaker": "Ben",
                        "dia_id": "D1:2",
                        "text": "Look at mine!",
                        "blip_caption": "a photo of red tulips",
                    },
                ],
                "session_2_date_time": "6:30 pm on 20 March, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "They bloomed."}],
                "session_3_date_time": "7:00 pm on 1 April, 2023",
            },
            "qa": [
                {"question": "What did Ann plant?", "answer": "Tulips", "evidence": ["D1:1"], "category": 4},
                {"question": "When did they bloom?", "answer": 2023, "evidence": ["D2:01; D7:7", "D"], "category": 2},
                {"question": "Did Ben plant roses?", "adversarial_answer": "Yes", "evidence": ["D1:2"], "category": 5},
            ],
        }
    ]


def test_tiny_locomo_maps_layout_and_counts_fixes(tmp_path: Path) -> None:
    ds = load_locomo(_write(tmp_path, _tiny_locomo()))
    (conv,) = ds.conversations
    assert [s.id for s in conv.sessions] == ["session_1", "session_2"]
    assert conv.sessions[1].date == datetime(2023, 3, 20, 18, 30, tzinfo=UTC)
    assert [t.role for _, t in conv.iter_turns()] == ["user", "assistant", "user"]
    assert conv.turn("D1:2").image_caption == "a photo of red tulips"
    q1, q2, q3 = ds.questions
    assert (q1.id, q1.category, q1.evidence) == ("tiny-1:q1", "single-hop", ("D1:1",))
    assert (q2.answer, q2.category, q2.evidence) == ("2023", "temporal", ("D2:1",))
    assert q3.category == "adversarial" and q3.metadata["adversarial_answer"] == "Yes"
    assert ds.counts["evidence_missing_turn_dropped"] == 1
    assert ds.counts["evidence_malformed_dropped"] == 1
    assert ds.counts["sessions_without_turns"] == 1


LOCOMO_BAD: list[tuple[str, Callable[[list[dict[str, Any]]], None], str]] = [
    (
        "date",
        lambda d: d[0]["conversation"].__setitem__("session_1_date_time", "March 2nd"),
        "[0].conversation.session_1_date_time",
    ),
    ("category", lambda d: d[0]["qa"][0].__setitem__("category", 9), "[0].qa[0].category"),
    ("question", lambda d: d[0]["qa"][0].pop("question"), "[0].qa[0].question"),
    ("answer", lambda d: d[0]["qa"][0].pop("answer"), "[0].qa[0].answer"),
    (
        "dia_id",
        lambda d: d[0]["conversation"]["session_1"][0].__setitem__("dia_id", "turn one"),
        "[0].conversation.session_1[0].dia_id",
    ),
    ("speaker", lambda d: d[0]["conversation"].pop("speaker_b"), "[0].conversation.speaker_b"),
]


@pytest.mark.parametrize(("label", "mutate", "field"), LOCOMO_BAD, ids=[c[0] for c in LOCOMO_BAD])
def test_bad_locomo_names_file_and_field(tmp_path: Path, label: str, mutate: Callable[..., None], field: str) -> None:
    doc = _tiny_locomo()
    mutate(doc)
    path = _write(tmp_path, doc, "locomo.json")
    with pytest.raises(InvalidInput) as exc:
        load_locomo(path)
    assert exc.value.field == field
    assert str(path) in str(exc.value)


def test_missing_locomo_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="does not exist"):
        load_locomo(tmp_path / "locomo10.json")


@pytest.fixture(scope="module")
def locomo_dev() -> Any:
    return load_locomo(LOCOMO)


@needs_locomo
def test_locomo_dev_shape(locomo_dev: Any) -> None:
    ds = locomo_dev
    assert [c.id for c in ds.conversations] == ["conv-26", "conv-41", "conv-43", "conv-47", "conv-49"]
    assert len(ds.questions) == 1020
    assert set(ds.categories) == {"multi-hop", "temporal", "open-domain", "single-hop", "adversarial"}
    for q in ds.questions:
        assert set(q.evidence) <= ds.conversation(q.conversation_id).turn_ids, q.id
    conv26 = ds.conversation("conv-26")
    assert conv26.sessions[0].date == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    dates = [s.date for s in conv26.sessions]
    assert dates == sorted(dates)
    assert ds.counts["sessions_without_turns"] > 0  # date keys without sessions are ignored


@needs_locomo
def test_locomo_dev_evidence_normalisation(locomo_dev: Any) -> None:
    ds = locomo_dev
    raw = json.loads(LOCOMO.read_text(encoding="utf-8"))
    by_text = {(s["sample_id"], q["question"]): q for s in raw for q in s["qa"]}
    loaded = {(q.conversation_id, q.question): q for q in ds.questions}
    cases = {"D8:6; D9:17": ["D8:6", "D9:17"], "D:11:26": ["D11:26"], "D9:1 D4:4 D4:6": ["D9:1", "D4:4", "D4:6"]}
    seen = set()
    for key, rq in by_text.items():
        for raw_ev, expected in cases.items():
            if raw_ev in rq["evidence"]:
                seen.add(raw_ev)
                assert set(expected) <= set(loaded[key].evidence)
    assert seen == set(cases)
    assert ds.counts["evidence_missing_turn_dropped"] >= 1  # conv-47 cites D4:36, which does not exist
    assert any("D4:36" in w for w in ds.warnings)


@needs_locomo
def test_locomo_dev_corrections_replace_wrong_citations(locomo_dev: Any) -> None:
    fixed = load_locomo(LOCOMO, corrections_path=AUDIT)
    rows = json.loads(AUDIT.read_text(encoding="utf-8"))
    wrong = [r for r in rows if r["error_type"] == "WRONG_CITATION"]
    assert fixed.counts["corrections_applied"] == len(wrong)
    assert fixed.counts.get("corrections_unmatched", 0) == 0
    before = {(q.conversation_id, q.question): q for q in locomo_dev.questions}
    after = {(q.conversation_id, q.question): q for q in fixed.questions}
    for r in wrong:
        key = (r["sample_id"], r["question"])
        assert list(after[key].evidence) == r["correct_evidence"]
        assert after[key].metadata["audit"] == "WRONG_CITATION"
    untouched = set(before) - {(r["sample_id"], r["question"]) for r in rows}
    assert all(before[k].evidence == after[k].evidence for k in untouched)


def test_corrections_that_match_nothing_are_counted(tmp_path: Path) -> None:
    data = _write(tmp_path, _tiny_locomo(), "locomo.json")
    audit = _write(
        tmp_path,
        [
            {
                "sample_id": "tiny-1",
                "question": "What did Ann plant?",
                "error_type": "WRONG_CITATION",
                "correct_evidence": ["D2:1"],
            },
            {"sample_id": "tiny-1", "question": "Unknown?", "error_type": "WRONG_CITATION", "correct_evidence": []},
        ],
        "audit.json",
    )
    ds = load_locomo(data, corrections_path=audit)
    assert ds.questions[0].evidence == ("D2:1",)
    assert ds.counts["corrections_applied"] == 1
    assert ds.counts["corrections_unmatched"] == 1


# -- LongMemEval ----------------------------------------------------------------


def test_longmemeval_fixture() -> None:
    ds = load_longmemeval(FIXTURES / "longmemeval_tiny.json")
    assert [c.id for c in ds.conversations] == ["tiny_q1", "tiny_q2", "tiny_q3_abs"]
    q1, q2, q3 = ds.questions
    assert q1.evidence == ("answer_tiny1_1_1",)
    assert q1.category == "single-session-user"
    assert q1.asked_at == datetime(2023, 6, 1, 10, 0, tzinfo=UTC)
    conv1 = ds.conversation("tiny_q1")
    assert conv1.sessions[1].date == datetime(2023, 5, 20, 21, 40, tzinfo=UTC)
    assert conv1.turn("answer_tiny1_1_3").text.startswith("Thanks")
    assert q2.evidence == ("answer_tiny2_1_1", "answer_tiny2_2_1") and q2.answer == "7"
    assert q2.metadata["answer_session_ids"] == "answer_tiny2_1 answer_tiny2_2"
    assert (q3.category, q3.evidence) == ("abstention", ())
    assert ds.counts["questions_without_evidence"] == 1


LME_BAD: list[tuple[str, Callable[[list[dict[str, Any]]], None], str]] = [
    ("lengths", lambda d: d[0]["haystack_dates"].pop(), "[0].haystack_sessions"),
    ("date", lambda d: d[0]["haystack_dates"].__setitem__(0, "May 2nd"), "[0].haystack_dates[0]"),
    (
        "role",
        lambda d: d[0]["haystack_sessions"][0][0].__setitem__("role", "system"),
        "[0].haystack_sessions[0][0].role",
    ),
    (
        "has_answer",
        lambda d: d[0]["haystack_sessions"][1][0].__setitem__("has_answer", "yes"),
        "[0].haystack_sessions[1][0].has_answer",
    ),
    ("question", lambda d: d[1].pop("question"), "[1].question"),
]


@pytest.mark.parametrize(("label", "mutate", "field"), LME_BAD, ids=[c[0] for c in LME_BAD])
def test_bad_longmemeval_names_file_and_field(
    tmp_path: Path, label: str, mutate: Callable[..., None], field: str
) -> None:
    doc = json.loads((FIXTURES / "longmemeval_tiny.json").read_text(encoding="utf-8"))
    mutate(doc)
    path = _write(tmp_path, doc, "lme.json")
    with pytest.raises(InvalidInput) as exc:
        load_longmemeval(path)
    assert exc.value.field == field
    assert str(path) in str(exc.value)
