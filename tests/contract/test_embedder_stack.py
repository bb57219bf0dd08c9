"""The embedder stack a Memory builds (issue #17 §2), on the real packaged model:
:class:`BatchingEmbedder` (concurrent calls share one model call) and
:class:`LruEmbeddingCache` (bounded, in front of the SQLite cache) pass the Embedder
contract, return the wrapped model's vectors, coalesce concurrent callers, give each
caller its own error, and close without leaving anything behind."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import ConfigError, InvalidInput, ProviderError
from hmem.protocols import Embedder
from hmem.providers.batching import BatchingEmbedder
from hmem.providers.embed import CachedEmbedder, LruEmbeddingCache, SentenceTransformerEmbedder, SqliteEmbeddingCache
from hmem.testing.contracts import EmbedderContract
from hmem.testing.contracts.embed import TEXTS
from hmem.testing.embedders import CountingEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


class TestBatchingEmbedder(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Embedder:
        return BatchingEmbedder(SentenceTransformerEmbedder(), max_wait_s=0.002, max_batch=5)  # 8 texts: 2 calls


class TestTheStackMemoryBuilds(EmbedderContract):
    """Memory.open's composition: LRU + SQLite cache → batcher → model."""

    @pytest.fixture
    def embedder(self) -> Iterator[Embedder]:
        db = SqliteDatabase(":memory:")
        batcher = BatchingEmbedder(SentenceTransformerEmbedder())
        yield CachedEmbedder(batcher, LruEmbeddingCache(SqliteEmbeddingCache(db), 4))
        batcher.close()
        db.close()


class Gated:
    """The real model behind a gate: the first call waits until the test opens it, so
    the test knows every other caller queued up meanwhile. ``fail_on``: texts whose
    call raises (a provider failing on one caller's input)."""

    def __init__(self, inner: Any, *, fail_on: str | None = None) -> None:
        self.inner = CountingEmbedder(inner)
        self.gate = threading.Event()
        self.fail_on = fail_on
        self.model_name, self.dimension, self.symmetric = inner.model_name, inner.dimension, True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.gate.wait(30)
        if self.fail_on is not None and self.fail_on in texts:
            raise ProviderError(f"the provider refused {self.fail_on!r}")
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def run_concurrently(batcher: BatchingEmbedder, calls: list[Callable[[], Any]], gate: threading.Event, *,
                     entering: int | None = None) -> list[Any]:
    """Start every call on its own thread, open the gate once all (or ``entering``) are
    queued, and return each call's result or exception, in order."""
    out: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            out[i] = calls[i]()
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    expected = len(calls) if entering is None else entering
    while batcher.requests < expected and time.monotonic() < deadline:
        time.sleep(0.005)
    assert batcher.requests == expected, "not every caller reached the batcher"
    gate.set()
    for t in threads:
        t.join(30)
    return out


def test_concurrent_callers_share_model_calls_and_each_gets_its_own_vectors(model: SentenceTransformerEmbedder) -> None:
    gated = Gated(model)
    batcher = BatchingEmbedder(gated, max_wait_s=0.005, max_batch=64)
    jobs = [[TEXTS[i % len(TEXTS)], f"caller {i} says hello"] for i in range(12)]
    results = run_concurrently(batcher, [functools.partial(batcher.embed, texts) for texts in jobs], gated.gate)
    # The first caller ran alone (the gate held it); the 11 that queued meanwhile shared one call.
    assert gated.inner.calls == 2 < len(jobs)
    assert batcher.calls == 2 and batcher.requests == len(jobs)
    for texts, got in zip(jobs, results, strict=True):
        # The same vectors as the model gives the caller alone (a shared batch pads
        # differently, hence the tolerance of float noise).
        assert np.allclose(np.asarray(got), np.asarray(model.embed(texts)), atol=1e-5)
    batcher.close()


def test_a_failure_goes_to_the_caller_whose_texts_caused_it(model: SentenceTransformerEmbedder) -> None:
    gated = Gated(model, fail_on="poison")
    batcher = BatchingEmbedder(gated, max_wait_s=0.005)
    jobs: list[Any] = [["warm the gate"], ["a fine text"], ["poison"], ["another fine text", "and one more"],
                       ["bad", None]]
    results = run_concurrently(batcher, [functools.partial(batcher.embed, texts) for texts in jobs], gated.gate,
                               entering=4)
    assert isinstance(results[2], ProviderError) and "poison" in str(results[2])
    assert isinstance(results[4], InvalidInput)  # refused before it joined a batch: None is not a text
    for i in (0, 1, 3):
        assert np.allclose(np.asarray(results[i]), np.asarray(model.embed(jobs[i])), atol=1e-5)
    assert batcher.requests == 4  # the bad call never entered
    batcher.close()


def test_close_waits_for_the_running_batch_then_refuses_and_leaves_no_thread(
    model: SentenceTransformerEmbedder,
) -> None:
    threads_before = set(threading.enumerate())
    gated = Gated(model)
    batcher = BatchingEmbedder(gated)
    got: list[Any] = []
    caller = threading.Thread(target=lambda: got.append(batcher.embed(["still answered after close()"])))
    caller.start()
    while batcher.requests < 1:
        time.sleep(0.005)
    closer = threading.Thread(target=batcher.close)
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close() must wait for the batch that is running"
    gated.gate.set()
    closer.join(30)
    caller.join(30)
    assert len(got) == 1 and len(got[0][0]) == 384
    with pytest.raises(InvalidInput, match="closed"):
        batcher.embed(["too late"])
    batcher.close()  # idempotent
    assert set(threading.enumerate()) <= threads_before  # the batcher never started a thread of its own


@pytest.mark.parametrize(("wait", "size"), [(-0.001, 4), (1.5, 4), (float("nan"), 4), ("2", 4), (True, 4),
                                            (0.002, 0), (0.002, -3), (0.002, 2.5), (0.002, "8"), (0.002, True)])
def test_bad_batching_settings_raise_config_error(model: SentenceTransformerEmbedder, wait: Any, size: Any) -> None:
    with pytest.raises(ConfigError, match=r"\(embed_batch_(wait_ms|max)\)"):
        BatchingEmbedder(model, max_wait_s=wait, max_batch=size)


def test_lru_cache_is_bounded_and_the_sqlite_cache_keeps_everything() -> None:
    db = SqliteDatabase(":memory:")
    backing = SqliteEmbeddingCache(db)
    lru = LruEmbeddingCache(backing, max_entries=2)
    lru.put_many("m", {"a": [1.0, 0.0], "b": [0.0, 1.0]})
    assert lru.get_many("m", ["a"]) == {"a": [1.0, 0.0]}  # "a" is now the most recent
    lru.put_many("m", {"c": [0.6, 0.8]})  # drops "b", the least recently used
    memory_only = LruEmbeddingCache(None, max_entries=2)
    memory_only.put_many("m", {"a": [1.0, 0.0], "b": [0.0, 1.0]})
    memory_only.get_many("m", ["a"])
    memory_only.put_many("m", {"c": [0.6, 0.8]})
    assert set(memory_only.get_many("m", ["a", "b", "c"])) == {"a", "c"}
    assert set(backing.get_many("m", ["a", "b", "c"])) == {"a", "b", "c"}
    assert set(lru.get_many("m", ["a", "b", "c"])) == {"a", "b", "c"}  # "b" comes back from SQLite
    assert lru.get_many("other-model", ["a"]) == {}
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ConfigError, match=r"\(embed_cache_size\)"):
            LruEmbeddingCache(backing, max_entries=bad)  # type: ignore[arg-type]
    db.close()


def test_the_model_loads_once_per_process(model: SentenceTransformerEmbedder) -> None:
    other = SentenceTransformerEmbedder()
    model.embed(["load"])
    other.embed(["load"])
    assert other._model is model._model  # one copy of the weights, however many Memory objects
