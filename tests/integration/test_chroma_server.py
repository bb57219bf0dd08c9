"""ChromaVectorIndex and LongTermStore against a real `chroma run` server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from chroma_helpers import ChromaServer, free_port, start_chroma, stop_chroma

from hmem.backends.chroma import ChromaVectorIndex, chroma_http_client, chroma_persistent_client
from hmem.errors import BackendUnavailable

pytestmark = pytest.mark.integration

@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    srv = start_chroma(tmp_path_factory.mktemp("chroma-server"))
    yield srv
    stop_chroma(srv)


ONNX_CACHE = Path.home() / ".cache" / "chroma" / "onnx_models"


def prefix() -> str:
    return f"t{secrets.token_hex(4)}"


def test_two_app_instances_share_the_server_and_survive_a_deleted_collection(server: ChromaServer) -> None:
    p = prefix()
    a = ChromaVectorIndex(chroma_http_client(server.host, server.port), collection_prefix=p)
    b = ChromaVectorIndex(chroma_http_client(server.host, server.port), collection_prefix=p)
    a.upsert("u1", ["x", "y"], [[1, 0], [0, 1]])
    assert [h.id for h in b.query("u1", [1, 0], k=1)] == ["x"]  # b sees a's writes
    b.delete_user("u1")  # a's cached collection handle is now stale
    assert a.count("u1") == 0
    a.upsert("u1", ["z"], [[1, 1]])
    assert a.count("u1") == 1 and [h.id for h in b.query("u1", [1, 1], k=5)] == ["z"]


def test_vectors_persist_across_clients(server: ChromaServer) -> None:
    p = prefix()
    ChromaVectorIndex(chroma_http_client(server.host, server.port), collection_prefix=p).upsert(
        "u1", ["keep"], [[0.2, 0.9]], [{"kind": "fact"}])
    fresh = ChromaVectorIndex(chroma_http_client(server.host, server.port), collection_prefix=p)
    assert [h.id for h in fresh.query("u1", [0.2, 0.9], k=3, where={"kind": "fact"})] == ["keep"]


def test_unreachable_server_is_backend_unavailable() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(BackendUnavailable, match=f"127.0.0.1:{port}"):
        idx = ChromaVectorIndex(chroma_http_client("127.0.0.1", port))
        idx.query("u1", [1, 0], k=1)


def test_no_default_embedding_function_is_ever_loaded(tmp_path: Path, server: ChromaServer) -> None:
    existed = ONNX_CACHE.exists()
    for client in (chroma_persistent_client(tmp_path / "c"), chroma_http_client(server.host, server.port)):
        idx = ChromaVectorIndex(client, collection_prefix=prefix())
        idx.upsert("u1", ["a"], [[1.0, 0.0, 0.0]], [{"kind": "fact"}])
        idx.query("u1", [1.0, 0.0, 0.0], k=1, where={"kind": "fact"})
        idx.delete("u1", ["a"])
    # the test network guard would have raised on a download; nothing was written either
    assert existed or not ONNX_CACHE.exists()


@pytest.mark.slow
def test_longterm_store_on_chroma_server_and_sqlite(server: ChromaServer, tmp_path: Path) -> None:
    from longterm_fixtures import real_model

    from hmem.backends.sqlite.db import SqliteDatabase
    from hmem.backends.sqlite.items import SqliteItemStore
    from hmem.backends.sqlite.lexical import SqliteLexicalIndex
    from hmem.longterm.store import LongTermStore
    from hmem.providers.embed import CachedEmbedder, SqliteEmbeddingCache

    db = SqliteDatabase(tmp_path / "hmem.db")
    p = prefix()

    def instance() -> LongTermStore:
        return LongTermStore(
            SqliteItemStore(db),
            ChromaVectorIndex(chroma_http_client(server.host, server.port), collection_prefix=p),
            SqliteLexicalIndex(db), CachedEmbedder(real_model(), SqliteEmbeddingCache(db)))

    one, two = instance(), instance()
    one.remember_many("u1", ["I run marathons", "My cat is called Pixel", "I work night shifts"])
    two.remember("u2", "My cat is called Pixel")
    assert two.remember("u1", "my cat is called pixel").status == "skipped"
    assert [h.item.text for h in two.recall("u1", "what is my cat's name", k=1)] == ["My cat is called Pixel"]
    assert {h.item.user_id for h in one.recall("u2", "marathon night shifts cat", k=10)} == {"u2"}
    assert one.forget("u1", all=True) == 3
    assert two.recall("u1", "cat", k=5) == []
