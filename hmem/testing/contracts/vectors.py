"""The :class:`~hmem.protocols.VectorIndex` contract suite.

Subclass :class:`VectorIndexContract` and override the ``index`` fixture to yield a
fresh, empty index. The batch methods ``query_many`` and ``query_ids`` are optional
(:class:`~hmem.longterm.store.LongTermStore` falls back to ``query``): set
``has_query_many`` / ``has_query_ids`` to False when the index lacks them. Set
``has_staged = False`` for an index that cannot rebuild a user for a new embedder
(``staged``), and ``stamps_per_user = False`` when one stamp covers every user (one
shared collection, as Chroma's ``scoping="where"``).

Example::

    import pytest
    from hmem.testing.contracts import VectorIndexContract

    class TestMyVectorIndex(VectorIndexContract):
        has_query_ids = False

        @pytest.fixture
        def index(self):
            yield MyVectorIndex()
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from hmem.errors import ConfigError, InvalidInput
from hmem.protocols import IndexStamp, VectorIndex

__all__ = ["VectorIndexContract", "unit_vectors"]


def unit_vectors(rng: np.random.Generator, n: int, dim: int = 8) -> list[list[float]]:
    """``n`` random unit vectors of ``dim`` dimensions."""
    m = rng.normal(size=(n, dim))
    rows: list[list[float]] = (m / np.linalg.norm(m, axis=1, keepdims=True)).tolist()
    return rows


BAD_UPSERTS: list[tuple[str, Callable[[Any], object]]] = [
    ("empty user", lambda i: i.upsert("", ["n"], [[1, 0]])),
    ("id list is a string", lambda i: i.upsert("u1", "n", [[1, 0]])),
    ("fewer vectors than ids", lambda i: i.upsert("u1", ["n", "m"], [[1, 0]])),
    ("NaN", lambda i: i.upsert("u1", ["n"], [[math.nan, 1]])),
    ("infinity", lambda i: i.upsert("u1", ["n"], [[math.inf, 1]])),
    ("zero vector", lambda i: i.upsert("u1", ["n"], [[0, 0]])),
    ("ragged vectors", lambda i: i.upsert("u1", ["n", "m"], [[1, 0], [1]])),
    ("wrong dimension", lambda i: i.upsert("u1", ["n"], [[1, 0, 0]])),
    ("duplicate ids in batch", lambda i: i.upsert("u1", ["n", "n"], [[1, 0], [0, 1]])),
    ("reserved metadata key", lambda i: i.upsert("u1", ["n"], [[1, 0]], [{"_hmem_user": "bob"}])),
    ("nested metadata", lambda i: i.upsert("u1", ["n"], [[1, 0]], [{"x": [1, 2]}])),
    ("metadatas length", lambda i: i.upsert("u1", ["n"], [[1, 0]], [{}, {}])),
    ("control char id", lambda i: i.upsert("u1", ["a\nb"], [[1, 0]])),
]
BAD_QUERIES: list[tuple[str, Callable[[Any], object]]] = [
    ("k=0", lambda i: i.query("u1", [1, 0], k=0)),
    ("k not int", lambda i: i.query("u1", [1, 0], k="3")),
    ("zero query", lambda i: i.query("u1", [0, 0], k=1)),
    ("NaN query", lambda i: i.query("u1", [math.nan, 0], k=1)),
    ("unknown operator", lambda i: i.query("u1", [1, 0], k=1, where={"kind": {"$regex": "x"}})),
    ("two operators", lambda i: i.query("u1", [1, 0], k=1, where={"t": {"$gt": 1, "$lt": 3}})),
    ("$or at top level", lambda i: i.query("u1", [1, 0], k=1, where={"$or": [{"a": 1}]})),
    ("empty $in", lambda i: i.query("u1", [1, 0], k=1, where={"kind": {"$in": []}})),
    ("wrong query dimension", lambda i: i.query("u1", [1, 0, 0], k=1)),
]
BAD_CALLS = BAD_UPSERTS + BAD_QUERIES
MINI, OTHER = IndexStamp("test:mini", 2), IndexStamp("test:other", 3)
BAD_STAMPS: list[tuple[str, Callable[[Any], object]]] = [
    ("not a stamp", lambda i: i.set_stamp("u1", ("test:mini", 2))),
    ("no embedder name", lambda i: i.set_stamp("u1", IndexStamp(None, 2))),
    ("empty embedder name", lambda i: i.set_stamp("u1", IndexStamp(" ", 2))),
    ("zero dimension", lambda i: i.set_stamp("u1", IndexStamp("m", 0))),
    ("bool dimension", lambda i: i.set_stamp("u1", IndexStamp("m", True))),
    ("dimension of no vector", lambda i: i.set_stamp("u1", IndexStamp("test:mini", 3))),
    ("empty user", lambda i: i.stamp("")),
]


class VectorIndexContract:
    """Behaviour every :class:`~hmem.protocols.VectorIndex` must show: exact cosine
    ranking, replace on upsert, the ``where`` operators hmem uses, isolation even with
    equal ids, deletes, awkward user ids, and bad input rejected with nothing changed."""

    has_query_many: ClassVar[bool] = True
    has_query_ids: ClassVar[bool] = True
    has_staged: ClassVar[bool] = True
    stamps_per_user: ClassVar[bool] = True

    @pytest.fixture
    def index(self) -> VectorIndex:
        raise NotImplementedError("override the `index` fixture to yield a fresh, empty VectorIndex")

    def test_satisfies_protocol(self, index: VectorIndex) -> None:
        assert isinstance(index, VectorIndex)

    def test_nearest_first_with_cosine_scores(self, index: VectorIndex) -> None:
        index.upsert("u1", ["x", "y", "z"], [[1, 0, 0], [0.6, 0.8, 0], [0, 0, 1]])
        hits = index.query("u1", [2, 0, 0], k=3)  # unnormalised query: cosine ignores length
        assert [h.id for h in hits] == ["x", "y", "z"]
        assert [round(h.score, 4) for h in hits] == [1.0, 0.6, 0.0]

    def test_matches_exact_search_on_random_data(self, index: VectorIndex) -> None:
        rng = np.random.default_rng(7)
        vecs = unit_vectors(rng, 60)
        ids = [f"d{i}" for i in range(60)]
        index.upsert("u1", ids, vecs)
        for q in unit_vectors(rng, 5):
            exact = np.argsort(-(np.asarray(vecs) @ np.asarray(q)))[:5]
            got = index.query("u1", q, k=5)
            assert [h.id for h in got] == [ids[i] for i in exact]
            assert all(got[i].score >= got[i + 1].score - 1e-6 for i in range(4))

    def test_upsert_replaces_vector_and_metadata(self, index: VectorIndex) -> None:
        index.upsert("u1", ["a"], [[1, 0]], [{"kind": "fact"}])
        index.upsert("u1", ["a"], [[0, 1]], [{"kind": "turn"}])
        assert index.count("u1") == 1
        assert index.query("u1", [0, 1], k=1)[0].score == pytest.approx(1.0, abs=1e-5)
        assert index.query("u1", [0, 1], k=5, where={"kind": "fact"}) == []
        assert [h.id for h in index.query("u1", [0, 1], k=5, where={"kind": "turn"})] == ["a"]

    def test_where_operators(self, index: VectorIndex) -> None:
        metas: list[dict[str, Any]] = [
            {"kind": "fact", "t": 1.0, "s": "s1", "flag": True},
            {"kind": "turn", "t": 2.0, "s": "s1"},
            {"kind": "event", "t": 3.0, "s": "s2", "flag": False},
            {"kind": "fact", "t": 4.0},
        ]
        index.upsert("u1", ["a", "b", "c", "d"], [[1, 0.1 * i] for i in range(4)], metas)

        def ids(where: dict[str, Any]) -> set[str]:
            return {h.id for h in index.query("u1", [1, 0], k=10, where=where)}

        assert ids({"kind": "fact"}) == {"a", "d"}
        assert ids({"kind": {"$in": ["turn", "event"]}}) == {"b", "c"}
        assert ids({"kind": {"$nin": ["fact"]}}) == {"b", "c"}
        assert ids({"kind": {"$ne": "fact"}}) == {"b", "c"}
        assert ids({"t": {"$gte": 2.0}}) == {"b", "c", "d"}
        assert ids({"t": {"$lt": 2.0}}) == {"a"}
        assert ids({"s": "s1", "kind": "turn"}) == {"b"}
        assert ids({"kind": "fact", "t": {"$gt": 1.5}}) == {"d"}
        assert ids({"flag": True}) == {"a"}
        assert ids({"kind": "nothing"}) == set()

    def test_users_are_isolated_even_with_equal_ids(self, index: VectorIndex) -> None:
        index.upsert("alice", ["same", "a2"], [[1, 0], [0.9, 0.1]])
        index.upsert("bob", ["same"], [[0, 1]])
        assert [h.id for h in index.query("bob", [1, 0], k=10)] == ["same"]
        assert index.query("bob", [1, 0], k=10)[0].score == pytest.approx(0.0, abs=1e-5)
        assert index.query("alice", [1, 0], k=1)[0].score == pytest.approx(1.0, abs=1e-5)
        assert (index.count("alice"), index.count("bob"), index.count("carol")) == (2, 1, 0)
        assert index.query("carol", [1, 0], k=3) == []
        index.delete_user("bob")
        assert index.count("bob") == 0 and index.count("alice") == 2

    def test_delete_and_delete_user(self, index: VectorIndex) -> None:
        index.upsert("u1", ["a", "b", "c"], [[1, 0], [0, 1], [1, 1]])
        index.delete("u1", ["b", "missing"])
        assert index.count("u1") == 2
        assert "b" not in {h.id for h in index.query("u1", [0, 1], k=10)}
        index.delete("nobody", ["a"])  # unknown user: no-op
        index.delete_user("u1")
        index.delete_user("u1")  # idempotent
        assert index.count("u1") == 0 and index.query("u1", [1, 0], k=5) == []
        index.upsert("u1", ["z"], [[0, 1]])  # a deleted user can start again
        assert index.count("u1") == 1

    def test_awkward_user_ids(self, index: VectorIndex) -> None:
        users = ["a", "Ann Lee/../中文 ü", "x" * 256, "user.with.dots", "-dash-"]
        for n, user in enumerate(users):
            index.upsert(user, [f"i{n}"], [[1.0, float(n)]])
        for n, user in enumerate(users):
            assert [h.id for h in index.query(user, [1, 0], k=10)] == [f"i{n}"]

    @pytest.mark.parametrize(("label", "call"), BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
    def test_bad_input_is_rejected_and_changes_nothing(self, index: VectorIndex, label: str,
                                                       call: Callable[[VectorIndex], Any]) -> None:
        index.upsert("u1", ["keep"], [[1, 0]], [{"kind": "fact"}])
        with pytest.raises(InvalidInput):
            call(index)
        assert index.count("u1") == 1, label
        hits = index.query("u1", [1, 0], k=5)
        assert [h.id for h in hits] == ["keep"] and hits[0].score == pytest.approx(1.0, abs=1e-5)

    # -- optional batch methods (used by LongTermStore when present) --------------------------

    def test_query_many_equals_one_query_per_vector(self, index: Any) -> None:
        if not self.has_query_many:
            pytest.skip("has_query_many = False: the index offers no query_many")
        rng = np.random.default_rng(3)
        index.upsert("u1", [f"d{i}" for i in range(30)], unit_vectors(rng, 30),
                     [{"kind": "fact" if i % 2 else "turn"} for i in range(30)])
        qs = unit_vectors(rng, 4)
        many = index.query_many("u1", qs, 3, where={"kind": "fact"})
        one_by_one = [[h.id for h in index.query("u1", q, 3, where={"kind": "fact"})] for q in qs]
        assert [[h.id for h in hits] for hits in many] == one_by_one
        assert index.query_many("nobody", qs, 3) == [[], [], [], []]

    def test_query_ids_ranks_only_the_given_ids(self, index: Any) -> None:
        if not self.has_query_ids:
            pytest.skip("has_query_ids = False: the index offers no query_ids")
        rng = np.random.default_rng(4)
        vecs = unit_vectors(rng, 40)
        ids = [f"d{i}" for i in range(40)]
        index.upsert("u1", ids, vecs)
        index.upsert("u2", ["d1", "d2"], unit_vectors(rng, 2))
        allowed = {f"d{i}" for i in range(0, 40, 3)} | {"missing"}
        q = unit_vectors(rng, 1)[0]
        exact = [ids[i] for i in np.argsort(-(np.asarray(vecs) @ np.asarray(q))) if ids[i] in allowed][:5]
        got = index.query_ids("u1", q, 5, allowed)
        assert [h.id for h in got] == exact
        assert index.query_ids("u1", q, 5, set()) == []
        assert index.query_ids("nobody", q, 5, {"d1"}) == []

    # -- stamps: which embedder made a user's vectors ------------------------------------

    def test_a_stamp_is_recorded_and_read_back(self, index: VectorIndex) -> None:
        assert index.stamp("u1") is None and "u1" not in index.users()
        index.set_stamp("u1", MINI)
        index.set_stamp("u1", MINI)  # idempotent
        assert index.stamp("u1") == MINI
        assert index.count("u1") == 0 and index.query("u1", [1, 0], k=3) == []
        if self.stamps_per_user:  # (a shared stamp belongs to no user in particular)
            assert "u1" in index.users() and index.stamp("u2") is None
        index.upsert("u1", ["a"], [[1, 0]])
        assert index.stamp("u1") == MINI and "u1" in index.users()

    def test_vectors_without_a_stamp_report_their_dimension_and_take_one(self, index: VectorIndex) -> None:
        index.upsert("u1", ["a", "b"], [[1, 0], [0, 1]])
        assert index.stamp("u1") == IndexStamp(None, 2)
        assert "u1" in index.users()
        index.set_stamp("u1", MINI)
        assert index.stamp("u1") == MINI and index.count("u1") == 2

    def test_another_stamp_is_refused_and_changes_nothing(self, index: VectorIndex) -> None:
        index.set_stamp("u1", MINI)
        index.upsert("u1", ["a"], [[1, 0]])
        with pytest.raises(ConfigError):
            index.set_stamp("u1", IndexStamp("test:other", 2))
        with pytest.raises(InvalidInput):
            index.upsert("u1", ["b"], [[1, 0, 0]])  # a stamped index takes its dimension only
        assert index.stamp("u1") == MINI and index.count("u1") == 1

    def test_a_stamped_empty_index_refuses_another_dimension(self, index: VectorIndex) -> None:
        index.set_stamp("u1", MINI)
        with pytest.raises(InvalidInput):
            index.upsert("u1", ["a"], [[1, 0, 0]])
        assert index.count("u1") == 0 and index.stamp("u1") == MINI

    def test_delete_user_drops_the_stamp(self, index: VectorIndex) -> None:
        index.set_stamp("u1", MINI)
        index.upsert("u1", ["a"], [[1, 0]])
        index.delete_user("u1")
        assert "u1" not in index.users()
        if not self.stamps_per_user:
            assert index.stamp("u1") == MINI  # the shared stamp stays for the other users
            return
        assert index.stamp("u1") is None
        index.set_stamp("u1", OTHER)  # a deleted user starts again with any embedder
        assert index.stamp("u1") == OTHER

    def test_users_lists_awkward_ids_exactly(self, index: VectorIndex) -> None:
        users = ["a", "Ann Lee/../中文 ü", "x" * 256, "user.with.dots"]
        for user in users:
            index.upsert(user, ["i"], [[1, 0]])
        assert sorted(index.users()) == sorted(users)

    @pytest.mark.parametrize(("label", "call"), BAD_STAMPS, ids=[b[0] for b in BAD_STAMPS])
    def test_bad_stamps_are_rejected_and_change_nothing(self, index: VectorIndex, label: str,
                                                       call: Callable[[VectorIndex], Any]) -> None:
        index.upsert("u1", ["keep"], [[1, 0]])
        with pytest.raises(InvalidInput):
            call(index)
        assert index.stamp("u1") == IndexStamp(None, 2), label
        assert index.count("u1") == 1

    # -- staged rebuilds (hmem reindex) --------------------------------------------------

    def _needs_staged(self) -> None:
        if not self.has_staged:
            pytest.skip("has_staged = False: the index cannot rebuild a user for a new embedder")

    def test_a_staged_rebuild_is_invisible_until_commit_then_replaces_at_once(self, index: VectorIndex) -> None:
        self._needs_staged()
        index.set_stamp("u1", MINI)
        index.upsert("u1", ["a", "b", "c"], [[1, 0], [0, 1], [1, 1]], [{"kind": "fact"}] * 3)
        index.upsert("u2", ["a"], [[1, 0]])
        stage = index.staged("u1", OTHER)
        stage.upsert(["a", "b"], [[1, 0, 0], [0, 1, 0]], [{"kind": "fact"}, {"kind": "turn"}], ["fa", "fb"])
        assert stage.fingerprints() == {"a": "fa", "b": "fb"}
        assert index.stamp("u1") == MINI and index.count("u1") == 3  # the live index is untouched
        assert [h.id for h in index.query("u1", [1, 1], k=1)] == ["c"]
        stage.commit()
        assert index.stamp("u1") == OTHER and index.count("u1") == 2
        assert [h.id for h in index.query("u1", [0, 1, 0], k=5, where={"kind": "turn"})] == ["b"]
        assert index.query("u1", [1, 0, 0], k=1)[0].score == pytest.approx(1.0, abs=1e-5)
        assert index.count("u2") == 1 and index.query("u2", [1, 0], k=1)[0].id == "a"
        assert sorted(index.users()) == ["u1", "u2"]

    def test_a_staged_rebuild_resumes_and_another_stamp_restarts_it(self, index: VectorIndex) -> None:
        self._needs_staged()
        index.upsert("u1", ["a"], [[1, 0]])
        index.staged("u1", OTHER).upsert(["a"], [[0, 0, 1]], [{}], ["f1"])
        again = index.staged("u1", OTHER)  # reopened as left
        assert again.fingerprints() == {"a": "f1"}
        again.upsert(["b"], [[0, 1, 0]], [{}], ["f2"])
        again.delete(["a", "missing"])
        assert again.fingerprints() == {"b": "f2"}
        index.staged("u1", IndexStamp("test:third", 3))  # another embedder: the OTHER area is dropped
        assert index.staged("u1", OTHER).fingerprints() == {}
        assert index.stamp("u1") == IndexStamp(None, 2) and index.count("u1") == 1

    def test_a_rebuild_of_a_user_without_vectors_creates_them(self, index: VectorIndex) -> None:
        self._needs_staged()
        stage = index.staged("new", OTHER)
        stage.upsert(["x"], [[0, 1, 0]], [{}], ["fx"])
        stage.commit()
        assert index.stamp("new") == OTHER and [h.id for h in index.query("new", [0, 1, 0], k=2)] == ["x"]

    def test_bad_staged_writes_are_rejected_and_change_nothing(self, index: VectorIndex) -> None:
        self._needs_staged()
        stage = index.staged("u1", OTHER)
        stage.upsert(["keep"], [[1, 0, 0]], [{}], ["fk"])
        bad: list[tuple[str, Callable[[], object]]] = [
            ("wrong dimension", lambda: stage.upsert(["n"], [[1, 0]], [{}], ["f"])),
            ("fingerprints length", lambda: stage.upsert(["n"], [[1, 0, 0]], [{}], [])),
            ("empty fingerprint", lambda: stage.upsert(["n"], [[1, 0, 0]], [{}], [""])),
            ("NaN", lambda: stage.upsert(["n"], [[math.nan, 0, 0]], [{}], ["f"])),
            ("reserved metadata", lambda: stage.upsert(["n"], [[1, 0, 0]], [{"_hmem_fp": "x"}], ["f"])),
            ("control char id", lambda: stage.delete(["a\nb"])),
        ]
        for label, call in bad:
            with pytest.raises(InvalidInput):
                call()
            assert stage.fingerprints() == {"keep": "fk"}, label
        with pytest.raises(InvalidInput):
            index.staged("u1", IndexStamp(None, 3))
        assert index.stamp("u1") is None
