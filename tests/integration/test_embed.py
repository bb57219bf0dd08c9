"""Embedding providers: the real packaged model, the persistent cache, and an
OpenAI-compatible /v1/embeddings endpoint served over real HTTP on loopback."""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hmem.backends.sqlite.db import SqliteDatabase
from hmem.config import Settings
from hmem.errors import InvalidInput, ProviderError
from hmem.memory import Memory
from hmem.protocols import Embedder
from hmem.providers.embed import (
    CachedEmbedder,
    OpenAICompatibleEmbedder,
    SentenceTransformerEmbedder,
    SqliteEmbeddingCache,
)


@pytest.fixture(scope="module")
def model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.mark.slow
def test_packaged_model_embeds_offline_normalised_and_batch_consistent(model: SentenceTransformerEmbedder) -> None:
    assert isinstance(model, Embedder)
    texts = ["I live in Berlin", "我住在上海", "Das Wetter ist schön", "x"]
    batch = np.asarray(model.embed(texts))
    assert batch.shape == (4, 384) and model.dimension == 384
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    single = np.asarray([model.embed([t])[0] for t in texts])
    assert np.allclose(batch, single, atol=1e-4)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert model.embed([]) == []


def test_model_is_loaded_lazily_on_first_embed(tmp_path: Path) -> None:
    broken = SentenceTransformerEmbedder(str(tmp_path / "no-such-model"))  # construction does not touch it
    assert broken.model_name.startswith("st:no-such-model:")
    with pytest.raises(ProviderError, match="no-such-model"):
        broken.embed(["hello"])


def test_bad_texts_are_rejected(tmp_path: Path) -> None:
    emb = SentenceTransformerEmbedder(str(tmp_path / "never-loaded"))
    for bad in ("one string", [1, 2], ["ok", "\udcff"]):
        with pytest.raises(InvalidInput):
            emb.embed(bad)  # type: ignore[arg-type]


class _Refuses:
    """An embedder that must not be called: proves a vector came from the cache."""

    def __init__(self, name: str) -> None:
        self.model_name, self.dimension = name, 384

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError(f"recomputed {list(texts)}")

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        raise AssertionError(f"recomputed query {list(texts)}")


@pytest.mark.slow
def test_cache_persists_in_the_sqlite_file_and_is_keyed_by_model(model: SentenceTransformerEmbedder, tmp_path: Path) -> None:
    path = tmp_path / "hmem.db"
    first = CachedEmbedder(model, SqliteEmbeddingCache(SqliteDatabase(path)))
    vecs = first.embed(["alpha beta", "gamma", "alpha beta"])
    assert first.computed == 2 and first.cached == 1
    reopened = CachedEmbedder(_Refuses(model.model_name), SqliteEmbeddingCache(SqliteDatabase(path)))
    again = reopened.embed(["gamma", "alpha beta"])
    assert np.allclose(again, [vecs[1], vecs[0]], atol=1e-6) and reopened.computed == 0
    other_model = CachedEmbedder(_Refuses("st:other"), SqliteEmbeddingCache(SqliteDatabase(path)))
    with pytest.raises(AssertionError, match="recomputed"):
        other_model.embed(["gamma"])


# -- OpenAI-compatible endpoint over real HTTP ------------------------------------------


def _fake_vector(text: str, dim: int = 16) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    return [rng.uniform(-3, 3) for _ in range(dim)]  # deliberately not unit length


class EmbeddingsServer:
    """Serves POST /v1/embeddings like OpenAI: deterministic vectors per text, rows in
    shuffled order (clients must sort by index), scripted failures, usage reported."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if outer.fail_next:
                    outer.fail_next -= 1
                    payload = json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
                    self.send_response(500)
                else:
                    inputs = body["input"]
                    rows = [{"object": "embedding", "index": i, "embedding": _fake_vector(t)}
                            for i, t in enumerate(inputs)]
                    random.Random(len(inputs)).shuffle(rows)
                    tokens = sum(len(t.split()) for t in inputs)
                    payload = json.dumps({"object": "list", "data": rows, "model": body["model"],
                                          "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    srv = EmbeddingsServer()
    yield srv
    srv.close()


def test_openai_compatible_embedder_over_http(server: EmbeddingsServer) -> None:
    emb = OpenAICompatibleEmbedder(server.base_url, "sk-test", "text-embed-test", batch_size=2)
    texts = ["one fish", "two fish", "red fish blue fish", "我住在上海", "five"]
    vecs = np.asarray(emb.embed(texts))
    expected = np.asarray([_fake_vector(t) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vecs, expected, atol=1e-6)  # order restored, unit length
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert server.requests[0]["path"] == "/v1/embeddings" and server.requests[0]["auth"] == "Bearer sk-test"
    assert emb.usage.prompt_tokens == sum(len(t.split()) for t in texts)
    assert emb.dimension == 16 and emb.model_name == "openai:text-embed-test"
    assert isinstance(emb, Embedder) and len(server.requests) == 3  # dimension known: no probe


def test_openai_compatible_embedder_errors_become_provider_errors(server: EmbeddingsServer) -> None:
    emb = OpenAICompatibleEmbedder(server.base_url, "k", "m", max_retries=1)
    server.fail_next = 1
    assert len(emb.embed(["retried once"])) == 1  # the openai client's retry recovers
    server.fail_next = 5
    with pytest.raises(ProviderError, match="embeddings request"):
        emb.embed(["fails twice"])


def test_an_embeddings_endpoint_of_its_own_needs_no_key_and_gets_its_query(
    server: EmbeddingsServer, tmp_path: Path,
) -> None:
    """Issue 32: a local server needs no HMEM_EMBED_API_KEY (the openai client refused an
    empty one), and ``?api-version=…`` in the URL goes after the path, with every request."""
    settings = Settings.from_env({"HMEM_EMBED_PROVIDER": "openai", "HMEM_EMBED_MODEL": "m",
                                  "HMEM_EMBED_BASE_URL": server.base_url + "?api-version=2024-06-01",
                                  "HMEM_DATA_DIR": str(tmp_path), "HMEM_VECTORS": "memory"})
    memory = Memory.from_settings(settings)
    try:
        memory.remember("alice", "Alice lives in Lisbon.")
        assert [hit.item.text for hit in memory.recall("alice", "Lisbon")] == ["Alice lives in Lisbon."]
    finally:
        memory.close()
    assert {r["path"] for r in server.requests} == {"/v1/embeddings?api-version=2024-06-01"}
    assert {r["auth"] for r in server.requests} == {"Bearer not-needed"}  # a placeholder, as for the LLM


def test_openai_compatible_embedder_with_cache_calls_server_once(server: EmbeddingsServer, tmp_path: Path) -> None:
    emb = CachedEmbedder(OpenAICompatibleEmbedder(server.base_url, "k", "m"),
                         SqliteEmbeddingCache(SqliteDatabase(tmp_path / "c.db")))
    emb.embed(["a b", "c d"])
    emb.embed(["c d", "a b"])
    assert len(server.requests) == 1
