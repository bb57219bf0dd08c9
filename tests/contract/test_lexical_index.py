"""The LexicalIndex contract (:class:`hmem.testing.contracts.LexicalIndexContract`) on
every backend: memory, SQLite (file and in-memory database) and the Redis-shared
:class:`~hmem.backends.redis.lexical.SharedLexicalIndex`.

Plus the SQLite backend's own promises: persistence, and consistency between several
instances (objects, threads, processes) sharing one file.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from redis_helpers import redis_prefix  # noqa: F401  (fixture)

from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.lexical import SharedLexicalIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.lexical import SqliteLexicalIndex
from hmem.errors import ConfigError
from hmem.protocols import LexicalIndex, ScoredId, TermStats
from hmem.testing.contracts import LexicalIndexContract
from hmem.testing.contracts.lexical import FACTS, ids, load
from hmem.types import MemoryItem


class TestMemoryLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def make_index(self) -> Callable[[], LexicalIndex]:
        return MemoryLexicalIndex


class TestSqliteFileLexicalIndex(LexicalIndexContract):
    """Every index opened by one test shares one file, as app instances would."""

    @pytest.fixture
    def make_index(self, tmp_path: Path) -> Iterator[Callable[[], LexicalIndex]]:
        dbs: list[SqliteDatabase] = []

        def make() -> LexicalIndex:
            dbs.append(SqliteDatabase(tmp_path / "hmem.db"))
            return SqliteLexicalIndex(dbs[-1])

        yield make
        for db in dbs:
            db.close()


class TestSqliteMemoryLexicalIndex(LexicalIndexContract):
    @pytest.fixture
    def make_index(self) -> Iterator[Callable[[], LexicalIndex]]:
        dbs: list[SqliteDatabase] = []

        def make() -> LexicalIndex:
            dbs.append(SqliteDatabase(":memory:"))
            return SqliteLexicalIndex(dbs[-1])

        yield make
        for db in dbs:
            db.close()


# -- SharedLexicalIndex: a view of a RedisItemStore -------------------------------------------


class ItemBackedLexicalIndex:
    """Writes the way LongTermStore does: the item store first (the shared truth a
    SharedLexicalIndex is rebuilt from), then the index. The document text travels in
    the item's metadata, so any text (also a blank one) is indexed exactly as given.
    Each method lets the index validate first, so bad input changes nothing."""

    def __init__(self, items: RedisItemStore) -> None:
        self.items = items
        self.index = SharedLexicalIndex(items, text_of=lambda item: str(item.metadata["doc"]))

    @staticmethod
    def _item(user_id: str, doc_id: str, text: str) -> MemoryItem:
        return MemoryItem(id=doc_id, user_id=user_id, text=f"document {doc_id}", metadata={"doc": text},
                          created_at=datetime(2024, 1, 1, tzinfo=UTC))

    def add(self, user_id: str, doc_id: str, text: str) -> None:
        self.index.add(user_id, doc_id, text)
        self.items.put([self._item(user_id, doc_id, text)])

    def add_many(self, user_id: str, docs: Iterable[tuple[str, str]]) -> None:
        batch = docs if isinstance(docs, str) else list(docs)  # a str is rejected by the index
        self.index.add_many(user_id, batch)
        self.items.put([self._item(user_id, doc_id, text) for doc_id, text in batch])

    def remove(self, user_id: str, doc_id: str) -> None:
        self.index.remove(user_id, doc_id)
        self.items.delete(user_id, [doc_id])

    def delete_user(self, user_id: str) -> None:
        self.index.delete_user(user_id)
        self.items.delete_user(user_id)

    def search(self, user_id: str, query: str, k: int, allowed_ids: set[str] | None = None) -> list[ScoredId]:
        return self.index.search(user_id, query, k, allowed_ids)

    def term_stats(self, user_id: str, texts: Sequence[str]) -> TermStats:
        return self.index.term_stats(user_id, texts)

    def count(self, user_id: str) -> int:
        return self.index.count(user_id)


class TestSharedLexicalIndex(LexicalIndexContract):
    """Each index opened by one test is another app instance: its own client, item
    store object and cache, on one Redis key prefix (the real server on 127.0.0.1:6379)."""

    @pytest.fixture
    def make_index(self, redis_prefix: tuple[redis.Redis, str]) -> Callable[[], LexicalIndex]:  # noqa: F811
        client, prefix = redis_prefix
        return lambda: ItemBackedLexicalIndex(RedisItemStore(client, prefix=prefix))


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
