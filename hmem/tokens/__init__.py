"""Token counting and the model table: the base every budget in hmem is measured in.

Owns: offline tiktoken (``_bpe``: BPE files from the ``bpe-openai`` package), the chat
counting rules and the estimator for models without a public tokenizer (``_count``), and
what hmem knows of each model's window (:mod:`hmem.tokens.models`).
May import: :mod:`hmem.errors`, :mod:`hmem.types`, :mod:`hmem.protocols`.

Example::

    >>> from hmem.tokens import count_tokens, resolve_model
    >>> count_tokens("hello world", model="gpt-4o-mini")
    2
    >>> resolve_model("gpt-4o").context_window
    128000
"""

from __future__ import annotations

from hmem.tokens._count import (
    ESTIMATE_SAFETY,
    REPLY_PRIMER,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    TOOL_CALL_OVERHEAD,
    EstimateTokenizer,
    TiktokenTokenizer,
    count_tokens,
    get_tokenizer,
    load_encoding,
)
from hmem.tokens.models import ModelInfo, context_window, resolve_model

__all__ = [
    "ESTIMATE_SAFETY",
    "REPLY_PRIMER",
    "TOKENS_PER_MESSAGE",
    "TOKENS_PER_NAME",
    "TOOL_CALL_OVERHEAD",
    "EstimateTokenizer",
    "ModelInfo",
    "TiktokenTokenizer",
    "context_window",
    "count_tokens",
    "get_tokenizer",
    "load_encoding",
    "resolve_model",
]
