"""The :class:`~hmem.protocols.LexicalIndex` contract suite.

Subclass :class:`LexicalIndexContract` and override the ``make_index`` fixture: it
returns a function that opens an index on the test's (fresh, initially empty)
storage; several calls may share that storage, as several app instances would.

``add_many`` is optional (:class:`~hmem.longterm.store.LongTermStore` falls back to
``add``): set ``has_add_many = False`` when the index lacks it. By default scores must
equal those of hmem's reference BM25 (:class:`~hmem.backends.memory.lexical.MemoryLexicalIndex`:
BM25Okapi, k1=1.5, b=0.75, hmem's tokenizer); set ``scores_match_reference = False``
for another scoring (the ranking tests still apply).

Example::

    import pytest
    from hmem.testing.contracts import LexicalIndexContract

    class TestMyLexicalIndex(LexicalIndexContract):
        has_add_many = False

        @pytest.fixture
        def make_index(self, tmp_path):
            return lambda: MyLexicalIndex(tmp_path / "bm25")
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.errors import InvalidInput
from hmem.protocols import LexicalIndex, ScoredId

__all__ = ["FACTS", "LexicalIndexContract"]

FACTS = {
    "f1": "I adopted a ginger cat named Mochi last spring",
    "f2": "My sister Anna lives in Berlin and works at a bank",
    "f3": "I run five kilometres in the park every morning",
    "f4": "We are flying to Lisbon in May for a friend's wedding",
    "f5": "Cats make me sneeze but I still love my cat",
    "f6": "I drink black coffee every morning before work",
}
CHINESE = {
    "z1": "我每天早上喝一杯美式咖啡",
    "z2": "我的妹妹在北京大学读计算机",
    "z3": "周末我们去杭州西湖旅游",
    "z4": "I love coffee from Yunnan 云南的咖啡豆很香",
    "e1": "I went to Beijing last year",
}


def ids(hits: list[ScoredId]) -> list[str]:
    return [h.id for h in hits]


def load(index: LexicalIndex, user: str = "alice", docs: dict[str, str] = FACTS) -> None:
    for doc_id, text in docs.items():
        index.add(user, doc_id, text)


BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("add user_id empty", lambda i: i.add("", "d", "text")),
    ("add user_id spaces", lambda i: i.add(" alice", "d", "text")),
    ("add user_id None", lambda i: i.add(None, "d", "text")),
    ("add user_id int", lambda i: i.add(5, "d", "text")),
    ("add doc_id empty", lambda i: i.add("alice", "", "text")),
    ("add doc_id control char", lambda i: i.add("alice", "d\n1", "text")),
    ("add doc_id too long", lambda i: i.add("alice", "d" * 300, "text")),
    ("add text None", lambda i: i.add("alice", "f1", None)),
    ("add text int", lambda i: i.add("alice", "f1", 42)),
    ("add text bytes", lambda i: i.add("alice", "f1", b"cat")),
    ("add text lone surrogate", lambda i: i.add("alice", "f1", "cat \udcff")),
    ("add text oversized", lambda i: i.add("alice", "f1", "cat " * 300_000)),
    ("add_many duplicate ids", lambda i: i.add_many("alice", [("n1", "dog"), ("n1", "cat")])),
    ("add_many bad pair", lambda i: i.add_many("alice", [("n1", "dog"), ("n2",)])),
    ("add_many bad text", lambda i: i.add_many("alice", [("n1", "dog"), ("n2", None)])),
    ("add_many not a list", lambda i: i.add_many("alice", "n1")),
    ("remove doc_id empty", lambda i: i.remove("alice", "")),
    ("remove user_id None", lambda i: i.remove(None, "f1")),
    ("delete_user empty", lambda i: i.delete_user("")),
    ("count user_id int", lambda i: i.count(3)),
    ("search k=0", lambda i: i.search("alice", "cat", k=0)),
    ("search k<0", lambda i: i.search("alice", "cat", k=-3)),
    ("search k float", lambda i: i.search("alice", "cat", k=2.5)),
    ("search k bool", lambda i: i.search("alice", "cat", k=True)),
    ("search k str", lambda i: i.search("alice", "cat", k="3")),
    ("search query None", lambda i: i.search("alice", None, k=3)),
    ("search query bytes", lambda i: i.search("alice", b"cat", k=3)),
    ("search user empty", lambda i: i.search("", "cat", k=3)),
    ("search allowed_ids str", lambda i: i.search("alice", "cat", k=3, allowed_ids="f1")),
    ("search allowed_ids ints", lambda i: i.search("alice", "cat", k=3, allowed_ids={1, 2})),
    ("search allowed_ids dict", lambda i: i.search("alice", "cat", k=3, allowed_ids={"f1": 1})),
    ("term_stats texts str", lambda i: i.term_stats("alice", "cat")),
    ("term_stats texts None", lambda i: i.term_stats("alice", None)),
    ("term_stats texts dict", lambda i: i.term_stats("alice", {"cat": 1})),
    ("term_stats text int", lambda i: i.term_stats("alice", ["cat", 3])),
    ("term_stats text bytes", lambda i: i.term_stats("alice", [b"cat"])),
    ("term_stats text oversized", lambda i: i.term_stats("alice", ["cat " * 300_000])),
    ("term_stats user empty", lambda i: i.term_stats("", ["cat"])),
]

_user = st.sampled_from(["alice", "bob", "carol"])
_word = st.sampled_from(["cat", "dog", "park", "coffee", "tea", "berlin", "run", "book", "猫", "咖啡", "工作", "42"])
_examples = itertools.count()


class LexicalIndexContract:
    """Behaviour every :class:`~hmem.protocols.LexicalIndex` must show: BM25-style
    ranking, replace and remove, isolation in results and in statistics (also under
    generated data), ``allowed_ids``, queries without terms, Chinese text, and bad
    input rejected with nothing changed."""

    has_add_many: ClassVar[bool] = True
    scores_match_reference: ClassVar[bool] = True

    @pytest.fixture
    def make_index(self) -> Callable[[], LexicalIndex]:
        raise NotImplementedError("override the `make_index` fixture to return a function that opens an index")

    @pytest.fixture
    def index(self, make_index: Callable[[], LexicalIndex]) -> LexicalIndex:
        return make_index()

    def test_satisfies_the_protocol(self, index: LexicalIndex) -> None:
        assert isinstance(index, LexicalIndex)

    def test_ranking_prefers_more_and_rarer_matching_terms(self, index: LexicalIndex) -> None:
        load(index)
        hits = index.search("alice", "my cat Mochi", k=10)
        assert ids(hits)[:2] == ["f1", "f5"]  # f1 has the rare "mochi" too
        assert hits[0].score > hits[1].score
        assert ids(index.search("alice", "morning coffee", k=10))[0] == "f6"
        assert ids(index.search("alice", "flights to Lisbon", k=1)) == ["f4"]
        assert index.count("alice") == len(FACTS)

    def test_results_are_sorted_limited_to_k_and_only_matching_docs(self, index: LexicalIndex) -> None:
        load(index)
        hits = index.search("alice", "morning cat", k=3)
        assert len(hits) == 3
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        everything = index.search("alice", "morning cat", k=100)
        assert set(ids(everything)) == {"f1", "f3", "f5", "f6"}  # f2 and f4 share no term

    def test_remove_forgets_the_document(self, index: LexicalIndex) -> None:
        load(index)
        index.remove("alice", "f1")
        assert "f1" not in ids(index.search("alice", "ginger cat Mochi", k=10))
        assert index.search("alice", "mochi", k=10) == []
        assert index.count("alice") == len(FACTS) - 1
        index.remove("alice", "f1")  # removing again is a no-op
        index.remove("alice", "never-added")
        index.remove("nobody", "f1")
        assert index.count("alice") == len(FACTS) - 1

    def test_re_adding_an_id_replaces_the_text(self, index: LexicalIndex) -> None:
        load(index)
        index.add("alice", "f1", "I sold my old bicycle")
        assert index.search("alice", "mochi", k=10) == []
        assert ids(index.search("alice", "bicycle", k=10)) == ["f1"]
        assert index.count("alice") == len(FACTS)

    def test_delete_user_removes_everything_of_that_user_only(self, index: LexicalIndex) -> None:
        load(index, "alice")
        load(index, "bob")
        index.delete_user("alice")
        assert index.count("alice") == 0
        assert index.search("alice", "cat", k=10) == []
        assert index.count("bob") == len(FACTS)
        assert ids(index.search("bob", "Mochi", k=10)) == ["f1"]
        index.delete_user("alice")  # again: no-op
        index.add("alice", "n1", "a new cat")
        assert ids(index.search("alice", "cat", k=10)) == ["n1"]

    def test_users_are_isolated_in_results_and_in_statistics(self, make_index: Callable[[], LexicalIndex]) -> None:
        shared = make_index()
        shared.add("bob", "b1", "my cat sleeps all day")
        shared.add("bob", "b2", "the park was empty")
        alone = shared.search("bob", "cat park", k=5)
        load(shared, "alice")
        assert set(ids(shared.search("bob", "cat morning park coffee Mochi", k=100))) <= {"b1", "b2"}
        # Bob's scores do not depend on Alice's corpus: the same as before she had one.
        assert shared.search("bob", "cat park", k=5) == alone
        if self.scores_match_reference:
            reference = MemoryLexicalIndex()
            reference.add("bob", "b1", "my cat sleeps all day")
            reference.add("bob", "b2", "the park was empty")
            assert alone == reference.search("bob", "cat park", k=5)

    # The index comes from a fixture (each example opens its own, with its own user
    # names), and every subclass runs this one method: both health checks are expected.
    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors])
    @given(
        docs=st.lists(st.tuples(_user, st.integers(0, 9), st.lists(_word, max_size=6)), max_size=30),
        query=st.lists(_word, min_size=1, max_size=4),
        searcher=_user,
        allowed=st.none() | st.sets(st.integers(0, 9)),
    )
    def test_no_call_returns_another_users_documents(
        self, make_index: Callable[[], LexicalIndex], docs: list[tuple[str, int, list[str]]], query: list[str],
        searcher: str, allowed: set[int] | None,
    ) -> None:
        # Each example gets a fresh index and its own user names: storage may be shared.
        index, tag = make_index(), f"ex{next(_examples)}"
        owned: dict[str, set[str]] = {}
        for user, n, words in docs:
            doc_id = f"{user}-{n}"
            index.add(f"{tag}-{user}", doc_id, " ".join(words))
            owned.setdefault(user, set()).add(doc_id)
        # allowed_ids naming other users' docs must not leak them either.
        allowed_ids = None if allowed is None else {f"{u}-{n}" for u in ("alice", "bob", "carol") for n in allowed}
        hits = index.search(f"{tag}-{searcher}", " ".join(query), k=50, allowed_ids=allowed_ids)
        assert set(ids(hits)) <= owned.get(searcher, set())

    def test_allowed_ids_filters_results(self, index: LexicalIndex) -> None:
        load(index)
        assert set(ids(index.search("alice", "morning cat", k=10, allowed_ids={"f3", "f5", "f2"}))) == {"f3", "f5"}
        assert index.search("alice", "morning cat", k=10, allowed_ids=set()) == []
        assert index.search("alice", "morning cat", k=10, allowed_ids={"unknown"}) == []
        # Filtering changes which docs are returned, not their scores.
        full = {h.id: h.score for h in index.search("alice", "morning cat", k=10)}
        for hit in index.search("alice", "morning cat", k=10, allowed_ids={"f3", "f6"}):
            assert hit.score == pytest.approx(full[hit.id])

    @pytest.mark.parametrize("query", ["", "   ", "the and of", "What is it that you were doing?", "!!! 😀 …", "的了是"])
    def test_queries_without_terms_return_nothing(self, index: LexicalIndex, query: str) -> None:
        load(index)
        assert index.search("alice", query, k=10) == []

    def test_unknown_user_and_unknown_terms_return_nothing(self, index: LexicalIndex) -> None:
        load(index)
        assert index.search("nobody", "cat", k=10) == []
        assert index.search("alice", "xylophone", k=10) == []
        assert index.count("nobody") == 0

    def test_term_stats_count_the_documents_holding_each_term(self, index: LexicalIndex) -> None:
        load(index)
        stats = index.term_stats("alice", ["My cats", "", "Mochi, coffee and Lisbon", "xylophone"])
        assert stats.documents == len(FACTS)
        assert len(stats.terms) == 4
        # The index's own terms (stemmed: "cats" and "cat" are one), each counted once.
        assert list(stats.terms[0].values()) == [2]  # f1 and f5 hold "cat"; "my" is a stopword
        assert stats.terms[1] == {}
        assert list(stats.terms[2].values()) == [1, 1, 1]  # f1, f6, f4
        assert list(stats.terms[3].values()) == [0]
        assert index.term_stats("alice", []).terms == ()

    def test_term_stats_follow_writes_and_stay_per_user(self, index: LexicalIndex) -> None:
        load(index)
        load(index, "bob", {"b1": "my cat", "b2": "a cat and a dog", "b3": "cat food"})
        assert list(index.term_stats("alice", ["cat"]).terms[0].values()) == [2]
        assert list(index.term_stats("bob", ["cat"]).terms[0].values()) == [3]
        index.remove("alice", "f5")
        after = index.term_stats("alice", ["cat"])
        assert (after.documents, list(after.terms[0].values())) == (len(FACTS) - 1, [1])
        index.delete_user("bob")
        gone = index.term_stats("bob", ["cat"])
        assert (gone.documents, list(gone.terms[0].values())) == (0, [0])
        nobody = index.term_stats("nobody", ["cat", ""])
        assert (nobody.documents, [dict(t) for t in nobody.terms]) == (0, [{"cat": 0}, {}])

    def test_chinese_queries_find_chinese_documents(self, index: LexicalIndex) -> None:
        load(index, "wang", CHINESE)
        assert ids(index.search("wang", "咖啡", k=10))[:2] in (["z1", "z4"], ["z4", "z1"])
        assert ids(index.search("wang", "妹妹读什么专业", k=1)) == ["z2"]
        assert ids(index.search("wang", "西湖", k=10)) == ["z3"]
        assert set(ids(index.search("wang", "coffee 咖啡", k=10))) == {"z1", "z4"}

    @pytest.mark.parametrize(("name", "call"), BAD_CALLS, ids=[n for n, _ in BAD_CALLS])
    def test_bad_input_raises_invalid_input_and_changes_nothing(
        self, index: LexicalIndex, name: str, call: Callable[[LexicalIndex], object]
    ) -> None:
        if name.startswith("add_many") and not self.has_add_many:
            pytest.skip("has_add_many = False: the index offers no add_many")
        load(index)
        before = [index.search("alice", q, k=10) for q in ("cat", "dog morning", "bicycle")]
        with pytest.raises(InvalidInput) as info:
            call(index)
        assert info.value.field, name  # the error names the offending field
        assert [index.search("alice", q, k=10) for q in ("cat", "dog morning", "bicycle")] == before
        assert index.count("alice") == len(FACTS)

    def test_add_many_adds_a_batch(self, index: Any) -> None:
        if not self.has_add_many:
            pytest.skip("has_add_many = False: the index offers no add_many")
        index.add_many("alice", list(FACTS.items()))
        index.add_many("alice", [])
        assert index.count("alice") == len(FACTS)
        assert ids(index.search("alice", "Mochi", k=3)) == ["f1"]
