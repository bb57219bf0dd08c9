"""What hmem knows about chat and embedding models: context window, reply ceiling
and which tokenizer counts for them.

Names are resolved case-insensitively, through provider prefixes
(``openai/gpt-4o``, ``anthropic.claude-…-v2:0``, ``models/gemini-…``,
``meta-llama/Llama-3.1-8B-Instruct``), dated snapshots (``gpt-4o-2024-08-06``,
``claude-3-5-sonnet-20241022``, ``gemini-1.5-pro-002``) and release-channel
suffixes (``-latest``, ``-preview``, ``-instruct`` …). A name that still matches
nothing falls back to a family prefix on a ``-`` boundary (``gpt-4o-mini-search``
→ ``gpt-4o-mini``) and, failing that, to :data:`UNKNOWN_CONTEXT_WINDOW` tokens
with the estimating tokenizer and ``known=False`` so callers can warn.

Example::

    >>> from hmem.tokens.models import resolve_model, context_window
    >>> resolve_model("openai/GPT-4o-2024-08-06").name
    'gpt-4o'
    >>> context_window("claude-3-5-sonnet-20241022")
    200000
    >>> resolve_model("my-local-model").known
    False
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, TypeAlias

from hmem.errors import InvalidInput

__all__ = [
    "MODELS",
    "UNKNOWN_CONTEXT_WINDOW",
    "UNKNOWN_MAX_OUTPUT_TOKENS",
    "Encoding",
    "ModelInfo",
    "context_window",
    "resolve_model",
]

Encoding: TypeAlias = Literal["o200k_base", "cl100k_base", "estimate"]

#: Window assumed for a model hmem does not know: small enough to be safe for
#: almost any model still served today, so a budget built on it never overflows.
UNKNOWN_CONTEXT_WINDOW = 8_192
UNKNOWN_MAX_OUTPUT_TOKENS = 2_048


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model's limits and tokenizer.

    ``encoding`` is the tiktoken encoding for OpenAI models (exact counts) or
    ``"estimate"`` (a documented over-estimate, see ``docs/tokens.md``).
    ``max_output_tokens`` is the vendor's reply ceiling (0 for embedding models;
    for open-weight models a typical serving default). ``known=False`` marks the
    fallback for a name not in the table.
    """

    name: str
    provider: str
    context_window: int
    max_output_tokens: int
    encoding: Encoding
    known: bool = True


_O, _C, _E = "o200k_base", "cl100k_base", "estimate"
K = 1_000
M1 = 1_048_576

# (canonical name, provider, context window, max output, encoding, extra aliases)
# Figures are the vendors' published limits (2025); verify for your deployment.
_ROWS: tuple[tuple[str, str, int, int, str, tuple[str, ...]], ...] = (
    # --- OpenAI (exact counts with tiktoken) ---
    ("gpt-4o", "openai", 128_000, 16_384, _O, ("gpt-4o-latest",)),
    ("gpt-4o-mini", "openai", 128_000, 16_384, _O, ()),
    ("chatgpt-4o-latest", "openai", 128_000, 16_384, _O, ()),
    ("gpt-4o-audio-preview", "openai", 128_000, 16_384, _O, ()),
    ("gpt-4.1", "openai", 1_047_576, 32_768, _O, ()),
    ("gpt-4.1-mini", "openai", 1_047_576, 32_768, _O, ()),
    ("gpt-4.1-nano", "openai", 1_047_576, 32_768, _O, ()),
    ("gpt-4.5-preview", "openai", 128_000, 16_384, _O, ("gpt-4.5",)),
    ("o1", "openai", 200_000, 100_000, _O, ()),
    ("o1-mini", "openai", 128_000, 65_536, _O, ()),
    ("o1-preview", "openai", 128_000, 32_768, _O, ()),
    ("o1-pro", "openai", 200_000, 100_000, _O, ()),
    ("o3", "openai", 200_000, 100_000, _O, ()),
    ("o3-mini", "openai", 200_000, 100_000, _O, ()),
    ("o3-pro", "openai", 200_000, 100_000, _O, ()),
    ("o4-mini", "openai", 200_000, 100_000, _O, ()),
    ("gpt-5", "openai", 400_000, 128_000, _O, ()),
    ("gpt-5-mini", "openai", 400_000, 128_000, _O, ()),
    ("gpt-5-nano", "openai", 400_000, 128_000, _O, ()),
    ("gpt-5-chat-latest", "openai", 128_000, 16_384, _O, ("gpt-5-chat",)),
    ("gpt-5-codex", "openai", 400_000, 128_000, _O, ()),
    ("gpt-5.1", "openai", 400_000, 128_000, _O, ()),
    ("gpt-oss-120b", "openai", 131_072, 131_072, _O, ()),
    ("gpt-oss-20b", "openai", 131_072, 131_072, _O, ()),
    (
        "gpt-4-turbo",
        "openai",
        128_000,
        4_096,
        _C,
        (
            "gpt-4-turbo-preview",
            "gpt-4-1106-preview",
            "gpt-4-0125-preview",
            "gpt-4-vision-preview",
            "gpt-4-1106-vision-preview",
        ),
    ),
    ("gpt-4", "openai", 8_192, 8_192, _C, ()),
    ("gpt-4-32k", "openai", 32_768, 32_768, _C, ()),
    ("gpt-3.5-turbo", "openai", 16_385, 4_096, _C, ("gpt-35-turbo", "gpt-3.5-turbo-16k", "gpt-35-turbo-16k")),
    ("gpt-3.5-turbo-instruct", "openai", 4_096, 4_096, _C, ()),
    ("text-embedding-3-small", "openai", 8_191, 0, _C, ()),
    ("text-embedding-3-large", "openai", 8_191, 0, _C, ()),
    ("text-embedding-ada-002", "openai", 8_191, 0, _C, ()),
    # --- Anthropic ---
    ("claude-opus-4-5", "anthropic", 200_000, 64_000, _E, ()),
    ("claude-opus-4-1", "anthropic", 200_000, 32_000, _E, ()),
    ("claude-opus-4", "anthropic", 200_000, 32_000, _E, ("claude-4-opus",)),
    ("claude-sonnet-4-5", "anthropic", 200_000, 64_000, _E, ()),
    ("claude-sonnet-4", "anthropic", 200_000, 64_000, _E, ("claude-4-sonnet",)),
    ("claude-haiku-4-5", "anthropic", 200_000, 64_000, _E, ()),
    ("claude-3-7-sonnet", "anthropic", 200_000, 64_000, _E, ()),
    ("claude-3-5-sonnet", "anthropic", 200_000, 8_192, _E, ()),
    ("claude-3-5-haiku", "anthropic", 200_000, 8_192, _E, ()),
    ("claude-3-opus", "anthropic", 200_000, 4_096, _E, ()),
    ("claude-3-sonnet", "anthropic", 200_000, 4_096, _E, ()),
    ("claude-3-haiku", "anthropic", 200_000, 4_096, _E, ()),
    ("claude-2-1", "anthropic", 200_000, 4_096, _E, ()),
    ("claude-2-0", "anthropic", 100_000, 4_096, _E, ("claude-2",)),
    ("claude-instant-1-2", "anthropic", 100_000, 4_096, _E, ("claude-instant-1",)),
    # --- Google ---
    ("gemini-3-pro", "google", M1, 65_536, _E, ()),
    ("gemini-2.5-pro", "google", M1, 65_536, _E, ()),
    ("gemini-2.5-flash", "google", M1, 65_536, _E, ()),
    ("gemini-2.5-flash-lite", "google", M1, 65_536, _E, ()),
    ("gemini-2.0-flash", "google", M1, 8_192, _E, ()),
    ("gemini-2.0-flash-lite", "google", M1, 8_192, _E, ()),
    ("gemini-2.0-pro", "google", 2_097_152, 8_192, _E, ()),
    ("gemini-1.5-pro", "google", 2_097_152, 8_192, _E, ()),
    ("gemini-1.5-flash", "google", M1, 8_192, _E, ()),
    ("gemini-1.5-flash-8b", "google", M1, 8_192, _E, ()),
    ("gemini-1.0-pro", "google", 32_760, 8_192, _E, ("gemini-pro",)),
    ("gemma-3-27b", "google", 131_072, 8_192, _E, ()),
    ("gemma-3-12b", "google", 131_072, 8_192, _E, ()),
    ("gemma-3-4b", "google", 131_072, 8_192, _E, ()),
    ("gemma-3-1b", "google", 32_768, 8_192, _E, ()),
    ("gemma-2-27b", "google", 8_192, 8_192, _E, ()),
    ("gemma-2-9b", "google", 8_192, 8_192, _E, ()),
    ("text-embedding-004", "google", 2_048, 0, _E, ()),
    # --- DeepSeek ---
    ("deepseek-chat", "deepseek", 128_000, 8_192, _E, ()),
    ("deepseek-reasoner", "deepseek", 128_000, 64_000, _E, ()),
    ("deepseek-v3.2", "deepseek", 163_840, 65_536, _E, ()),
    ("deepseek-v3.1", "deepseek", 163_840, 65_536, _E, ()),
    ("deepseek-v3", "deepseek", 163_840, 8_192, _E, ()),
    ("deepseek-r1", "deepseek", 163_840, 65_536, _E, ()),
    ("deepseek-r1-distill-qwen-32b", "deepseek", 131_072, 32_768, _E, ()),
    ("deepseek-r1-distill-llama-70b", "deepseek", 131_072, 32_768, _E, ()),
    ("deepseek-v2.5", "deepseek", 128_000, 8_192, _E, ()),
    ("deepseek-coder-v2", "deepseek", 128_000, 8_192, _E, ()),
    # --- Alibaba Qwen ---
    ("qwen3-max", "alibaba", 262_144, 65_536, _E, ()),
    ("qwen-max", "alibaba", 32_768, 8_192, _E, ()),
    ("qwen-plus", "alibaba", 131_072, 16_384, _E, ()),
    ("qwen-turbo", "alibaba", 1_000_000, 16_384, _E, ()),
    ("qwen-long", "alibaba", 10_000_000, 8_192, _E, ()),
    ("qwen3-235b-a22b", "alibaba", 131_072, 32_768, _E, ()),
    ("qwen3-30b-a3b", "alibaba", 131_072, 32_768, _E, ()),
    ("qwen3-32b", "alibaba", 131_072, 32_768, _E, ()),
    ("qwen3-14b", "alibaba", 131_072, 32_768, _E, ()),
    ("qwen3-8b", "alibaba", 131_072, 32_768, _E, ()),
    ("qwen3-next-80b-a3b", "alibaba", 262_144, 32_768, _E, ()),
    ("qwen3-coder-480b-a35b", "alibaba", 262_144, 65_536, _E, ("qwen3-coder", "qwen3-coder-plus")),
    ("qwq-32b", "alibaba", 131_072, 32_768, _E, ()),
    ("qwen2.5-72b", "alibaba", 131_072, 8_192, _E, ()),
    ("qwen2.5-32b", "alibaba", 131_072, 8_192, _E, ()),
    ("qwen2.5-14b", "alibaba", 131_072, 8_192, _E, ()),
    ("qwen2.5-7b", "alibaba", 131_072, 8_192, _E, ()),
    ("qwen2.5-coder-32b", "alibaba", 131_072, 8_192, _E, ()),
    ("qwen2.5-vl-72b", "alibaba", 131_072, 8_192, _E, ()),
    # --- Zhipu GLM ---
    ("glm-4.6", "zhipu", 200_000, 128_000, _E, ()),
    ("glm-4.5", "zhipu", 131_072, 98_304, _E, ()),
    ("glm-4.5-air", "zhipu", 131_072, 98_304, _E, ()),
    ("glm-4-plus", "zhipu", 128_000, 4_096, _E, ()),
    ("glm-4", "zhipu", 128_000, 4_096, _E, ()),
    ("glm-4-flash", "zhipu", 128_000, 4_096, _E, ()),
    ("glm-4-long", "zhipu", 1_000_000, 4_096, _E, ()),
    ("glm-4-9b", "zhipu", 131_072, 8_192, _E, ()),
    ("chatglm3-6b", "zhipu", 8_192, 8_192, _E, ()),
    # --- Meta Llama (open weights; max output is a typical serving default) ---
    ("llama-4-maverick", "meta", M1, 8_192, _E, ()),
    ("llama-4-scout", "meta", 10_000_000, 8_192, _E, ()),
    ("llama-3.3-70b", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.2-90b-vision", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.2-11b-vision", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.2-3b", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.2-1b", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.1-405b", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.1-70b", "meta", 131_072, 8_192, _E, ()),
    ("llama-3.1-8b", "meta", 131_072, 8_192, _E, ()),
    ("llama-3-70b", "meta", 8_192, 8_192, _E, ()),
    ("llama-3-8b", "meta", 8_192, 8_192, _E, ()),
    ("llama-2-70b", "meta", 4_096, 4_096, _E, ()),
    ("llama-2-13b", "meta", 4_096, 4_096, _E, ()),
    ("llama-2-7b", "meta", 4_096, 4_096, _E, ()),
    # --- Mistral ---
    ("mistral-large", "mistral", 131_072, 8_192, _E, ()),
    ("mistral-medium", "mistral", 131_072, 8_192, _E, ()),
    ("mistral-small", "mistral", 131_072, 8_192, _E, ()),
    ("mistral-saba", "mistral", 32_768, 8_192, _E, ()),
    ("magistral-medium", "mistral", 40_000, 40_000, _E, ()),
    ("magistral-small", "mistral", 40_000, 40_000, _E, ()),
    ("devstral-medium", "mistral", 131_072, 8_192, _E, ()),
    ("devstral-small", "mistral", 131_072, 8_192, _E, ()),
    ("codestral", "mistral", 256_000, 8_192, _E, ()),
    ("pixtral-large", "mistral", 131_072, 8_192, _E, ()),
    ("pixtral-12b", "mistral", 131_072, 8_192, _E, ()),
    ("ministral-8b", "mistral", 131_072, 8_192, _E, ()),
    ("ministral-3b", "mistral", 131_072, 8_192, _E, ()),
    ("mistral-nemo", "mistral", 131_072, 8_192, _E, ()),
    ("mixtral-8x22b", "mistral", 65_536, 8_192, _E, ()),
    ("mixtral-8x7b", "mistral", 32_768, 8_192, _E, ()),
    ("mistral-7b", "mistral", 32_768, 8_192, _E, ()),
    ("mistral-embed", "mistral", 8_192, 0, _E, ()),
    # --- Moonshot Kimi ---
    ("kimi-k2", "moonshot", 131_072, 16_384, _E, ()),
    ("kimi-k2-0905", "moonshot", 262_144, 16_384, _E, ()),
    ("kimi-k2-turbo", "moonshot", 262_144, 16_384, _E, ()),
    ("kimi-k2-thinking", "moonshot", 262_144, 16_384, _E, ()),
    ("kimi-latest", "moonshot", 131_072, 8_192, _E, ()),
    ("moonshot-v1-128k", "moonshot", 131_072, 8_192, _E, ()),
    ("moonshot-v1-32k", "moonshot", 32_768, 8_192, _E, ()),
    ("moonshot-v1-8k", "moonshot", 8_192, 4_096, _E, ()),
    # --- xAI Grok ---
    ("grok-4", "xai", 256_000, 64_000, _E, ()),
    ("grok-4-fast", "xai", 2_000_000, 30_000, _E, ()),
    ("grok-code-fast-1", "xai", 256_000, 10_000, _E, ("grok-code-fast",)),
    ("grok-3", "xai", 131_072, 16_384, _E, ()),
    ("grok-3-mini", "xai", 131_072, 16_384, _E, ()),
    ("grok-2", "xai", 131_072, 8_192, _E, ("grok-beta",)),
    ("grok-2-vision", "xai", 32_768, 8_192, _E, ("grok-vision-beta",)),
    # --- Cohere ---
    ("command-a", "cohere", 256_000, 8_000, _E, ()),
    ("command-r-plus", "cohere", 128_000, 4_000, _E, ()),
    ("command-r", "cohere", 128_000, 4_000, _E, ()),
    ("command-r7b", "cohere", 128_000, 4_000, _E, ()),
    ("command", "cohere", 4_096, 4_000, _E, ()),
    ("command-light", "cohere", 4_096, 4_000, _E, ()),
    ("embed-v4.0", "cohere", 128_000, 0, _E, ()),
    ("embed-english-v3.0", "cohere", 512, 0, _E, ()),
    ("embed-multilingual-v3.0", "cohere", 512, 0, _E, ()),
    # --- Microsoft Phi ---
    ("phi-4", "microsoft", 16_384, 16_384, _E, ()),
    ("phi-4-mini", "microsoft", 131_072, 8_192, _E, ()),
    ("phi-4-multimodal", "microsoft", 131_072, 8_192, _E, ()),
    ("phi-4-reasoning", "microsoft", 32_768, 32_768, _E, ()),
    ("phi-3.5-mini", "microsoft", 131_072, 8_192, _E, ()),
    ("phi-3.5-moe", "microsoft", 131_072, 8_192, _E, ()),
    ("phi-3-mini-4k", "microsoft", 4_096, 4_096, _E, ()),
    ("phi-3-mini-128k", "microsoft", 131_072, 8_192, _E, ()),
    ("phi-3-small-128k", "microsoft", 131_072, 8_192, _E, ()),
    ("phi-3-medium-128k", "microsoft", 131_072, 8_192, _E, ()),
    # --- others ---
    ("nova-premier", "amazon", 1_000_000, 32_000, _E, ()),
    ("nova-pro", "amazon", 300_000, 5_000, _E, ()),
    ("nova-lite", "amazon", 300_000, 5_000, _E, ()),
    ("nova-micro", "amazon", 128_000, 5_000, _E, ()),
    ("jamba-1.5-large", "ai21", 256_000, 4_096, _E, ()),
    ("jamba-1.5-mini", "ai21", 256_000, 4_096, _E, ()),
    ("minimax-m1", "minimax", 1_000_000, 40_000, _E, ()),
    ("minimax-text-01", "minimax", 1_000_192, 8_192, _E, ()),
    ("yi-large", "01-ai", 32_768, 4_096, _E, ()),
)

#: Every model in the table, by canonical name.
MODELS: dict[str, ModelInfo] = {
    name: ModelInfo(name, provider, window, max_out, encoding)  # type: ignore[arg-type]
    for name, provider, window, max_out, encoding, _ in _ROWS
}
_INDEX: dict[str, ModelInfo] = dict(MODELS)
for _name, *_, _aliases in _ROWS:
    for _alias in _aliases:
        _INDEX[_alias] = MODELS[_name]

# Name rewrites, applied one after the other; the table is checked after each.
_BEDROCK_VENDOR = re.compile(
    r"^(?:(?:us|eu|apac|global)\.)?(?:anthropic|meta|mistral|cohere|amazon|ai21|deepseek|qwen|openai)\."
)
_SUFFIXES = (
    re.compile(r"-\d{4}-\d{2}-\d{2}$"),  # gpt-4o-2024-08-06
    re.compile(r"-\d{8}$"),  # claude-3-5-sonnet-20241022
    re.compile(r"-\d{2}-\d{4}$"),  # command-r-08-2024
    re.compile(r"-\d{2}-\d{2}$"),  # gemini-2.5-pro-preview-05-06
    re.compile(r"-\d{3,4}$"),  # gpt-4-0613, gemini-1.5-pro-002
    re.compile(r"-(?:latest|preview|exp|experimental|beta|instruct|chat|it|hf|fp8|awq|gguf|versatile)$"),
    re.compile(r"-v\d+(?:\.\d+)*$"),  # mistral-7b-instruct-v0.3, claude-…-v2
)


def _candidates(key: str) -> list[str]:
    """The name and its successively normalized forms, most specific first."""
    forms = [key]

    def add(form: str) -> None:
        if form and form != forms[-1]:
            forms.append(form)

    if key.startswith("ft:"):  # ft:gpt-4o-mini-2024-07-18:org::id
        add(key[3:].split(":", 1)[0])
    add(forms[-1].rsplit("/", 1)[-1])  # openai/gpt-4o, models/gemini-1.5-pro
    add(_BEDROCK_VENDOR.sub("", forms[-1]))
    add(forms[-1].split("@", 1)[0])  # vertex: claude-3-5-sonnet-v2@20241022
    add(re.sub(r":(\d+(?:\.\d+)?b)$", r"-\1", forms[-1]))  # ollama tag llama3.1:8b
    add(forms[-1].split(":", 1)[0])  # openrouter :free/:thinking, bedrock :0
    add(re.sub(r"^(?:meta-|open-)", "", forms[-1]))  # Meta-Llama-3.1…, open-mistral-nemo
    add(re.sub(r"^llama(\d)", r"llama-\1", forms[-1]))  # llama3.1-8b
    if forms[-1].startswith("claude"):
        add(forms[-1].replace(".", "-"))  # claude-3.5-sonnet
    stripped = True
    while stripped:
        stripped = False
        for pattern in _SUFFIXES:
            shorter = pattern.sub("", forms[-1])
            if shorter != forms[-1] and shorter:
                add(shorter)
                stripped = True
                break
    return forms


def _family(form: str) -> ModelInfo | None:
    """The longest table name that ``form`` extends on a ``-`` boundary."""
    best: str | None = None
    for known in _INDEX:
        if form.startswith(known + "-") and (best is None or len(known) > len(best)):
            best = known
    return _INDEX[best] if best is not None else None


def resolve_model(name: str) -> ModelInfo:
    """The :class:`ModelInfo` for a model name, alias, snapshot or prefixed name.

    Never raises for an unknown name: returns ``known=False`` with an
    :data:`UNKNOWN_CONTEXT_WINDOW` window and the estimating tokenizer. Raises
    :class:`~hmem.errors.InvalidInput` if ``name`` is not a non-empty string.

    Example::

        >>> resolve_model("anthropic/claude-3.5-sonnet").name
        'claude-3-5-sonnet'
    """
    if not isinstance(name, str):
        raise InvalidInput(f"model must be a string, got {type(name).__name__}", field="model")
    key = name.strip().lower()
    if not key:
        raise InvalidInput("model must not be empty (e.g. 'gpt-4o-mini')", field="model")
    forms = _candidates(key)
    for form in forms:
        if form in _INDEX:
            return _INDEX[form]
    for form in forms:
        hit = _family(form)
        if hit is not None:
            return hit
    return ModelInfo(
        name=key,
        provider="unknown",
        context_window=UNKNOWN_CONTEXT_WINDOW,
        max_output_tokens=UNKNOWN_MAX_OUTPUT_TOKENS,
        encoding="estimate",
        known=False,
    )


def context_window(name: str) -> int:
    """The model's context window in tokens (:data:`UNKNOWN_CONTEXT_WINDOW` if unknown).

    Example::

        >>> context_window("gpt-4.1-mini-2025-04-14")
        1047576
    """
    return resolve_model(name).context_window
