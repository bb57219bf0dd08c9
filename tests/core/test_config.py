"""Settings: env + file + overrides, conversions, and clear ConfigErrors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hmem.config import Settings, mask_url
from hmem.errors import ConfigError


def test_defaults_need_no_server() -> None:
    s = Settings.from_env({})
    assert (s.sessions, s.summaries, s.profile, s.vectors) == ("sqlite", "sqlite", "sqlite", "chroma")
    assert not s.llm_configured


def test_env_values_are_converted() -> None:
    s = Settings.from_env(
        {
            "HMEM_BUFFER_TOKENS": "3000",
            "HMEM_SUMMARY_THRESHOLD": "0.8",
            "HMEM_EXTRACT_FACTS": "off",
            "HMEM_API_KEYS": "k1, k2,,",
            "HMEM_SESSION_TTL_S": "",
            "HMEM_COMPACTION": "background", "HMEM_EXTRACTION": "background",
            "PATH": "/usr/bin",
            "HMEM_NOT_A_SETTING": "ignored like any other env var",
        }
    )
    assert s.buffer_tokens == 3000 and s.summary_threshold == 0.8 and s.extract_facts is False
    assert s.api_keys == ("k1", "k2") and s.session_ttl_s is None and s.compaction == "background"
    assert s.extraction == "background"


def test_redis_url_applies_to_stores_not_set_explicitly() -> None:
    s = Settings.from_env({"HMEM_REDIS_URL": "redis://127.0.0.1:6379/2", "HMEM_PROFILE": "sqlite"})
    assert s.sessions == s.summaries == "redis://127.0.0.1:6379/2"
    assert s.profile == "sqlite"


def test_llm_settings_and_summary_model_default() -> None:
    s = Settings.from_env({"HMEM_LLM_BASE_URL": "http://127.0.0.1:9/v1", "HMEM_LLM_MODEL": "qwen2.5"})
    assert s.llm_configured and s.effective_summary_model == "qwen2.5"
    s2 = Settings.from_env({"HMEM_LLM_API_KEY": "k", "HMEM_LLM_MODEL": "gpt-4o", "HMEM_SUMMARY_MODEL": "gpt-4o-mini"})
    assert s2.effective_summary_model == "gpt-4o-mini"


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    f = tmp_path / "hmem.toml"
    f.write_text('[hmem]\nbuffer_tokens = 1000\nmodel = "gpt-4.1"\n', encoding="utf-8")
    s = Settings.from_env({"HMEM_CONFIG": str(f), "HMEM_MODEL": "gpt-4o"}, buffer_messages=7)
    assert (s.buffer_tokens, s.model, s.buffer_messages) == (1000, "gpt-4o", 7)


# Bad settings tried; each raises ConfigError that names the variable.
BAD = [
    {"HMEM_BUFFER_TOKENS": "lots"},
    {"HMEM_BUFFER_TOKENS": "0"},
    {"HMEM_SUMMARY_THRESHOLD": "1.5"},
    {"HMEM_SUMMARY_THRESHOLD": "nan"},
    {"HMEM_SUMMARY_TARGET": "0.9"},
    {"HMEM_SESSIONS": "mongodb://x"},
    {"HMEM_VECTORS": "pinecone"},
    {"HMEM_COMPACTION": "sometimes"},
    {"HMEM_EXTRACTION": "later"},
    {"HMEM_EXTRACT_FACTS": "maybe"},
    {"HMEM_EMBED_PROVIDER": "openai"},
    {"HMEM_SESSION_TTL_S": "-1"},
    {"HMEM_CONFIG": "/nonexistent/hmem.toml"},
]


@pytest.mark.parametrize("env", BAD, ids=lambda e: next(iter(e)))
def test_bad_settings_raise_config_error(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert "HMEM_" in str(info.value) or "settings file" in str(info.value)


def test_bad_toml_and_unknown_override(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("buffer_tokens = = 3", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Settings.from_env({}, file=f)
    with pytest.raises(ConfigError, match="unknown setting"):
        Settings.from_env({}, colour="red")


def test_mask_url_hides_password() -> None:
    assert mask_url("redis://:s3cret@10.0.0.1:6379/0") == "redis://:****@10.0.0.1:6379/0"
    assert mask_url("redis://user:s3cret@host/1") == "redis://user:****@host/1"
    assert mask_url("redis://127.0.0.1:6379") == "redis://127.0.0.1:6379"
