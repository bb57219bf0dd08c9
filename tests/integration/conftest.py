"""Fixtures shared by the integration tests of the Memory facade and its shells.

``embedder`` is the packaged MiniLM model, loaded once per test run (it is stateless);
``mem`` is a fresh embedded Memory in the test's own folder (SQLite stores, in-process
vectors) on that model. A module may override either; an override may request the
fixture it overrides (e.g. to add facts).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture
def mem(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[Memory]:
    memory = Memory.open(tmp_path / "data", embedder=embedder, vectors="memory")
    yield memory
    memory.close()
