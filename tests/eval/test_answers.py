"""The answer-in-context rules (:mod:`hmem.eval.answers`) and their aggregation
(:mod:`hmem.eval.answer_run`): pure functions, no store, no model."""

from __future__ import annotations

from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.eval.answer_run import (
    AnswerRecord,
    answerable,
    check_answer_budgets,
    check_context_k,
    context_text,
    summarise_answers,
)
from hmem.eval.answers import (
    DateMention,
    containment,
    content_words,
    date_renderings,
    find_dates,
    normalise,
)
from hmem.eval.locomo import ADVERSARIAL_ANSWER
from hmem.eval.model import EvalQuestion

PROMPT = (
    "# Memory\n## Recalled from earlier conversations (dated, oldest first)\n"
    "- [2024-02-03, session S2] Maya: It's a senior product designer role at a company called Ondina.\n"
    "- [2024-04-06, session S3] Maya: Hello from Lisbon! First week at Ondina done.\n"
    "- [2024-09-18, session S5] Maya: My mum is visiting Lisbon in October, from the 10th to the 17th.\n"
)


def test_normalise_folds_case_width_and_punctuation_but_keeps_han() -> None:
    assert normalise("  Rui's   WHIPPET,\t41%! ") == "rui s whippet 41"
    assert normalise("Ｋｒａｋóｗ（ＰＬ）") == "kraków pl"  # full-width forms fold (NFKC)
    assert normalise("靠过道的座位，因为她晕机。") == "靠过道的座位 因为她晕机"
    assert normalise("") == ""


def test_content_words_drop_function_words_and_split_han_into_characters() -> None:
    assert content_words("The cat is hers") == ("cat",)
    assert content_words("A rescue greyhound (Pip); its friend is Rui's whippet") == (
        "rescue", "greyhound", "pip", "friend", "rui", "whippet")
    assert content_words("10km, 33,500 CAD") == ("10", "km", "33", "500", "cad")  # numbers are words
    assert content_words("柯基，名叫豆包") == ("柯", "基", "名", "叫", "豆", "包")
    assert content_words("我的猫是在家里的") == ("猫", "家", "里")  # 的 是 在 and 我 carry nothing
    assert content_words("May 2023") == ("may", "2023")  # a month, not the modal verb
    assert content_words("it is what it is") == ()
    assert content_words("Carbon accounting 平台的 data pipeline") == (
        "carbon", "accounting", "平", "台", "data", "pipeline")


def test_strict_needs_the_whole_answer_at_word_boundaries() -> None:
    assert containment("Ondina", PROMPT).strict
    assert containment("a company called Ondina", PROMPT).strict
    assert not containment("Ondin", PROMPT).strict  # a word prefix is not the word
    assert not containment("Ondina studio", PROMPT).strict
    assert containment("python", "我用Python写代码").strict  # Han next to Latin is a boundary
    assert containment("豆包", "它叫豆包吗").strict  # Han has no word boundaries at all


def test_loose_needs_80_percent_of_content_words() -> None:
    four_of_five = containment("senior product designer at Ondina in Porto", PROMPT)
    assert not four_of_five.strict and four_of_five.loose
    assert four_of_five.words_found == pytest.approx(0.8)
    three_of_four = containment("Oat milk (she is lactose intolerant)", "She takes oat milk; lactose upsets her.")
    assert three_of_four.words_found == pytest.approx(0.75) and not three_of_four.loose
    # words, not substrings: "pixel" is not found in "pixels"
    assert containment("Pixel", "pixels are small") == containment("Pixel", "nothing here")


def test_chinese_answers_count_characters() -> None:
    ctx = "- [2024-06-02, session 3] 李雯：我喜欢靠过道的座位，因为我会晕机。"
    exact = containment("靠过道的座位", ctx)
    assert exact.strict and exact.loose
    reworded = containment("靠过道的座位，因为她晕机", ctx)  # 她 vs 我: not a substring, every content char is there
    assert not reworded.strict and reworded.loose and reworded.words_found == 1.0
    window = containment("靠窗的座位", ctx)  # 靠 窗 座 位 (的 carries nothing): 窗, the answer, is missing
    assert not window.loose and window.words_found == pytest.approx(0.75)


def test_answer_without_content_words_is_loose_only_when_strict() -> None:
    for answer, ctx, expected in (("It is", "yes it is", True), ("It is", "nothing", False), ("的", "好的", True)):
        c = containment(answer, ctx)
        assert c.words_found is None, answer
        assert c.loose is c.strict is expected, (answer, ctx)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7 May 2023", [(2023, 5, 7)]),
        ("the 7th of May, 2023", [(2023, 5, 7)]),
        ("May 7, 2023", [(2023, 5, 7)]),
        ("Sept. 3, 2021", [(2021, 9, 3)]),
        ("2023-05-07", [(2023, 5, 7)]),
        ("2023/5/7", [(2023, 5, 7)]),
        ("2023年5月7日", [(2023, 5, 7)]),
        ("２０２３年５月７日", [(2023, 5, 7)]),
        ("May 2023", [(2023, 5, None)]),
        ("2023-05", [(2023, 5, None)]),
        ("2023年5月", [(2023, 5, None)]),
        ("10 to 17 October 2024", [(2024, 10, 10), (2024, 10, 17)]),
        ("2024年8月24日和25日", [(2024, 8, 24), (2024, 8, 25)]),
        ("Saturday 14 September 2024, back in Nov 2024", [(2024, 9, 14), (2024, 11, None)]),
        ("7/5/2023", []),  # day/month or month/day: skipped
        ("31 February 2023", []),  # no such day
        ("2023-2024", []),
        ("mayor 2023", []),
        ("the 14th of September", []),  # no year
    ],
)
def test_find_dates(text: str, expected: list[tuple[int, int, int | None]]) -> None:
    assert [(d.year, d.month, d.day) for d in find_dates(text)] == expected


def test_every_rendering_reads_back_as_its_date() -> None:
    for mention in (DateMention(2023, 5, 7), DateMention(2024, 12, 25), DateMention(2023, 5), DateMention(2024, 11)):
        renderings = date_renderings(mention)
        assert len(renderings) == len(set(renderings)) >= 3
        for text in renderings:
            assert find_dates(text) == (mention,), text
    assert "2023-05-07" in date_renderings(DateMention(2023, 5, 7))
    assert "2023年5月" in date_renderings(DateMention(2023, 5))


@pytest.mark.parametrize("answer", ["7 May 2023", "May 7, 2023", "2023-05-07", "2023年5月7日", "7th May 2023"])
def test_a_date_answer_is_found_in_any_common_format(answer: str) -> None:
    for ctx in ("- [2023-05-07, session 4] Jon: I opened the studio today.", "we met on 7 May, 2023 in town",
                "那天是2023年5月7日", "It was May 7th, 2023."):
        c = containment(answer, ctx)
        assert c.date_match and c.strict and c.loose, (answer, ctx)
    other_day = containment(answer, "- [2023-05-17, session 4] Jon: I opened the studio today.")
    assert other_day.date_match is False and not other_day.strict and not other_day.loose


def test_month_answers_match_any_day_of_that_month_and_ranges_need_both_ends() -> None:
    assert containment("May 2023", "- [2023-05-19, session 2] hi").strict
    assert containment("2023年5月", "on May 19, 2023").strict
    assert not containment("May 2023", "- [2023-06-19, session 2] hi").loose
    # a day answer is not found in a month-only mention
    assert containment("19 May 2023", "sometime in May 2023").date_match is False
    assert containment("10 to 17 October 2024", "[2024-10-10] … [2024-10-17]").strict
    assert containment("10 to 17 October 2024", "[2024-10-10] only").date_match is False
    assert containment("A week in Porto", "no dates at all").date_match is None


def test_bad_input_is_a_clear_error() -> None:
    # tried: empty answer, blank answer, None, a number, bytes; and a non-string context
    for answer in ("", "   \n", None, 42, b"Lisbon"):
        with pytest.raises(InvalidInput, match="answer"):
            containment(answer, PROMPT)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="context"):
        containment("Lisbon", None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        normalise(3)  # type: ignore[arg-type]
    assert containment("Lisbon", "").strict is False  # an empty prompt is allowed: nothing is in it


def test_which_questions_are_scored() -> None:
    def q(answer: str, evidence: tuple[str, ...], category: str) -> EvalQuestion:
        return EvalQuestion("q", "c", "?", answer, evidence, category)

    assert answerable(q("Lisbon", ("D1:1",), "single-hop"))
    assert not answerable(q("Not mentioned in the conversation", (), "abstention"))
    assert not answerable(q(ADVERSARIAL_ANSWER, ("D1:1",), "adversarial"))  # LoCoMo keeps evidence for these
    assert not answerable(q("Not mentioned in the conversation", ("D1:1",), "open-domain"))
    assert not answerable(q("  ", ("D1:1",), "single-hop"))


def test_budget_and_k_checks() -> None:
    assert check_answer_budgets([4000, 500, 500]) == (500, 4000)
    # tried: empty, zero, negative, a string, a bool, a float, a bare string instead of a list
    for bad in ([], [0], [-5], ["500"], [True], [2.5], "500"):
        with pytest.raises(InvalidInput, match="answer_budgets"):
            check_answer_budgets(bad)
    assert check_context_k(None) is None and check_context_k(1000) == 1000
    for k in (0, -1, 1001, "5", 2.5, True):
        with pytest.raises(InvalidInput, match="context_k"):
            check_context_k(k)


def test_context_text_joins_plain_and_part_contents() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "memory"}, {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "user", "content": [{"type": "text", "text": "question"}, {"type": "image_url"}]}]
    assert context_text(messages) == "memory\nquestion"


def test_summaries_average_per_budget_and_category() -> None:
    records = [
        AnswerRecord("a", "temporal", 500, strict=False, loose=True, evidence=0.5, tokens=400),
        AnswerRecord("b", "single-hop", 500, strict=True, loose=True, evidence=1.0, tokens=480),
        AnswerRecord("a", "temporal", 1000, strict=True, loose=True, evidence=1.0, tokens=900),
        AnswerRecord("b", "single-hop", 1000, strict=True, loose=True, evidence=1.0, tokens=700),
    ]
    out = summarise_answers(records, (500, 1000, 2000))
    assert list(out) == [500, 1000, 2000]
    small = out[500].overall
    assert (small.questions, small.strict, small.loose, small.evidence, small.mean_tokens) == (2, 0.5, 1.0, 0.75, 440.0)
    assert list(out[500].per_category) == ["temporal", "single-hop"]
    assert out[500].per_category["temporal"].evidence == 0.5
    assert out[1000].overall.strict == 1.0
    empty = out[2000]
    assert empty.overall.questions == 0 and empty.overall.loose is None and empty.per_category == {}
    assert out[500].to_dict()["per_category"]["single-hop"]["mean_tokens"] == 480.0
    with pytest.raises(InvalidInput, match="budget"):
        summarise_answers(records, (500,))  # a record of budget 1000 has no row
