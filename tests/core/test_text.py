"""Tokenization for BM25: English, CJK, mixed text; determinism; laziness; fallbacks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmem.longterm.text import CHINESE_STOPWORDS, ENGLISH_STOPWORDS, tokenize, tokenizer_signature


def test_english_lowercases_stems_and_drops_stopwords() -> None:
    assert tokenize("The Runners were RUNNING to the runs") == ["runner", "run", "run"]
    assert tokenize("The Runners were RUNNING", stem=False) == ["runners", "running"]


def test_stemming_makes_inflections_meet() -> None:
    assert tokenize("adopted cats") == tokenize("adopt cat")
    assert tokenize("studies") == tokenize("studying")


def test_nfkc_folds_full_width_and_ligatures() -> None:
    assert tokenize("ＨＥＬＬＯ　Ｗｏｒｌｄ １２３", stem=False) == ["hello", "world", "123"]
    assert tokenize("ﬁle", stem=False) == ["file"]


def test_punctuation_and_emoji_are_separators_and_numbers_are_kept() -> None:
    assert tokenize("pizza!!! 🍕🍕 (2024) -- 3.5% #tag @me snake_case", stem=False) == [
        "pizza",
        "2024",
        "3",
        "5",
        "tag",
        "snake",
        "case",
    ]


def test_apostrophes_possessives_and_contractions() -> None:
    assert tokenize("Anna's dog") == tokenize("Anna\u2019s dog") == ["anna", "dog"]
    assert tokenize("I don't know, it's fine", stem=False) == ["know", "fine"]


def test_only_stopwords_or_symbols_give_no_tokens() -> None:
    assert tokenize("") == []
    assert tokenize("   \n\t") == []
    assert tokenize("what is it that you were doing?") == []
    assert tokenize("!!! ... 😀😀 ---") == []
    assert tokenize("的 了 是 我们") == []


def test_chinese_default_gives_characters_and_bigrams() -> None:
    tokens = tokenize("我喜欢喝咖啡")
    assert "咖啡" in tokens and "喜欢" in tokens and "咖" in tokens
    assert "我" not in tokens  # pronoun stopword, like "I"
    # A query word always meets the document's tokens: its characters and bigrams are there.
    assert set(tokenize("咖啡")) <= set(tokens)


def test_chinese_jieba_mode_segments_words() -> None:
    tokens = tokenize("我在北京大学读书", cjk="jieba")
    assert "北京" in tokens and "大学" in tokens
    assert all(t not in CHINESE_STOPWORDS for t in tokens)
    with_bigrams = tokenize("我在北京大学读书", cjk="jieba+bigram")
    assert set(tokens) < set(with_bigrams) and "学读" in with_bigrams


def test_bigram_mode_and_single_character_runs() -> None:
    assert tokenize("天气很好", cjk="bigram") == ["天气", "气很", "很好"]
    assert tokenize("猫", cjk="bigram") == ["猫"]


def test_japanese_and_korean_get_bigrams() -> None:
    assert tokenize("ねこが好き") == ["ねこ", "こが", "が好", "好き"]
    assert tokenize("안녕하세요") == ["안녕", "녕하", "하세", "세요"]


def test_mixed_language_text_keeps_both_sides() -> None:
    tokens = tokenize("我用Python写machine learning代码，版本3.11")
    assert {"python", "machin", "learn", "代码", "版本", "3", "11"} <= set(tokens)
    assert tokens.index("python") < tokens.index("代码")  # text order is kept


def test_term_frequency_is_kept() -> None:
    assert tokenize("tea tea tea coffee").count("tea") == 3


def test_non_string_raises_type_error() -> None:
    with pytest.raises(TypeError):
        tokenize(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tokenize(b"bytes")  # type: ignore[arg-type]


def test_stopword_lists_are_lowercase_and_normalized() -> None:
    for word in ENGLISH_STOPWORDS:
        assert word == word.lower() and " " not in word
    assert "not" in ENGLISH_STOPWORDS and "the" in ENGLISH_STOPWORDS


def test_signature_names_the_settings() -> None:
    assert tokenizer_signature(stem=True) != tokenizer_signature(stem=False)
    assert tokenizer_signature(cjk="bigram") != tokenizer_signature(cjk="jieba+bigram")


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=200, deadline=None)
@given(_text)
def test_tokens_are_nonempty_trimmed_and_deterministic(text: str) -> None:
    tokens = tokenize(text)
    assert tokens == tokenize(text)
    for token in tokens:
        assert token and token == token.strip()
        assert token not in ENGLISH_STOPWORDS


@settings(max_examples=100, deadline=None)
@given(st.lists(st.from_regex(r"[a-z]{1,8}", fullmatch=True), max_size=12))
def test_punctuation_and_case_do_not_change_english_tokens(words: list[str]) -> None:
    plain = " ".join(words)
    noisy = " ... ".join(w.upper() + "!" for w in words) + " 😀"
    assert tokenize(plain) == tokenize(noisy)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


def test_import_loads_nothing_and_jieba_is_quiet() -> None:
    code = (
        "import sys\n"
        "import hmem.longterm.text as t\n"
        "assert 'jieba' not in sys.modules and 'Stemmer' not in sys.modules, 'loaded at import'\n"
        "print(t.tokenize('我在北京大学读书', cjk='jieba'))\n"
        "assert 'jieba' in sys.modules\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "北京" in result.stdout
    assert result.stderr == ""  # jieba's "Building prefix dict ..." chatter is silenced


def test_without_any_stemmer_it_warns_once_and_does_not_stem() -> None:
    code = (
        "import sys, warnings\n"
        "sys.modules['Stemmer'] = None\n"
        "sys.modules['snowballstemmer'] = None\n"
        "from hmem.longterm.text import tokenize, stemmer_name\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    print(tokenize('running cats'), tokenize('jumping dogs'), stemmer_name())\n"
        "print(len([w for w in caught if 'PyStemmer' in str(w.message)]))\n"
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["['running', 'cats'] ['jumping', 'dogs'] none", "1"]


def test_threads_tokenize_like_one_thread() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"running cats number {i} visited 北京大学 and studied" for i in range(400)]
    expected = [tokenize(t) for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(tokenize, texts)) == expected
