"""OfflineFactExtractor: only clauses the user wrote, one claim each, English and Chinese."""

from __future__ import annotations

from hmem.longterm.facts import OfflineFactExtractor
from hmem.types import Message, ToolCall


def extract(*messages: Message) -> list[tuple[str, str]]:
    return [(f.kind, f.text) for f in OfflineFactExtractor().extract(messages).facts]


def test_first_person_statements_of_user_turns_verbatim() -> None:
    facts = extract(
        Message(role="user", content="Hi there! I moved to Lisbon last year. I love grilled sardines. "
                                     "Can you recommend a restaurant?", id="u1"),
    )
    assert facts == [("event", "I moved to Lisbon last year"), ("preference", "I love grilled sardines")]


def test_one_claim_per_fact_and_a_subjectless_english_clause_stays_with_its_claim() -> None:
    facts = extract(Message(role="user", content="I'm Maya, I work as a UX designer at a fintech, living in Salford.",
                            id="u1"))
    assert [t for _, t in facts] == ["I am Maya", "I work as a UX designer at a fintech, living in Salford"]
    # Chinese drops the subject: each clause is a claim of its own.
    assert [t for _, t in extract(Message(role="user", content="我叫王伟，在上海做老师，养了一只猫叫咪咪", id="z"))] == [
        "我叫王伟", "在上海做老师", "养了一只猫叫咪咪"]


def test_every_fact_is_a_substring_of_a_user_message() -> None:
    msgs = [
        Message(role="user", content="My brother Tom works at Siemens in Munich since 2019. ok thanks", id="a"),
        Message(role="assistant", content="I am an AI and I love helping you plan trips to Rome.", id="b"),
        Message(role="user", content="我叫王伟。我住在上海。你觉得呢？好的", id="c"),
        Message(role="assistant", content=None, tool_calls=(ToolCall(id="t", name="f"),), id="d"),
    ]
    result = OfflineFactExtractor().extract(msgs)
    user_text = {m.id: m.content for m in msgs if m.role == "user"}
    assert result.method == "offline" and result.facts
    for f in result.facts:
        assert f.source_message_id in user_text and f.text in (user_text[f.source_message_id] or "")
    texts = [f.text for f in result.facts]
    assert "我叫王伟" in texts and "我住在上海" in texts
    assert "My brother Tom works at Siemens in Munich since 2019" in texts  # "since 2019" stays with its claim
    assert not any("AI" in t for t in texts)  # assistant turns never become user facts
    assert "你觉得呢？" not in texts and "好的" not in texts and "ok thanks" not in texts


def test_small_talk_and_questions_yield_nothing() -> None:
    assert extract(Message(role="user", content="Hello! Thanks. What time is it? Do you know?")) == []
    assert extract(Message(role="user", content="你好。谢谢！")) == []
