"""Cross-lingual recall through Memory (the packaged MiniLM, SQLite, in-memory vectors):
a question in English finds what the user said in Chinese, and the other way round;
``cross_lingual=False`` is the recall of before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hmem.memory import Memory

pytestmark = pytest.mark.slow

#: Said in turn by the user (even lines) and the assistant (odd). The durian line, asked
#: about in the first person, is the user's (asked about the asker, recall ranks the
#: assistant's turns down: the `speaker` stage).
SAID = [
    "另外提醒一下，我对榴莲完全没办法，闻到就头痛，所以别推荐任何榴莲甜品。",
    "I spent the weekend fixing the bike chain and cleaning the garage.",
    "Work has been busy, the quarterly report is due on Friday.",
    "我们下个月要去槟城玩三天，想吃当地的小吃。",
    "My sister moved to Melbourne last year and loves the coffee there.",
    "周末带孩子去了动物园，他们最喜欢熊猫。",
    "Our team switched to a four-day week in the summer.",
    "I started a new job at a bank in November.",
]


def _open(path: Path, **settings: object) -> Memory:
    mem = Memory.open(path, vectors="memory", **settings)
    mem.add("kevin", "s1", [{"role": "user" if i % 2 == 0 else "assistant", "content": text}
                            for i, text in enumerate(SAID)])
    assert mem.flush(300)  # the sentence keys are built: the ranking does not depend on the machine's load
    return mem


@pytest.fixture(params=[True, False], ids=["cross-lingual", "off"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, bool]]:
    with _open(tmp_path, cross_lingual=request.param) as memory:
        yield memory, request.param


def _rank(mem: Memory, question: str, needle: str) -> int | None:
    turns = [h for h in mem.recall("kevin", question, 10) if h.item.kind == "turn"]
    return next((i for i, h in enumerate(turns, start=1) if needle in h.item.text), None)


CROSSED = [("Which dessert should I never suggest to Kevin?", "榴莲甜品"),
           ("他在哪家银行开始了新工作？", "new job at a bank")]


def test_a_question_in_one_language_finds_a_turn_said_in_the_other(tmp_path: Path) -> None:
    # The default (multilingual e5, dictionary on): both directions, no settings.
    with _open(tmp_path / "default") as mem:
        for question, needle in CROSSED:
            rank = _rank(mem, question, needle)
            assert rank is not None and rank <= 2, (question, rank)


def test_the_dictionary_bridges_an_english_question_for_an_english_only_embedder(tmp_path: Path) -> None:
    # The dictionary's own worth shows where no embedder bridges the languages: the
    # English-only MiniLM. (A Chinese question over English turns is not bridged for it
    # since BM25 is weighed by its coverage of the question: the question's cross-word
    # character bigrams count as missing words; docs/longterm.md, "Cross-lingual terms".)
    question, needle = CROSSED[0]
    with _open(tmp_path / "on", embed_provider="onnx") as on, \
            _open(tmp_path / "off", cross_lingual=False, embed_provider="onnx") as off:
        with_terms, without = _rank(on, question, needle), _rank(off, question, needle)
    assert with_terms is not None and with_terms <= 2, (question, with_terms)
    assert without is None or without > with_terms, (question, with_terms, without)


def test_same_language_questions_are_found_either_way(mem: tuple[Memory, bool]) -> None:
    memory, _ = mem
    # A turn's BM25 key also holds the turn before it, so the reply after the answer can
    # tie with it: the answer is among the first two.
    for question, needle in (("When is the quarterly report due?", "quarterly report"),
                             ("孩子们最喜欢什么动物？", "熊猫")):
        rank = _rank(memory, question, needle)
        assert rank is not None and rank <= 2, (question, rank)
