"""The VectorIndex contract (:class:`hmem.testing.contracts.VectorIndexContract`) on
every backend: numpy reference, Chroma embedded (collection-per-user and where-filter
scoping), a real `chroma run` server, and the write-behind front (rows kept pending, and
moved at once into embedded Chroma)."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

import pytest
from chroma_helpers import ChromaServer, chroma_server  # noqa: F401  (fixture)
from write_behind_helpers import Behind, behind_fixture  # noqa: F401  (fixture)

from hmem.backends.chroma import ChromaVectorIndex, chroma_http_client, chroma_persistent_client, collection_name
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.protocols import VectorIndex
from hmem.testing.contracts import VectorIndexContract


class TestMemoryVectorIndex(VectorIndexContract):
    @pytest.fixture
    def index(self) -> VectorIndex:
        return MemoryVectorIndex()


class TestChromaEmbeddedVectorIndex(VectorIndexContract):
    """One collection per user."""

    @pytest.fixture
    def index(self, tmp_path: Path) -> VectorIndex:
        return ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"), scoping="collection")


class TestChromaEmbeddedWhereVectorIndex(VectorIndexContract):
    """One collection for all users, scoped by a where filter: one stamp for all of them,
    and no staged rebuild (``hmem reindex`` needs a collection per user)."""

    has_staged = False
    stamps_per_user = False

    @pytest.fixture
    def index(self, tmp_path: Path) -> VectorIndex:
        return ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma"), scoping="where")


class TestChromaServerVectorIndex(VectorIndexContract):
    @pytest.fixture
    def index(self, chroma_server: ChromaServer) -> VectorIndex:  # noqa: F811
        # A fresh prefix per test keeps tests apart on the one shared server.
        prefix = f"t{secrets.token_hex(4)}"
        return ChromaVectorIndex(chroma_http_client(chroma_server.host, chroma_server.port), collection_prefix=prefix)


class TestWriteBehindPendingVectorIndex(VectorIndexContract):
    """Write-behind whose rows stay pending (no pause is long enough to move them) unless
    a call flushes: queries answer from the merge of both sides."""

    @pytest.fixture
    def index(self, tmp_path: Path, behind: Behind) -> VectorIndex:
        return behind(MemoryVectorIndex(), SqliteDatabase(tmp_path / "outbox.sqlite3"), idle_s=3600,
                      max_pending=10_000)


class TestWriteBehindChromaVectorIndex(VectorIndexContract):
    """Write-behind in front of embedded Chroma (the embedded default), moving at once."""

    @pytest.fixture
    def index(self, tmp_path: Path, behind: Behind) -> VectorIndex:
        return behind(ChromaVectorIndex(chroma_persistent_client(tmp_path / "chroma")),
                      SqliteDatabase(tmp_path / "outbox.sqlite3"), idle_s=0)


def test_collection_names_are_valid_and_distinct() -> None:
    users = ["a", "A", "a b", "a_b", "中文", "x" * 256, "..", "a-b"]
    names = {collection_name("hmem", u) for u in users}
    assert len(names) == len(users)
    for name in names:
        assert re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]", name)
