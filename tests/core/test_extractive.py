"""The offline summary path: extractive summarizer (pure) and the Summarizer's fallback chain
without any LLM or network."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmem.errors import InvalidInput
from hmem.protocols import LLMReply
from hmem.session.extractive import detect_language, extractive_summary, score_sentence, split_sentences
from hmem.session.summarizer import Summarizer
from hmem.tokens import get_tokenizer
from hmem.types import Message, SessionSummary, ToolCall, Usage

TOK = get_tokenizer("gpt-4o-mini")


def cjk_share(text: str) -> float:
    letters = [ch for ch in text if ch.isalpha()]
    return sum("\u4e00" <= ch <= "\u9fff" for ch in letters) / max(1, len(letters))


ZH_CONVERSATION = [
    ("user", "你好！"),
    ("assistant", "你好，有什么可以帮你的？"),
    ("user", "我叫王伟，在杭州的一家银行工作。"),
    ("assistant", "好的，王伟。"),
    ("user", "我下周三，也就是3月15日，要去上海出差三天。"),
    ("assistant", "明白了。需要我帮你订酒店吗？"),
    ("user", "要的，预算每晚不超过800元，最好离外滩近一点。"),
    ("assistant", "好的，我会按这个标准找。"),
    ("user", "谢谢！"),
    ("user", "另外我对花生过敏，订餐的时候注意一下。"),
    ("assistant", "收到，我记住了：你对花生过敏。"),
    ("user", "我们决定住和平饭店，订两晚。"),
]

EN_CONVERSATION = [
    ("user", "Hi!"),
    ("assistant", "Hello, how can I help you today?"),
    ("user", "My name is Ada Lovelace and I work at Babbage Labs in London."),
    ("assistant", "Nice to meet you, Ada."),
    ("user", "I need to fly to Oslo on 2 June 2025 for a three-day conference."),
    ("assistant", "Got it. Should I look for flights?"),
    ("user", "Yes please, my budget is 450 euros and I prefer morning departures."),
    ("assistant", "Sure."),
    ("user", "Thanks!"),
    ("user", "Also, I am allergic to peanuts, so keep that in mind for meals."),
    ("assistant", "Noted: you are allergic to peanuts."),
    ("user", "We decided on the SAS flight at 07:40."),
]


def conversation(pairs: Sequence[tuple[str, str]]) -> list[Message]:
    return [Message(role=role, content=text, id=f"m{i}") for i, (role, text) in enumerate(pairs)]  # type: ignore[arg-type]


# -- sentence splitting and language -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我叫王伟。我住在上海！你呢？", ["我叫王伟。", "我住在上海！", "你呢？"]),
        ("他说：“明天见。”然后走了", ["他说：“明天见。”", "然后走了"]),
        ("第一；第二……第三", ["第一；", "第二……", "第三"]),
        ("Pi is 3.14. Version v1.2 ships!", ["Pi is 3.14.", "Version v1.2 ships!"]),
        ("line one\nline two", ["line one", "line two"]),
        ("Really?! Yes.", ["Really?!", "Yes."]),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_detect_language() -> None:
    assert detect_language("我下周三去上海出差，住和平饭店") == "zh"
    assert detect_language("I fly to Oslo next week") == "en"
    assert detect_language("我用 Python 写代码") == "zh"  # a few Latin words in Chinese text
    assert detect_language("") == "en"


def test_informative_sentences_outscore_filler() -> None:
    for fact, filler in [
        ("I moved to Berlin on 3 May 2024.", "That sounds nice."),
        ("我3月15日要去上海出差。", "好的。"),
        ("We decided on the 07:40 flight.", "Thanks!"),
    ]:
        assert score_sentence(fact, role="user") > score_sentence(filler, role="user")


# -- language is kept, key facts survive ------------------------------------------------------


def test_chinese_conversation_gives_a_chinese_summary() -> None:
    msgs = conversation(ZH_CONVERSATION)
    out = Summarizer(None, TOK, cap_tokens=200, target_ratio=0.8).fold(None, msgs, user_id="u1", session_id="s1")
    assert out.method == "extractive"
    assert detect_language(out.text) == "zh"
    assert cjk_share(out.text) > 0.9
    assert "用户：" in out.text and "User" not in out.text
    for fact in ("3月15日", "花生过敏", "和平饭店"):
        assert fact in out.text
    assert "谢谢" not in out.text and "你好！" not in out.text


def test_english_conversation_gives_an_english_summary() -> None:
    msgs = conversation(EN_CONVERSATION)
    out = Summarizer(None, TOK, cap_tokens=200, target_ratio=0.8).fold(None, msgs, user_id="u1", session_id="s1")
    assert out.method == "extractive"
    assert detect_language(out.text) == "en"
    assert cjk_share(out.text) == 0
    for fact in ("Ada Lovelace", "2 June 2025", "peanuts", "07:40"):
        assert fact in out.text
    assert "Thanks" not in out.text and "Hi!" not in out.text


def test_summary_aims_at_the_target_ratio() -> None:
    msgs = conversation(EN_CONVERSATION * 4)
    msgs = [m.with_id(f"x{i}") for i, m in enumerate(msgs)]
    s = Summarizer(None, TOK, cap_tokens=400, target_ratio=0.3)
    out = s.fold(None, msgs, user_id="u1", session_id="s1")
    folded = sum(TOK.count(m.text) for m in msgs)
    assert out.tokens <= max(s.min_tokens, 0.3 * folded + 1)
    assert out.tokens == TOK.count(out.text)


def test_tool_outcomes_are_kept() -> None:
    msgs = [
        Message(role="user", content="What's the weather in Oslo tomorrow?", id="q"),
        Message(role="assistant", content=None, tool_calls=(ToolCall("c1", "weather", '{"city":"Oslo"}'),), id="a"),
        Message(role="tool", content="Oslo 2 June: rain, 11°C.", tool_call_id="c1", name="weather", id="t"),
        Message(role="assistant", content="Sure, let me see.", id="b"),
    ]
    out = extractive_summary(None, msgs, tokenizer=TOK, budget=40)
    assert "rain, 11°C" in out
    assert "Tool weather: " in out


def test_incremental_fold_keeps_earlier_facts_and_the_cap() -> None:
    s = Summarizer(None, TOK, cap_tokens=80, target_ratio=0.5)
    msgs = conversation(EN_CONVERSATION)
    first = s.fold(None, msgs[:6], user_id="u1", session_id="s1")
    second = s.fold(first, msgs[6:], user_id="u1", session_id="s1")
    assert "Ada Lovelace" in first.text and "Ada Lovelace" in second.text
    assert "peanuts" in second.text
    assert second.folded_count == 12 and second.covers_until == "m11"
    assert second.tokens <= 80


def test_offline_summary_is_deterministic() -> None:
    msgs = conversation(ZH_CONVERSATION + EN_CONVERSATION)
    texts = {extractive_summary(None, msgs, tokenizer=TOK, budget=60) for _ in range(3)}
    assert len(texts) == 1


def test_broken_offline_step_falls_back_to_raw_archive() -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("boom")

    s = Summarizer(None, TOK, cap_tokens=40, offline=broken)
    out = s.fold(None, conversation(EN_CONVERSATION), user_id="u1", session_id="s1")
    assert out.method == "raw"
    assert out.text.startswith("[user] Hi!")
    assert out.tokens <= 40
    assert s.last_fallback is not None and "boom" in s.last_fallback


# -- the cap and the watermark: properties ----------------------------------------------------


class VerboseLLM:
    """An LLM double that always answers with ``text`` (ignores the budget in the prompt)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def complete(self, messages: Sequence[Message], **kwargs: object) -> LLMReply:
        return LLMReply(text=self.text, model="verbose", usage=Usage(10, 10))


FRAGMENTS = [
    "我叫李娜。",
    "我住在北京朝阳区",
    "3月15日开会",
    "好的",
    "谢谢！",
    "I live in Berlin.",
    "My budget is 450 euros",
    "Sure.",
    "🥜🚀 emoji",
    "def f(x): return x * 2",
    "明天下午3点",
    "We decided on Friday.",
    "",
    "超长句子" * 40,
    "word " * 120,
]
texts = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=80), min_size=1, max_size=4).map(" ".join)
messages_st = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), texts), min_size=1, max_size=12).map(
    lambda pairs: [Message(role=r, content=t, id=f"p{i}") for i, (r, t) in enumerate(pairs)]
)  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=messages_st,
    cap=st.integers(min_value=16, max_value=200),
    ratio=st.floats(min_value=0.05, max_value=1.0),
    previous_text=st.none() | texts,
    llm_text=st.none() | texts,
)
def test_summary_never_exceeds_its_cap_and_watermark_is_last_message(
    messages: list[Message], cap: int, ratio: float, previous_text: str | None, llm_text: str | None
) -> None:
    previous = None
    if previous_text is not None:
        previous = SessionSummary("u1", "s1", previous_text, "older", 5, "llm")
    llm = VerboseLLM(llm_text) if llm_text is not None else None
    s = Summarizer(llm, TOK, cap_tokens=cap, target_ratio=ratio)
    out = s.fold(previous, messages, user_id="u1", session_id="s1")
    assert TOK.count(out.text) <= cap
    assert out.tokens == TOK.count(out.text)
    assert out.covers_until == messages[-1].id
    assert out.folded_count == (5 if previous else 0) + len(messages)
    if llm is None or not (llm_text or "").strip():
        assert out.method in ("extractive", "raw")
    else:
        assert out.method == "llm"


# -- bad input --------------------------------------------------------------------------------


def test_bad_fold_inputs_raise_and_change_nothing() -> None:
    s = Summarizer(None, TOK)
    msgs = conversation(EN_CONVERSATION[:3])
    mine = SessionSummary("u1", "s1", "User: earlier.", "m0", 1, "extractive")
    bad_calls = {
        "no messages": lambda: s.fold(None, [], user_id="u1", session_id="s1"),
        "messages is a string": lambda: s.fold(None, "hello", user_id="u1", session_id="s1"),  # type: ignore[arg-type]
        "message is a dict": lambda: s.fold(None, [{"role": "user", "content": "x"}], user_id="u1", session_id="s1"),  # type: ignore[list-item]
        "empty user id": lambda: s.fold(None, msgs, user_id="", session_id="s1"),
        "bad session id": lambda: s.fold(None, msgs, user_id="u1", session_id="a\nb"),
        "previous of another user": lambda: s.fold(
            replace(mine, user_id="u2"), msgs[1:], user_id="u1", session_id="s1"
        ),
        "previous not a summary": lambda: s.fold("text", msgs, user_id="u1", session_id="s1"),  # type: ignore[arg-type]
        "already covered message": lambda: s.fold(mine, msgs, user_id="u1", session_id="s1"),
    }
    for name, call in bad_calls.items():
        with pytest.raises(InvalidInput):
            call()
        assert s.counts == {"llm": 0, "extractive": 0, "raw": 0}, name


@pytest.mark.parametrize(
    "kwargs",
    [
        {"cap_tokens": 0},
        {"cap_tokens": 8},
        {"cap_tokens": 10.5},
        {"target_ratio": 0},
        {"target_ratio": 1.5},
        {"target_ratio": True},
        {"min_tokens": 0},
    ],
    ids=repr,
)
def test_bad_summarizer_settings(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        Summarizer(None, TOK, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("pairs", [EN_CONVERSATION, ZH_CONVERSATION], ids=["en", "zh"])
def test_tight_budget_keeps_the_densest_facts(pairs: list[tuple[str, str]]) -> None:
    out = extractive_summary(None, conversation(pairs), tokenizer=TOK, budget=40)
    assert TOK.count(out) <= 40
    assert ("2 June 2025" in out) or ("3月15日" in out)  # the date of the trip
    assert ("peanuts" in out) or ("花生" in out)  # the health fact
