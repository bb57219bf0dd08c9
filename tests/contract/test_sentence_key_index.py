"""The SentenceKeyIndex contract (:class:`hmem.testing.contracts.SentenceKeyIndexContract`)
on every implementation, with the real default embedder (the int8 ONNX MiniLM): the
inline reference over the numpy index, and the one hmem builds (keys written behind as
``sentence_keys`` jobs of a JobEngine whose queue is in SQLite) over the numpy index,
embedded Chroma and a `chroma run` server."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from chroma_helpers import ChromaServer, chroma_server  # noqa: F401  (fixture)

from hmem.backends.chroma import ChromaVectorIndex, chroma_http_client, chroma_persistent_client
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.sentence_keys import SentenceKeysBehind
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.jobs import SqliteJobQueue
from hmem.jobs import JobEngine
from hmem.longterm.keys import InlineSentenceKeys, SentenceKeyIndex
from hmem.protocols import VectorIndex
from hmem.providers.onnx import OnnxMiniLMEmbedder
from hmem.testing.contracts import SentenceKeyIndexContract

_EMBEDDER = OnnxMiniLMEmbedder()


class _Base(SentenceKeyIndexContract):
    @pytest.fixture
    def embedder(self) -> OnnxMiniLMEmbedder:
        return _EMBEDDER


def _behind(index: VectorIndex, tmp_path: Path) -> Iterator[SentenceKeyIndex]:
    """Keys behind ``index``, built by an engine on the SQLite file's queue (as hmem builds it)."""
    db = SqliteDatabase(tmp_path / "hmem.sqlite3")
    engine = JobEngine(SqliteJobQueue(db), exclusive=True)
    yield SentenceKeysBehind(index, _EMBEDDER, engine, db=db)
    engine.close()
    db.close()


class TestInlineSentenceKeys(_Base):
    @pytest.fixture
    def keys(self) -> SentenceKeyIndex:
        return InlineSentenceKeys(MemoryVectorIndex(), _EMBEDDER)


class TestBehindSentenceKeysMemory(_Base):
    @pytest.fixture
    def keys(self, tmp_path: Path) -> Iterator[SentenceKeyIndex]:
        yield from _behind(MemoryVectorIndex(), tmp_path)


class TestBehindSentenceKeysChroma(_Base):
    @pytest.fixture
    def keys(self, tmp_path: Path) -> Iterator[SentenceKeyIndex]:
        index = ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"), collection_prefix="hmemkeys")
        yield from _behind(index, tmp_path)


class TestBehindSentenceKeysChromaServer(_Base):
    @pytest.fixture
    def keys(self, tmp_path: Path, chroma_server: ChromaServer) -> Iterator[SentenceKeyIndex]:  # noqa: F811
        index = ChromaVectorIndex(chroma_http_client(chroma_server.host, chroma_server.port),
                                  collection_prefix=f"k{secrets.token_hex(4)}")
        yield from _behind(index, tmp_path)
