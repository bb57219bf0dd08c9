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


# (url, what a log may show): userinfo passwords, secret-looking query/fragment
# parameters, and URLs a parser would split wrongly (unencoded '#', '?' or '/').
MASKED = [
    ("redis://:s3cret@10.0.0.1:6379/0", "redis://:****@10.0.0.1:6379/0"),
    ("redis://user:s3cret@host/1", "redis://user:****@host/1"),
    ("redis://s3cret@host:6379", "redis://****@host:6379"),
    ("rediss://u:p%40s3cret@host:6380", "rediss://u:****@host:6380"),
    ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
    ("redis://host:6379/0?password=s3cret&db=1", "redis://host:6379/0?password=****&db=1"),
    ("redis://host:6379/0?db=1&PASSWORD=s3cret", "redis://host:6379/0?db=1&PASSWORD=****"),
    ("redis://host:6379/0?password=s3c@ret", "redis://host:6379/0?password=****"),
    ("https://api.example.com/v1?api_key=s3cret&model=m", "https://api.example.com/v1?api_key=****&model=m"),
    ("https://api.example.com/v1?key=s3cret", "https://api.example.com/v1?key=****"),
    ("https://api.example.com/v1?token=s3cret", "https://api.example.com/v1?token=****"),
    ("https://h/v1?apikey=s3cret&access_key=s3cret&pwd=s3cret&secret=s3cret&auth=s3cret&pass=s3cret",
     "https://h/v1?apikey=****&access_key=****&pwd=****&secret=****&auth=****&pass=****"),
    ("https://h/cb#access_token=s3cret&state=1", "https://h/cb#access_token=****&state=1"),
    ("redis://:p#ss?w/rd@host:6379/0", "redis://:****@host:6379/0"),
    ("redis://admin:s3/cr?et@host:6379/0", "redis://admin:****@host:6379/0"),
    ("redis:/:s3cret@host", "****@host"),  # mistyped scheme: still no password
    ("unix://:s3cret@/tmp/redis.sock?db=0", "unix://:****@/tmp/redis.sock?db=0"),
]


@pytest.mark.parametrize(("url", "shown"), MASKED)
def test_mask_url_hides_every_secret(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    for secret in ("s3cret", "s3c", "p#ss", "w/rd", "cr?et"):
        assert secret not in mask_url(url)


def test_mask_url_never_raises_on_garbage() -> None:
    for junk in ["", "::::", "http://[", "redis://@@@", "%zz", "a" * 10_000, None, 42]:
        assert isinstance(mask_url(junk), str)


SECRET_SETTINGS = {
    "HMEM_REDIS_URL": "redis://:hunter2@127.0.0.1:6379/0?password=hunter2",
    "HMEM_VECTORS": "https://chroma.internal:8000/?token=hunter2",
    "HMEM_LLM_BASE_URL": "https://llm.internal/v1?api_key=hunter2",
    "HMEM_EMBED_BASE_URL": "https://emb.internal/v1?key=hunter2",
    "HMEM_LLM_API_KEY": "hunter2",
    "HMEM_API_KEYS": "hunter2,other:alice",
}


def test_settings_repr_shows_no_secret() -> None:
    text = repr(Settings.from_env(SECRET_SETTINGS))
    assert "hunter2" not in text
    assert "redis://:****@127.0.0.1:6379/0?password=****" in text and "llm.internal/v1?api_key=****" in text


@pytest.mark.parametrize(
    ("env", "secret"),
    [
        ({"HMEM_SESSIONS": "mongodb://:hunter2@db?x=1"}, "hunter2"),
        ({"HMEM_SESSIONS": "mongodb://db/x?password=hunter2"}, "hunter2"),
        ({"HMEM_VECTORS": "pinecone://h?api_key=hunter2"}, "hunter2"),
        ({"HMEM_REDIS_URL": "redis://:hun#ter2@127.0.0.1:6379/0"}, "ter2"),
        ({"HMEM_PROFILE": "redis://:hun?ter/2@127.0.0.1:6379/0"}, "ter/2"),
    ],
)
def test_config_errors_do_not_echo_secrets(env: dict[str, str], secret: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    assert secret not in str(info.value) and "HMEM_" in str(info.value)


def test_an_unencoded_password_is_refused_with_how_to_encode_it() -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"HMEM_REDIS_URL": "redis://:p#ss?w/rd@127.0.0.1:6379/0"})
    message = str(info.value)
    assert "percent-encode" in message and "redis://:****@127.0.0.1:6379/0" in message
    encoded = Settings.from_env({"HMEM_REDIS_URL": "redis://:p%23ss%3Fw%2Frd@127.0.0.1:6379/0"})
    assert encoded.sessions.endswith("@127.0.0.1:6379/0")


def test_a_bad_toml_value_error_hides_a_secret_field(tmp_path: Path) -> None:
    f = tmp_path / "hmem.toml"
    f.write_text('llm_api_key = ["hunter2"]\nsessions = 5\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        Settings.from_env({}, file=f)
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize(("field", "bad"), [("embed_provider", "nope"), ("window_policy", "sliding"),
                                            ("compaction", "later"), ("archive_turns", "never"),
                                            ("extraction", "Background")])
def test_a_settings_built_directly_refuses_a_value_outside_its_choices(field: str, bad: str) -> None:
    # from_env checks these on the way in; Settings(...) itself checks every choice field too.
    with pytest.raises(ConfigError, match=f"HMEM_{field.upper()}='{bad}': use one of"):
        Settings(**{field: bad})  # type: ignore[arg-type]
