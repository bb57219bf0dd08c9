"""Scores equal rank_bm25.BM25Okapi (same k1, b, epsilon, same tokens) to 1e-6, for
every document, on random corpora, also after removes, re-adds and reloads.

rank_bm25 is rebuilt from scratch over the live documents each time: it is the oracle
that our incremental statistics (N, avgdl, df, the vocabulary's mean idf) must equal.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.longterm.bm25 import Bm25Index, term_counts
from hmem.longterm.text import tokenize

TOL = 1e-6


def _assert_matches_oracle(
    ours: dict[str, float], live: dict[str, list[str]], query: list[str], k1: float, b: float, eps: float
) -> None:
    """``ours``: doc_id → score for the docs we returned (all others must score 0)."""
    ids = list(live)
    oracle = BM25Okapi([live[d] for d in ids], k1=k1, b=b, epsilon=eps).get_scores(query)
    qset = set(query)
    for doc_id, expected in zip(ids, oracle, strict=True):
        if doc_id in ours:
            assert ours[doc_id] == pytest.approx(expected, abs=TOL), doc_id
        else:
            # Not returned: shares no term with the query, so rank_bm25 gives exactly 0.
            assert not qset & set(live[doc_id]), doc_id
            assert expected == 0.0
    assert set(ours) <= set(ids)


def _core_scores(index: Bm25Index, query: list[str]) -> dict[str, float]:
    return dict(index.top_k(query, len(index) + 1))


# Small vocabularies make terms that occur in more than half of the documents, so the
# epsilon floor (negative idf → epsilon * mean idf) is exercised, not just the easy case.
_token = st.sampled_from([f"t{i}" for i in range(12)])
_doc = st.lists(_token, min_size=0, max_size=8)
_op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 15), _doc),
    st.tuples(st.just("remove"), st.integers(0, 15), st.just([])),
)
_params = st.sampled_from([(1.5, 0.75, 0.25), (1.2, 0.5, 0.5), (2.0, 0.0, 0.1), (0.9, 0.9, 1.0)])


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(_op, min_size=1, max_size=40),
    queries=st.lists(st.lists(_token, min_size=1, max_size=5), min_size=1, max_size=4),
    params=_params,
)
def test_core_index_equals_rank_bm25_through_adds_removes_and_readds(
    ops: list[tuple[str, int, list[str]]], queries: list[list[str]], params: tuple[float, float, float]
) -> None:
    k1, b, eps = params
    index = Bm25Index(k1, b, eps)
    live: dict[str, list[str]] = {}
    for op, n, tokens in ops:
        doc_id = f"d{n}"
        if op == "add":
            index.add(doc_id, term_counts(tokens))
            live[doc_id] = tokens
        else:
            assert index.remove(doc_id) == (doc_id in live)
            live.pop(doc_id, None)
        assert len(index) == len(live)
    if not live or not any(live.values()):
        for query in queries:
            assert index.top_k(query, 10) == []
        return
    for query in queries:
        _assert_matches_oracle(_core_scores(index, query), live, query, k1, b, eps)
    # A bulk-built index of the same live docs (the SQLite load path) scores the same.
    counts = {d: term_counts(t) for d, t in live.items()}
    rebuilt = Bm25Index.from_docs(((d, list(c), list(c.values())) for d, c in counts.items()), k1, b, eps)
    for query in queries:
        assert _core_scores(rebuilt, query) == pytest.approx(_core_scores(index, query), abs=1e-9)


def test_slot_compaction_keeps_scores_exact() -> None:
    """Enough removals to trigger slot compaction (more dead slots than live and > 1024)."""
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(300)]
    index = Bm25Index()
    live: dict[str, list[str]] = {}
    for round_ in range(4):
        for i in range(1500):
            doc = rng.choices(vocab, k=rng.randint(1, 12))
            index.add(f"r{round_}-{i}", term_counts(doc))
            live[f"r{round_}-{i}"] = doc
        for doc_id in rng.sample(sorted(live), k=1300):
            index.remove(doc_id)
            del live[doc_id]
    for _ in range(5):
        query = rng.choices(vocab, k=3)
        _assert_matches_oracle(_core_scores(index, query), live, query, 1.5, 0.75, 0.25)


# -- the backends, end to end through tokenize() ---------------------------------------

_WORDS = [
    "coffee",
    "tea",
    "morning",
    "run",
    "running",
    "runner",
    "park",
    "dog",
    "cat",
    "cats",
    "sister",
    "brother",
    "berlin",
    "paris",
    "flight",
    "flights",
    "hotel",
    "book",
    "books",
    "reading",
    "read",
    "dinner",
    "lunch",
    "pizza",
    "sushi",
    "ramen",
    "doctor",
    "appointment",
    "tuesday",
    "friday",
    "birthday",
    "gift",
    "guitar",
    "piano",
    "lesson",
    "lessons",
    "work",
    "project",
    "deadline",
    "2024",
    "42",
    "咖啡",
    "喜欢",
    "北京",
    "大学",
    "妹妹",
    "旅游",
    "猫",
    "工作",
    "周末",
    "电影",
]


def _random_text(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(0, 14)))


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryLexicalIndex | SqliteLexicalIndex]:
    if request.param == "memory":
        yield MemoryLexicalIndex()
    else:
        db = SqliteDatabase(tmp_path / "hmem.db")
        yield SqliteLexicalIndex(db)
        db.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_backend_scores_equal_rank_bm25(backend: MemoryLexicalIndex | SqliteLexicalIndex, seed: int) -> None:
    rng = random.Random(seed)
    live: dict[str, list[str]] = {}
    for step in range(300):
        doc_id = f"m{rng.randint(0, 120)}"
        if step % 5 == 4:
            backend.remove("u", doc_id)
            live.pop(doc_id, None)
        else:
            text = _random_text(rng)
            backend.add("u", doc_id, text)  # re-adds replace
            live[doc_id] = tokenize(text)
        if step % 50 == 49:
            for _ in range(3):
                query_text = " ".join(rng.choices(_WORDS, k=rng.randint(1, 4)))
                hits = backend.search("u", query_text, k=1000)
                _assert_matches_oracle({h.id: h.score for h in hits}, live, tokenize(query_text), 1.5, 0.75, 0.25)
    assert backend.count("u") == len(live)


def test_sqlite_reloaded_and_caught_up_instances_score_like_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    writer = SqliteLexicalIndex(SqliteDatabase(path), k1=1.2, b=0.6, epsilon=0.4)
    reader = SqliteLexicalIndex(SqliteDatabase(path), k1=1.2, b=0.6, epsilon=0.4)
    rng = random.Random(11)
    live: dict[str, list[str]] = {}

    def check() -> None:
        query_text = " ".join(rng.choices(_WORDS, k=3))
        expect_ids = {h.id for h in writer.search("u", query_text, k=1000)}
        got = {h.id: h.score for h in reader.search("u", query_text, k=1000)}
        assert set(got) == expect_ids
        _assert_matches_oracle(got, live, tokenize(query_text), 1.2, 0.6, 0.4)

    for step in range(200):
        doc_id = f"m{rng.randint(0, 60)}"
        if step % 4 == 3:
            writer.remove("u", doc_id)
            live.pop(doc_id, None)
        else:
            text = _random_text(rng)
            writer.add("u", doc_id, text)
            live[doc_id] = tokenize(text)
        if step % 40 == 39:
            check()  # the reader catches up from the change log
    fresh = SqliteLexicalIndex(SqliteDatabase(path), k1=1.2, b=0.6, epsilon=0.4)
    query_text = "coffee 咖啡 run"
    _assert_matches_oracle(
        {h.id: h.score for h in fresh.search("u", query_text, k=1000)}, live, tokenize(query_text), 1.2, 0.6, 0.4
    )
