"""What the eval tests share: a Memory on the real MiniLM model, loaded once per process."""

from __future__ import annotations

import functools
from pathlib import Path

from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder


@functools.cache
def _model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def open_memory(path: Path) -> Memory:
    """A Memory in ``path`` with in-memory vectors and the shared model (``run_eval``'s ``open_memory``)."""
    return Memory.open(path, embedder=_model(), vectors="memory")
