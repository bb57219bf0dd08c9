"""Asking for more hits, up to ``rerank_depth``, never reorders the first ones
(hmem/longterm/_recall.py), with the real MiniLM model on the all-memory stack and on
SQLite + Chroma embedded + SQLite BM25.

Each retriever returns ``max(candidates, 3k)`` hits and the steps after fusion re-rank
the best ``max(rerank_depth, k)``: for every ``k`` up to ``rerank_depth`` (100) both are
the config's. When they followed ``k`` from 50 on (``max(50, 3k)``, a head of
``max(k, 50)``), ``recall(q, 10)`` and the first 10 of ``recall(q, 100)`` differed: min-max
fusion over a deeper candidate list gives other scores, and a larger head is re-ranked
differently, so an evaluation asking 100 measured a ranking a caller asking 10 never got.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from longterm_fixtures import Stack, make_stack

from hmem.longterm.options import RecallOptions
from hmem.types import Hit

pytestmark = pytest.mark.slow

PEOPLE = ["My sister", "My boss", "Our neighbour", "My friend Tom", "Grandma", "Priya", "Jonas", "Lena", "Kenji"]
VERBS = ["visited", "complained about", "loves", "photographed", "wrote about", "works at", "painted",
         "went swimming near", "had dinner at"]
PLACES = ["a small bakery", "the harbour", "an old cinema", "a jazz bar", "the library", "a ramen shop",
          "the climbing gym", "a bookshop", "the museum", "a house by the lake", "the pottery studio"]
CITIES = ["Lisbon", "Kyoto", "Berlin", "Oslo", "Porto", "Seoul", "Austin", "Hanoi"]
#: (query, recall keyword arguments besides k): the default path (two rounds, session
#: support, questions, rare words), RRF, a session filter, a named date, importance.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("Who visited a jazz bar in Lisbon?", {}),
    ("What did Priya paint?", {}),
    ("Where does Kenji like to have dinner?", {"fusion": "rrf"}),
    ("Who wrote about the harbour?", {"session_id": "s1"}),
    ("Which museum did Grandma photograph?", {"importance_weight": 0.5}),
]
#: Every k up to the default rerank_depth (100) ranks its hits as a recall of 100 does.
KS = (1, 5, 10, 40, 99)


def _fill(stack: Stack, n: int = 400) -> None:
    """``n`` facts of one user over 4 sessions (more than ``rerank_depth`` hits match a
    question), and another user's facts that must never appear."""
    rng = random.Random(11)
    texts = [f"{rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(PLACES)} in {rng.choice(CITIES)}, note {i}."
             for i in range(n)]
    stack.store.remember_many("u1", [{"text": t, "session_id": f"s{i % 4}", "importance": (i % 5) / 5}
                                     for i, t in enumerate(texts)])
    stack.store.remember_many("u2", [{"text": "Priya painted the jazz bar in Lisbon, u2's note."}])


@pytest.fixture(scope="module", params=["memory", "sqlite+chroma"])
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    made = make_stack(str(request.param), Path(tmp_path_factory.mktemp("depth")))
    _fill(made)
    return made


def _view(hits: list[Hit]) -> list[tuple[str, float, int]]:
    return [(h.item.id, h.score, h.round) for h in hits]


@pytest.mark.parametrize(("query", "kw"), CASES)
def test_the_first_hits_do_not_depend_on_k(stack: Stack, query: str, kw: dict[str, Any]) -> None:
    """Same items, same scores, same rounds, in the same order, for every k in KS."""
    deepest = stack.store.recall("u1", query, k=100, options=RecallOptions(**kw))
    assert len(deepest) == 100 if "session_id" not in kw else len(deepest) > 50
    assert all(h.item.user_id == "u1" for h in deepest)
    for k in KS:
        assert _view(stack.store.recall("u1", query, k=k, options=RecallOptions(**kw))) == _view(deepest[:k]), (query, kw, k)


def test_other_depths_keep_the_prefix_up_to_their_head(stack: Stack) -> None:
    """Candidates 120 and a head of 40: every k up to 40 ranks as a recall of 40 does."""
    before = stack.store.config
    stack.store.config = replace(before, candidates=120, rerank_depth=40)
    try:
        deepest = stack.store.recall("u1", CASES[1][0], k=40)
        for k in (3, 10, 39):
            assert _view(stack.store.recall("u1", CASES[1][0], k=k)) == _view(deepest[:k]), k
    finally:
        stack.store.config = before


def test_a_recall_deeper_than_the_head_still_answers(stack: Stack) -> None:
    """Past rerank_depth the search goes deeper (3k candidates, a head of k): the hits are
    still the user's and distinct (their order may differ from a shallower recall's)."""
    hits = stack.store.recall("u1", CASES[0][0], k=250)
    assert len(hits) == 250 and len({h.item.id for h in hits}) == 250
    assert all(h.item.user_id == "u1" for h in hits)
