"""hmem.tokens.models: the model table, name resolution and the unknown-model fallback."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import tiktoken

from hmem.errors import InvalidInput
from hmem.tokens.models import (
    _ROWS,
    MODELS,
    UNKNOWN_CONTEXT_WINDOW,
    ModelInfo,
    context_window,
    resolve_model,
)


def test_table_has_at_least_100_distinct_models_from_many_vendors() -> None:
    names = [row[0] for row in _ROWS]
    assert len(names) == len(set(names)) == len(MODELS)
    assert len(MODELS) >= 100
    providers = {m.provider for m in MODELS.values()}
    for vendor in (
        "openai",
        "anthropic",
        "google",
        "deepseek",
        "alibaba",
        "zhipu",
        "meta",
        "mistral",
        "moonshot",
        "xai",
        "cohere",
        "microsoft",
    ):
        assert vendor in providers


def test_every_entry_is_sane() -> None:
    for m in MODELS.values():
        assert m.known
        assert m.context_window > 0, m
        assert 0 <= m.max_output_tokens <= m.context_window, m
        assert m.encoding in ("o200k_base", "cl100k_base", "estimate"), m
        assert m.name == m.name.strip().lower()
        assert (m.encoding == "estimate") == (m.provider != "openai"), m


def test_openai_encodings_agree_with_tiktokens_model_map() -> None:
    checked = 0
    for m in MODELS.values():
        if m.provider != "openai":
            continue
        try:
            expected = tiktoken.encoding_name_for_model(m.name)
        except KeyError:
            continue  # a model newer than this tiktoken's map
        # gpt-oss uses o200k_harmony: o200k_base plus chat-format special tokens
        assert m.encoding == expected.replace("o200k_harmony", "o200k_base"), m.name
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_name_resolves_through_snapshots_prefixes_and_case(name: str) -> None:
    info = MODELS[name]
    for variant in (
        name,
        name.upper(),
        f"  {name}  ",
        f"{name}-2024-08-06",
        f"{name}-20250514",
        f"{info.provider}/{name}",
        f"openrouter/{info.provider}/{name}:free",
        f"{name}-latest",
    ):
        assert resolve_model(variant) is info, variant


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4o", "gpt-4o"),
        ("azure/gpt-35-turbo", "gpt-3.5-turbo"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4-32k-0613", "gpt-4-32k"),
        ("gpt-4-1106-preview", "gpt-4-turbo"),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("gpt-4.5-preview-2025-02-27", "gpt-4.5-preview"),
        ("o1-2024-12-17", "o1"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("gpt-4o-mini-search-preview", "gpt-4o-mini"),
        ("ft:gpt-4o-mini-2024-07-18:my-org::abc123", "gpt-4o-mini"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet-20240620", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("anthropic/claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"),
        ("anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet"),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("Claude-3-Haiku-20240307", "claude-3-haiku"),
        ("models/gemini-1.5-pro-latest", "gemini-1.5-pro"),
        ("gemini-1.5-pro-002", "gemini-1.5-pro"),
        ("gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"),
        ("gemini-pro", "gemini-1.0-pro"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("deepseek-v3-0324", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1-distill-qwen-32b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("qwen3-235b-a22b-instruct-2507", "qwen3-235b-a22b"),
        ("qwen-max-2025-01-25", "qwen-max"),
        ("THUDM/glm-4-9b-chat", "glm-4-9b"),
        ("zai-org/GLM-4.5", "glm-4.5"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout"),
        ("llama-3.3-70b-versatile", "llama-3.3-70b"),
        ("llama3.1:8b", "llama-3.1-8b"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("mistral-large-2411", "mistral-large"),
        ("open-mistral-nemo", "mistral-nemo"),
        ("codestral-2501", "codestral"),
        ("moonshotai/Kimi-K2-Instruct", "kimi-k2"),
        ("kimi-k2-0711-preview", "kimi-k2"),
        ("kimi-k2-0905-preview", "kimi-k2-0905"),
        ("x-ai/grok-4", "grok-4"),
        ("grok-4-0709", "grok-4"),
        ("grok-3-beta", "grok-3"),
        ("command-r-plus-08-2024", "command-r-plus"),
        ("command-a-03-2025", "command-a"),
        ("microsoft/Phi-3-mini-4k-instruct", "phi-3-mini-4k"),
        ("microsoft/phi-4", "phi-4"),
    ],
)
def test_aliases_and_snapshots_resolve(name: str, expected: str) -> None:
    info = resolve_model(name)
    assert info.name == expected
    assert info.known
    assert context_window(name) == MODELS[expected].context_window


def test_distinct_models_with_shared_prefixes_stay_distinct() -> None:
    # the longest match wins: a family prefix must not swallow its siblings
    assert context_window("gpt-4") == 8_192
    assert context_window("gpt-4-turbo") == 128_000
    assert context_window("gpt-4o") == 128_000
    assert context_window("gpt-4.1") > 1_000_000
    assert resolve_model("o3-mini-high").name == "o3-mini"
    assert resolve_model("kimi-k2-0905").context_window > resolve_model("kimi-k2").context_window


@pytest.mark.parametrize("name", ["my-local-model", "gpt", "???", "a/b/c", "llama", "ollama:latest", "模型"])
def test_unknown_models_fall_back_explicitly(name: str) -> None:
    info = resolve_model(name)
    assert info.known is False
    assert info.provider == "unknown"
    assert info.context_window == UNKNOWN_CONTEXT_WINDOW == context_window(name)
    assert info.encoding == "estimate"
    assert 0 < info.max_output_tokens < info.context_window


@pytest.mark.parametrize("bad", ["", "   ", "\n", None, 5, b"gpt-4o", ["gpt-4o"]], ids=repr)
def test_bad_names_raise_invalid_input(bad: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        resolve_model(bad)
    assert info.value.field == "model"
    with pytest.raises(InvalidInput):
        context_window(bad)


def test_model_info_is_frozen() -> None:
    info = resolve_model("gpt-4o")
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.context_window = 1  # type: ignore[misc]
    assert resolve_model("gpt-4o").context_window == 128_000
    assert isinstance(info, ModelInfo)
