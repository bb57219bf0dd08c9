"""The generation-stamped per-user BM25 cache behind the SQLite and Redis-backed lexical
indexes: when it catches up, when it rebuilds, when it trusts its own writes, and LRU."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from hmem.backends._lexical_cache import Counts, LexicalCache, Row
from hmem.errors import ConfigError
from hmem.longterm.bm25 import Bm25Index, term_counts


class Truth:
    """A stand-in for the tables / item store: documents, a generation and a change log."""

    def __init__(self, docs: Mapping[str, str]) -> None:
        self.docs = {d: term_counts(t.split()) for d, t in docs.items()}
        self.gen = 1
        self.log: list[tuple[int, str]] = []
        self.log_from = 0  # the oldest generation the log still covers
        self.calls: list[str] = []

    def write(self, doc_id: str, text: str | None) -> None:
        if text is None:
            self.docs.pop(doc_id, None)
        else:
            self.docs[doc_id] = term_counts(text.split())
        self.gen += 1
        self.log.append((self.gen, doc_id))

    def changes(self, since: int) -> tuple[int, Iterable[str]] | None:
        self.calls.append(f"changes({since})")
        if since < self.log_from:
            return None
        return self.gen, [d for g, d in self.log if g > since]

    def fetch(self, ids: list[str]) -> dict[str, Counts]:
        self.calls.append(f"fetch({','.join(ids)})")
        return {d: self.docs[d] for d in ids if d in self.docs}

    def load(self) -> tuple[int, list[Row]]:
        self.calls.append("load")
        return self.gen, [(d, list(c), list(c.values())) for d, c in self.docs.items()]

    def index(self, cache: LexicalCache, user: str = "u1") -> Bm25Index:
        return cache.index(user, self.gen, changes=self.changes, fetch=self.fetch, load=self.load)


def hits(index: Bm25Index, *terms: str) -> list[str]:
    return sorted(doc for doc, _ in index.top_k(list(terms), 10))


def test_first_use_loads_and_an_unchanged_generation_reads_nothing() -> None:
    truth, cache = Truth({"a": "red apple", "b": "green pear"}), LexicalCache()
    assert hits(truth.index(cache), "apple") == ["a"]
    assert truth.calls == ["load"] and (cache.rebuilds, cache.catch_ups) == (1, 0)
    truth.calls.clear()
    truth.index(cache)
    assert truth.calls == []


def test_a_moved_generation_re_reads_only_the_changed_documents() -> None:
    truth, cache = Truth({"a": "red apple", "b": "green pear", "c": "blue plum"}), LexicalCache()
    truth.index(cache)
    truth.write("a", "yellow banana")
    truth.write("b", None)
    truth.write("a", "ripe banana")  # twice in the log: fetched once
    truth.calls.clear()
    index = truth.index(cache)
    assert truth.calls == ["changes(1)", "fetch(a,b)"]
    assert hits(index, "banana") == ["a"] and hits(index, "pear") == [] and hits(index, "apple") == []
    assert len(index) == 2 and (cache.rebuilds, cache.catch_ups) == (1, 1)
    reference = Bm25Index.from_docs(truth.load()[1])
    assert index.top_k(["banana", "plum"], 5) == reference.top_k(["banana", "plum"], 5)


def test_a_change_log_that_no_longer_reaches_back_rebuilds() -> None:
    truth, cache = Truth({"a": "red apple"}), LexicalCache()
    truth.index(cache)
    truth.write("b", "green pear")
    truth.log_from = truth.gen  # pruned past the cache's generation
    truth.calls.clear()
    assert hits(truth.index(cache), "pear") == ["b"]
    assert truth.calls == ["changes(1)", "load"] and cache.rebuilds == 2


def test_own_writes_apply_only_from_the_generation_they_were_made_on() -> None:
    truth, cache = Truth({"a": "red apple"}), LexicalCache()
    truth.index(cache)
    truth.write("b", "green pear")  # this process's write: gen 1 -> 2
    cache.apply("u1", [("b", term_counts(["green", "pear"]))], from_gen=1, to_gen=2)
    truth.calls.clear()
    assert hits(truth.index(cache), "pear") == ["b"] and truth.calls == []  # current, no I/O
    truth.write("c", "blue plum")  # another process: gen 3
    truth.write("d", "black fig")  # this process: gen 4, but the cache is at 2
    cache.apply("u1", [("d", term_counts(["black", "fig"]))], from_gen=3, to_gen=4)
    assert hits(truth.index(cache), "fig", "plum") == ["c", "d"]  # caught up from the log instead
    assert truth.calls == ["changes(2)", "fetch(c,d)"]


def test_writes_without_generations_apply_and_are_re_read_on_the_next_catch_up() -> None:
    truth, cache = Truth({"a": "red apple"}), LexicalCache()
    truth.index(cache)
    cache.apply("u1", [("a", None)])
    cache.apply("nobody", [("x", term_counts(["x"]))])  # an uncached user is not created
    assert cache.users() == ["u1"]
    truth.write("a", None)
    assert hits(truth.index(cache), "apple") == [] and cache.catch_ups == 1


def test_least_recently_used_users_are_dropped_first() -> None:
    truths = {u: Truth({f"{u}-doc": f"{u} words"}) for u in ("u1", "u2", "u3")}
    cache = LexicalCache(max_users=2)
    for user in ("u1", "u2", "u1", "u3"):
        truths[user].index(cache, user)
    assert cache.users() == ["u1", "u3"]
    truths["u2"].calls.clear()
    truths["u2"].index(cache, "u2")
    assert truths["u2"].calls == ["load"] and cache.users() == ["u3", "u2"]
    cache.drop("u3")
    assert cache.users() == ["u2"]


# Settings tried: a zero/negative/bool/float cache size and out-of-range BM25 parameters.
@pytest.mark.parametrize(
    "kwargs",
    [{"max_users": 0}, {"max_users": -1}, {"max_users": True}, {"max_users": 1.5}, {"k1": -0.1}, {"b": 1.5},
     {"epsilon": float("nan")}, {"k1": "1"}],
)  # fmt: skip
def test_bad_settings_are_a_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        LexicalCache(**kwargs)
