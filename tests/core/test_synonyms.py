"""Query-side family-word synonyms (BM25 only): which words come in, and which never do."""

from __future__ import annotations

import pytest

from hmem.longterm.synonyms import SYNONYMS, expand_query
from hmem.longterm.text import tokenize


@pytest.mark.parametrize(("query", "added"), [
    ("李雯的父母住在哪里？", ["爸妈", "爸爸", "妈妈"]),
    ("陈浩的老婆叫什么", ["妻子", "太太"]),
    ("Where does Maya's mother live?", ["mom", "mum"]),
    ("What do Tom's kids like?", ["children"]),
    ("Are my parents visiting?", ["mom", "mum", "dad", "mother", "father"]),
])
def test_family_words_bring_in_their_everyday_synonyms(query: str, added: list[str]) -> None:
    assert expand_query(query) == f"{query} {' '.join(added)}"


@pytest.mark.parametrize("query", [
    "What did Caroline research?", "李雯在哪家公司上班？", "", "Momentum and grandmother",  # words, not substrings
    "妈妈 母亲 老妈",  # already there: nothing twice
])
def test_other_queries_are_unchanged(query: str) -> None:
    assert expand_query(query) == query


def test_directed_groups_never_swap_one_parent_for_the_other() -> None:
    assert "爸爸" not in expand_query("我妈妈住在长沙") and "dad" not in expand_query("my mom")


def test_every_synonym_survives_the_bm25_tokenizer() -> None:
    # A word the tokenizer drops (a stopword) would be a synonym that never matches.
    for head, others in SYNONYMS.items():
        for word in (head, *others):
            assert tokenize(word), word
