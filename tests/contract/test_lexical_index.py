"""Contract suite of the LexicalIndex port, run against every backend.

Plus the SQLite backend's own promises: persistence, and consistency between several
instances (objects, threads, processes) sharing one file.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.errors import ConfigError, InvalidInput
from hmem.protocols import LexicalIndex

Index = MemoryLexicalIndex | SqliteLexicalIndex


@pytest.fixture(params=["memory", "sqlite-file", "sqlite-memory"])
def make_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Index]]:
    dbs: list[SqliteDatabase] = []

    def make() -> Index:
        if request.param == "memory":
            return MemoryLexicalIndex()
        db = SqliteDatabase(":memory:" if request.param == "sqlite-memory" else tmp_path / "hmem.db")
        dbs.append(db)
        return SqliteLexicalIndex(db)

    yield make
    for db in dbs:
        db.close()


@pytest.fixture
def index(make_index: Callable[[], Index]) -> Index:
    return make_index()


def ids(hits: list[Any]) -> list[str]:
    return [h.id for h in hits]


FACTS = {
    "f1": "I adopted a ginger cat named Mochi last spring",
    "f2": "My sister Anna lives in Berlin and works at a bank",
    "f3": "I run five kilometres in the park every morning",
    "f4": "We are flying to Lisbon in May for a friend's wedding",
    "f5": "Cats make me sneeze but I still love my cat",
    "f6": "I drink black coffee every morning before work",
}


def load(index: Index, user: str = "alice", docs: dict[str, str] = FACTS) -> None:
    for doc_id, text in docs.items():
        index.add(user, doc_id, text)


def test_satisfies_the_protocol(index: Index) -> None:
    assert isinstance(index, LexicalIndex)


def test_ranking_prefers_more_and_rarer_matching_terms(index: Index) -> None:
    load(index)
    hits = index.search("alice", "my cat Mochi", k=10)
    assert ids(hits)[:2] == ["f1", "f5"]  # f1 has the rare "mochi" too
    assert hits[0].score > hits[1].score
    assert ids(index.search("alice", "morning coffee", k=10))[0] == "f6"
    assert ids(index.search("alice", "flights to Lisbon", k=1)) == ["f4"]
    assert index.count("alice") == len(FACTS)


def test_results_are_sorted_limited_to_k_and_only_matching_docs(index: Index) -> None:
    load(index)
    hits = index.search("alice", "morning cat", k=3)
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    everything = index.search("alice", "morning cat", k=100)
    assert set(ids(everything)) == {"f1", "f3", "f5", "f6"}  # f2 and f4 share no term


def test_remove_forgets_the_document(index: Index) -> None:
    load(index)
    index.remove("alice", "f1")
    assert "f1" not in ids(index.search("alice", "ginger cat Mochi", k=10))
    assert index.search("alice", "mochi", k=10) == []
    assert index.count("alice") == len(FACTS) - 1
    index.remove("alice", "f1")  # removing again is a no-op
    index.remove("alice", "never-added")
    index.remove("nobody", "f1")
    assert index.count("alice") == len(FACTS) - 1


def test_re_adding_an_id_replaces_the_text(index: Index) -> None:
    load(index)
    index.add("alice", "f1", "I sold my old bicycle")
    assert index.search("alice", "mochi", k=10) == []
    assert ids(index.search("alice", "bicycle", k=10)) == ["f1"]
    assert index.count("alice") == len(FACTS)


def test_delete_user_removes_everything_of_that_user_only(index: Index) -> None:
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


def test_users_are_isolated_in_results_and_in_statistics(make_index: Callable[[], Index]) -> None:
    shared = make_index()
    load(shared, "alice")
    shared.add("bob", "b1", "my cat sleeps all day")
    shared.add("bob", "b2", "the park was empty")
    assert set(ids(shared.search("bob", "cat morning park coffee Mochi", k=100))) <= {"b1", "b2"}
    # Bob's scores do not depend on Alice's corpus: same as in an index with only Bob.
    alone = MemoryLexicalIndex()
    alone.add("bob", "b1", "my cat sleeps all day")
    alone.add("bob", "b2", "the park was empty")
    assert shared.search("bob", "cat park", k=5) == alone.search("bob", "cat park", k=5)


_user = st.sampled_from(["alice", "bob", "carol"])
_word = st.sampled_from(["cat", "dog", "park", "coffee", "tea", "berlin", "run", "book", "猫", "咖啡", "工作", "42"])


@settings(max_examples=25, deadline=None)
@given(
    docs=st.lists(st.tuples(_user, st.integers(0, 9), st.lists(_word, max_size=6)), max_size=30),
    query=st.lists(_word, min_size=1, max_size=4),
    searcher=_user,
    allowed=st.none() | st.sets(st.integers(0, 9)),
)
def test_no_call_returns_another_users_documents(
    docs: list[tuple[str, int, list[str]]], query: list[str], searcher: str, allowed: set[int] | None
) -> None:
    db = SqliteDatabase(":memory:")
    for index in (MemoryLexicalIndex(), SqliteLexicalIndex(db)):
        owned: dict[str, set[str]] = {}
        for user, n, words in docs:
            doc_id = f"{user}-{n}"
            index.add(user, doc_id, " ".join(words))
            owned.setdefault(user, set()).add(doc_id)
        # allowed_ids naming other users' docs must not leak them either.
        allowed_ids = None if allowed is None else {f"{u}-{n}" for u in ("alice", "bob", "carol") for n in allowed}
        hits = index.search(searcher, " ".join(query), k=50, allowed_ids=allowed_ids)
        assert set(ids(hits)) <= owned.get(searcher, set())
    db.close()


def test_allowed_ids_filters_results(index: Index) -> None:
    load(index)
    assert set(ids(index.search("alice", "morning cat", k=10, allowed_ids={"f3", "f5", "f2"}))) == {"f3", "f5"}
    assert index.search("alice", "morning cat", k=10, allowed_ids=set()) == []
    assert index.search("alice", "morning cat", k=10, allowed_ids={"unknown"}) == []
    # Filtering changes which docs are returned, not their scores.
    full = {h.id: h.score for h in index.search("alice", "morning cat", k=10)}
    for hit in index.search("alice", "morning cat", k=10, allowed_ids={"f3", "f6"}):
        assert hit.score == pytest.approx(full[hit.id])


@pytest.mark.parametrize("query", ["", "   ", "the and of", "What is it that you were doing?", "!!! 😀 …", "的了是"])
def test_queries_without_terms_return_nothing(index: Index, query: str) -> None:
    load(index)
    assert index.search("alice", query, k=10) == []


def test_unknown_user_and_unknown_terms_return_nothing(index: Index) -> None:
    load(index)
    assert index.search("nobody", "cat", k=10) == []
    assert index.search("alice", "xylophone", k=10) == []
    assert index.count("nobody") == 0


def test_chinese_queries_find_chinese_documents(index: Index) -> None:
    docs = {
        "z1": "我每天早上喝一杯美式咖啡",
        "z2": "我的妹妹在北京大学读计算机",
        "z3": "周末我们去杭州西湖旅游",
        "z4": "I love coffee from Yunnan 云南的咖啡豆很香",
        "e1": "I went to Beijing last year",
    }
    load(index, "wang", docs)
    assert ids(index.search("wang", "咖啡", k=10))[:2] in (["z1", "z4"], ["z4", "z1"])
    assert ids(index.search("wang", "妹妹读什么专业", k=1)) == ["z2"]
    assert ids(index.search("wang", "西湖", k=10)) == ["z3"]
    assert set(ids(index.search("wang", "coffee 咖啡", k=10))) == {"z1", "z4"}


BAD_CALLS: list[tuple[str, Callable[[Index], object]]] = [
    ("add user_id empty", lambda i: i.add("", "d", "text")),
    ("add user_id spaces", lambda i: i.add(" alice", "d", "text")),
    ("add user_id None", lambda i: i.add(None, "d", "text")),  # type: ignore[arg-type]
    ("add user_id int", lambda i: i.add(5, "d", "text")),  # type: ignore[arg-type]
    ("add doc_id empty", lambda i: i.add("alice", "", "text")),
    ("add doc_id control char", lambda i: i.add("alice", "d\n1", "text")),
    ("add doc_id too long", lambda i: i.add("alice", "d" * 300, "text")),
    ("add text None", lambda i: i.add("alice", "f1", None)),  # type: ignore[arg-type]
    ("add text int", lambda i: i.add("alice", "f1", 42)),  # type: ignore[arg-type]
    ("add text bytes", lambda i: i.add("alice", "f1", b"cat")),  # type: ignore[arg-type]
    ("add text lone surrogate", lambda i: i.add("alice", "f1", "cat \udcff")),
    ("add text oversized", lambda i: i.add("alice", "f1", "cat " * 300_000)),
    ("add_many duplicate ids", lambda i: i.add_many("alice", [("n1", "dog"), ("n1", "cat")])),
    ("add_many bad pair", lambda i: i.add_many("alice", [("n1", "dog"), ("n2",)])),  # type: ignore[list-item]
    ("add_many bad text", lambda i: i.add_many("alice", [("n1", "dog"), ("n2", None)])),  # type: ignore[list-item]
    ("add_many not a list", lambda i: i.add_many("alice", "n1")),  # type: ignore[arg-type]
    ("remove doc_id empty", lambda i: i.remove("alice", "")),
    ("remove user_id None", lambda i: i.remove(None, "f1")),  # type: ignore[arg-type]
    ("delete_user empty", lambda i: i.delete_user("")),
    ("count user_id int", lambda i: i.count(3)),  # type: ignore[arg-type]
    ("search k=0", lambda i: i.search("alice", "cat", k=0)),
    ("search k<0", lambda i: i.search("alice", "cat", k=-3)),
    ("search k float", lambda i: i.search("alice", "cat", k=2.5)),  # type: ignore[arg-type]
    ("search k bool", lambda i: i.search("alice", "cat", k=True)),
    ("search k str", lambda i: i.search("alice", "cat", k="3")),  # type: ignore[arg-type]
    ("search query None", lambda i: i.search("alice", None, k=3)),  # type: ignore[arg-type]
    ("search query bytes", lambda i: i.search("alice", b"cat", k=3)),  # type: ignore[arg-type]
    ("search user empty", lambda i: i.search("", "cat", k=3)),
    ("search allowed_ids str", lambda i: i.search("alice", "cat", k=3, allowed_ids="f1")),  # type: ignore[arg-type]
    ("search allowed_ids ints", lambda i: i.search("alice", "cat", k=3, allowed_ids={1, 2})),  # type: ignore[arg-type]
    ("search allowed_ids dict", lambda i: i.search("alice", "cat", k=3, allowed_ids={"f1": 1})),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("name,call", BAD_CALLS, ids=[n for n, _ in BAD_CALLS])
def test_bad_input_raises_invalid_input_and_changes_nothing(
    index: Index, name: str, call: Callable[[Index], object]
) -> None:
    load(index)
    before = [index.search("alice", q, k=10) for q in ("cat", "dog morning", "bicycle")]
    with pytest.raises(InvalidInput) as info:
        call(index)
    assert info.value.field, name  # the error names the offending field
    assert [index.search("alice", q, k=10) for q in ("cat", "dog morning", "bicycle")] == before
    assert index.count("alice") == len(FACTS)


def test_add_many_adds_a_batch(index: Index) -> None:
    index.add_many("alice", list(FACTS.items()))
    index.add_many("alice", [])
    assert index.count("alice") == len(FACTS)
    assert ids(index.search("alice", "Mochi", k=3)) == ["f1"]


def test_bad_parameters_are_config_errors(tmp_path: Path) -> None:
    for kwargs in ({"k1": -1.0}, {"b": 1.5}, {"epsilon": float("nan")}):
        with pytest.raises(ConfigError):
            MemoryLexicalIndex(**kwargs)  # type: ignore[arg-type]
        with pytest.raises(ConfigError):
            SqliteLexicalIndex(SqliteDatabase(":memory:"), **kwargs)  # type: ignore[arg-type]


# -- SQLite: persistence and several instances on one file --------------------------------


def test_sqlite_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    first = SqliteLexicalIndex(SqliteDatabase(path))
    load(first)
    expected = first.search("alice", "cat morning", k=10)
    reopened = SqliteLexicalIndex(SqliteDatabase(path))
    assert reopened.search("alice", "cat morning", k=10) == expected
    assert reopened.count("alice") == len(FACTS)


def test_sqlite_writes_through_one_instance_are_seen_by_the_next_search_of_another(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    a = SqliteLexicalIndex(SqliteDatabase(path))
    b = SqliteLexicalIndex(SqliteDatabase(path))
    load(a)
    assert ids(b.search("alice", "Mochi", k=5)) == ["f1"]  # b loads (and caches) alice
    a.add("alice", "n1", "Mochi the cat hates the vacuum cleaner")
    assert set(ids(b.search("alice", "Mochi", k=5))) == {"f1", "n1"}
    a.add("alice", "f1", "I adopted a parrot")  # replace
    assert ids(b.search("alice", "Mochi", k=5)) == ["n1"]
    a.remove("alice", "n1")
    assert b.search("alice", "Mochi", k=5) == []
    b.add("alice", "n2", "Mochi again")  # and the other way round, while a's cache is warm
    assert ids(a.search("alice", "Mochi", k=5)) == ["n2"]
    a.delete_user("alice")
    assert b.search("alice", "parrot", k=5) == []
    a.add("alice", "n3", "parrot")  # after delete_user the generation keeps growing
    assert ids(b.search("alice", "parrot", k=5)) == ["n3"]
    assert a.search("alice", "cat", k=5) == b.search("alice", "cat", k=5)


def test_sqlite_reader_far_behind_the_pruned_change_log_reloads(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    writer = SqliteLexicalIndex(SqliteDatabase(path), change_log_keep=3)
    reader = SqliteLexicalIndex(SqliteDatabase(path))
    load(writer)
    assert ids(reader.search("alice", "Mochi", k=5)) == ["f1"]
    for i in range(20):  # far more changes than the log keeps
        writer.add("alice", f"n{i}", f"note {i} about Mochi")
    writer.remove("alice", "f1")
    got = reader.search("alice", "Mochi", k=50)
    assert got == writer.search("alice", "Mochi", k=50)
    assert len(got) == 20


def test_sqlite_writes_from_another_process_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    here = SqliteLexicalIndex(SqliteDatabase(path))
    load(here)
    assert ids(here.search("alice", "Mochi", k=5)) == ["f1"]  # warm cache
    code = (
        "import sys\n"
        "from hmem.backends.sqlite.db import SqliteDatabase\n"
        "from hmem.backends.sqlite.lexical import SqliteLexicalIndex\n"
        "idx = SqliteLexicalIndex(SqliteDatabase(sys.argv[1]))\n"
        "idx.remove('alice', 'f1')\n"
        "idx.add_many('alice', [('p1', 'Mochi sleeps on the sofa'), ('p2', 'Mochi eats tuna')])\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=120)
    assert set(ids(here.search("alice", "Mochi", k=5))) == {"p1", "p2"}
    assert here.count("alice") == len(FACTS) + 1


def test_sqlite_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    instances = [SqliteLexicalIndex(SqliteDatabase(path)) for _ in range(3)]

    def write(n: int) -> None:
        idx = instances[n]
        for i in range(40):
            idx.add("alice", f"w{n}-{i}", f"writer {n} wrote note {i} about tea")
            if i % 10 == 0:
                idx.search("alice", "tea", k=3)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for idx in instances:
        assert idx.count("alice") == 120
        assert len(idx.search("alice", "tea", k=500)) == 120


def test_sqlite_cache_is_bounded_and_evicted_users_still_work(tmp_path: Path) -> None:
    idx = SqliteLexicalIndex(SqliteDatabase(tmp_path / "hmem.db"), max_cached_users=2)
    rng = random.Random(3)
    for user in ("u1", "u2", "u3", "u4"):
        for i in range(5):
            idx.add(user, f"{user}-{i}", rng.choice(["cat", "dog", "tea"]) + " " + user)
    for user in ("u1", "u2", "u3", "u4", "u1"):
        assert {h.id.split("-")[0] for h in idx.search(user, user, k=10)} == {user}
        assert len(idx.cached_users()) <= 2
    assert idx.cached_users()[-1] == "u1"


def test_sqlite_refuses_terms_made_by_another_tokenizer_setting(tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    load(SqliteLexicalIndex(SqliteDatabase(path), stem=True))
    with pytest.raises(ConfigError, match="tokenizer"):
        SqliteLexicalIndex(SqliteDatabase(path), stem=False)
    SqliteLexicalIndex(SqliteDatabase(path), stem=True)  # the same setting opens fine
