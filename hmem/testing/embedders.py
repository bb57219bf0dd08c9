"""An :class:`~hmem.protocols.Embedder` wrapper that counts the calls it passes on.

Pass it in as the embedder (``Memory.open(path, embedder=CountingEmbedder(model))``) to
see how many times, and with how many texts, hmem asks the model — no patching. It is
thread-safe: concurrent callers are all counted.

Example::

    >>> class Tiny:
    ...     model_name, dimension, symmetric = "tiny", 2, True
    ...     def embed(self, texts): return [[1.0, 0.0] for _ in texts]
    ...     def embed_query(self, texts): return self.embed(texts)
    >>> counting = CountingEmbedder(Tiny())
    >>> _ = counting.embed(["a", "b"]); _ = counting.embed_query(["c"])
    >>> counting.calls, counting.texts, counting.batches
    (2, 3, [('embed', 2), ('embed_query', 1)])
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from hmem.providers.embed import WrappedEmbedder

__all__ = ["CountingEmbedder"]


class CountingEmbedder(WrappedEmbedder):
    """Delegates to ``inner``; ``batches`` lists ``(method, number of texts)`` per call."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._lock = threading.Lock()
        self.batches: list[tuple[str, int]] = []

    @property
    def calls(self) -> int:
        """Calls of ``embed`` and ``embed_query`` so far."""
        with self._lock:
            return len(self.batches)

    @property
    def texts(self) -> int:
        """Texts passed on so far."""
        with self._lock:
            return sum(n for _, n in self.batches)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self._count("embed", texts)
        return list(self._inner.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        self._count("embed_query", texts)
        return list(self._inner.embed_query(texts))

    def _count(self, method: str, texts: Sequence[str]) -> None:
        with self._lock:
            self.batches.append((method, len(texts) if hasattr(texts, "__len__") else -1))
