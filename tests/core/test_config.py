"""Settings: env + file + overrides, conversions, and clear ConfigErrors."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path

import pytest

from hmem.config import ENV_SETTINGS, SHELL_ENV, Settings, mask_url, setting_name
from hmem.errors import ConfigError


def test_defaults_need_no_server() -> None:
    s = Settings.from_env({})
    assert (s.sessions, s.summaries, s.profile, s.vectors) == ("sqlite", "sqlite", "sqlite", "chroma")
    assert not s.llm_configured


def test_env_values_are_converted() -> None:
    # Tuning settings are keyword overrides now; they go through the same string conversion.
    s = Settings.from_env(
        {
            "HMEM_API_KEYS": "k1, k2,,",
            "HMEM_SESSION_TTL_S": "",
            "HMEM_COMPACTION": "background", "HMEM_EXTRACTION": "background",
            "PATH": "/usr/bin",
            "HMEM_NOT_A_SETTING": "ignored like any other env var",
        },
        buffer_tokens="3000", summary_threshold="0.8", extract_facts="off",
    )
    assert s.buffer_tokens == 3000 and s.summary_threshold == 0.8 and s.extract_facts is False
    assert s.api_keys == ("k1", "k2") and s.session_ttl_s is None and s.compaction == "background"
    assert s.extraction == "background"


def test_redis_url_applies_to_stores_not_set_explicitly() -> None:
    s = Settings.from_env({"HMEM_REDIS_URL": "redis://127.0.0.1:6379/2"}, profile="sqlite")
    assert s.sessions == s.summaries == "redis://127.0.0.1:6379/2"
    assert s.profile == "sqlite"


def test_llm_settings_and_summary_model_default() -> None:
    s = Settings.from_env({"HMEM_LLM_BASE_URL": "http://127.0.0.1:9/v1", "HMEM_LLM_MODEL": "qwen2.5"})
    assert s.llm_configured and s.effective_summary_model == "qwen2.5"
    s2 = Settings.from_env({"HMEM_LLM_API_KEY": "k", "HMEM_LLM_MODEL": "gpt-4o"}, summary_model="gpt-4o-mini")
    assert s2.effective_summary_model == "gpt-4o-mini"


def test_file_then_env_then_overrides(tmp_path: Path) -> None:
    f = tmp_path / "hmem.toml"
    f.write_text('[hmem]\nbuffer_tokens = 1000\nmodel = "gpt-4.1"\n', encoding="utf-8")
    s = Settings.from_env({"HMEM_CONFIG": str(f), "HMEM_MODEL": "gpt-4o"}, buffer_messages=7)
    assert (s.buffer_tokens, s.model, s.buffer_messages) == (1000, "gpt-4o", 7)


# Bad settings tried (env settings as variables, tuning settings as keywords); each
# raises ConfigError that names the setting: its variable, or its key for a tuning one.
BAD = [
    ({}, {"buffer_tokens": "lots"}, "buffer_tokens"),
    ({}, {"buffer_tokens": "0"}, "buffer_tokens"),
    ({}, {"summary_threshold": "1.5"}, "summary_threshold"),
    ({}, {"summary_threshold": "nan"}, "summary_threshold"),
    ({}, {"summary_target": "0.9"}, "summary_target"),
    ({}, {"sessions": "mongodb://x"}, "sessions"),
    ({"HMEM_VECTORS": "pinecone"}, {}, "HMEM_VECTORS"),
    ({"HMEM_COMPACTION": "sometimes"}, {}, "HMEM_COMPACTION"),
    ({"HMEM_EXTRACTION": "later"}, {}, "HMEM_EXTRACTION"),
    ({}, {"extract_facts": "maybe"}, "extract_facts"),
    ({"HMEM_EMBED_PROVIDER": "openai"}, {}, "HMEM_EMBED_PROVIDER"),
    ({"HMEM_EMBED_PROVIDER": "local"}, {}, "HMEM_EMBED_PROVIDER"),  # the former name is gone
    ({"HMEM_SESSION_TTL_S": "-1"}, {}, "HMEM_SESSION_TTL_S"),
    ({"HMEM_CONFIG": "/nonexistent/hmem.toml"}, {}, "settings file"),
]


@pytest.mark.parametrize(("env", "overrides", "named"), BAD,
                         ids=lambda e: next(iter(e), "") if isinstance(e, dict) else None)
def test_bad_settings_raise_config_error(env: dict[str, str], overrides: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env, **overrides)
    assert named in str(info.value)


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
    ("env", "overrides", "secret", "named"),
    [
        ({}, {"sessions": "mongodb://:hunter2@db?x=1"}, "hunter2", "sessions="),
        ({}, {"sessions": "mongodb://db/x?password=hunter2"}, "hunter2", "sessions="),
        ({"HMEM_VECTORS": "pinecone://h?api_key=hunter2"}, {}, "hunter2", "HMEM_VECTORS="),
        # redis_url is copied to the store selectors first, so the error names one of those.
        ({"HMEM_REDIS_URL": "redis://:hun#ter2@127.0.0.1:6379/0"}, {}, "ter2", "HMEM_REDIS_URL='redis://:****@"),
        ({}, {"profile": "redis://:hun?ter/2@127.0.0.1:6379/0"}, "ter/2", "profile="),
    ],
)
def test_config_errors_do_not_echo_secrets(env: dict[str, str], overrides: dict[str, str], secret: str,
                                           named: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env, **overrides)
    assert secret not in str(info.value) and named in str(info.value)


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


@pytest.mark.parametrize(("field", "bad", "named"), [("embed_provider", "nope", "HMEM_EMBED_PROVIDER"),
                                                    ("embed_provider", "local", "HMEM_EMBED_PROVIDER"),
                                                    ("window_policy", "sliding", "window_policy"),
                                                    ("compaction", "later", "HMEM_COMPACTION"),
                                                    ("archive_turns", "never", "archive_turns"),
                                                    ("extraction", "Background", "HMEM_EXTRACTION")])
def test_a_settings_built_directly_refuses_a_value_outside_its_choices(field: str, bad: str, named: str) -> None:
    # from_env checks these on the way in; Settings(...) itself checks every choice field too.
    # An env setting is named by its variable, a tuning one by its key ("local": a gone alias).
    with pytest.raises(ConfigError, match=f"^{named}='{bad}': use one of"):
        Settings(**{field: bad})  # type: ignore[arg-type]


# -- the environment sets deployment settings only (hmem.config.ENV_SETTINGS) -------------

#: Every setting that is not an environment setting: a tuning knob, set in the HMEM_CONFIG
#: file or as a keyword, never as an HMEM_<NAME> variable.
TUNING = sorted(f.name for f in fields(Settings) if f.name not in ENV_SETTINGS)


def test_every_tuning_variable_is_refused_before_anything_is_built() -> None:
    """Tried: each tuning setting as HMEM_<NAME> set to its default (valid) value, and the
    examples HMEM_CANDIDATES=40, HMEM_SESSIONS=memory, HMEM_SUMMARY_THRESHOLD=0.5, each
    beside a valid env setting; and all three at once. Each raises a ConfigError naming
    the variable, HMEM_CONFIG and the key, and leaves the env mapping as it was."""
    assert {"candidates", "sessions", "summary_threshold", "buffer_tokens", "redis_timeout_s"} <= set(TUNING)
    tried = [(f"HMEM_{name.upper()}", str(getattr(Settings(), name))) for name in TUNING]
    tried += [("HMEM_CANDIDATES", "40"), ("HMEM_SESSIONS", "memory"), ("HMEM_SUMMARY_THRESHOLD", "0.5")]
    for variable, value in tried:
        env = {"HMEM_VECTORS": "memory", variable: value}
        key = variable.removeprefix("HMEM_").lower()
        with pytest.raises(ConfigError) as info:
            Settings.from_env(env)
        message = str(info.value)
        assert variable in message and "not an environment setting" in message, message
        assert "HMEM_CONFIG" in message and f"{key}=..." in message, message
        # The line it suggests is valid TOML that the file reads as the same setting.
        suggested = re.search(rf"\(({key} = .*?)\), or pass", message)
        assert suggested, message
        line = tomllib.loads(suggested.group(1))
        if value != "None":
            assert Settings.from_env({}, **line) == Settings.from_env({}, **{key: value}), (variable, line)
        assert env == {"HMEM_VECTORS": "memory", variable: value}  # nothing consumed or changed
        assert Settings.from_env({"HMEM_VECTORS": "memory"}) == Settings(vectors="memory")  # without it: defaults
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"HMEM_SUMMARY_THRESHOLD": "0.5", "HMEM_CANDIDATES": "40", "HMEM_SESSIONS": "memory"})
    assert "HMEM_CANDIDATES, HMEM_SESSIONS, HMEM_SUMMARY_THRESHOLD: not an environment setting" in str(info.value)
    assert "candidates = 40)" in str(info.value)  # written as the file would hold it


def test_a_tuning_variable_is_refused_even_with_a_keyword_or_a_file_setting_it(tmp_path: Path) -> None:
    """Tried: HMEM_CANDIDATES=40 beside candidates=40 as a keyword, and beside a settings
    file that sets candidates = 40: the variable is still refused (it would otherwise be
    left in the environment, silently ignored)."""
    f = tmp_path / "hmem.toml"
    f.write_text("[hmem]\ncandidates = 40\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"HMEM_CANDIDATES.*not an environment setting"):
        Settings.from_env({"HMEM_CANDIDATES": "40"}, candidates=40)
    with pytest.raises(ConfigError, match=r"HMEM_CANDIDATES.*not an environment setting"):
        Settings.from_env({"HMEM_CANDIDATES": "40", "HMEM_CONFIG": str(f)})


def test_a_gone_alias_is_an_unknown_variable() -> None:
    """HMEM_LLM_TIMEOUT (the old alias of llm_timeout_s) names no setting: ignored like any
    other unknown HMEM_ variable, and the timeout keeps its default."""
    s = Settings.from_env({"HMEM_LLM_TIMEOUT": "7.5", "HMEM_LLM_MODEL": "m"})
    assert s.llm_timeout_s == Settings().llm_timeout_s == 60.0


@pytest.mark.parametrize("table", ["", "[hmem]\n"], ids=["top-level", "hmem-table"])
def test_tuning_settings_are_read_and_checked_from_the_settings_file(tmp_path: Path, table: str) -> None:
    """Tried, at the top level and under [hmem]: candidates = 40, sessions = "memory",
    summary_threshold = 0.5 (read, through HMEM_CONFIG and through file=); then bad values
    summary_threshold = 2, buffer_tokens = 0, candidates = 0 and candidates = "many": a
    ConfigError naming the key, never an HMEM_ variable."""
    from hmem.build import longterm_config

    f = tmp_path / "hmem.toml"
    f.write_text(f'{table}candidates = 40\nsessions = "memory"\nsummary_threshold = 0.5\n', encoding="utf-8")
    for s in (Settings.from_env({"HMEM_CONFIG": str(f)}), Settings.from_env({}, file=f)):
        assert (s.candidates, s.sessions, s.summary_threshold) == (40, "memory", 0.5)
    for line, named in (("summary_threshold = 2", "summary_threshold must be in (0, 1]"),
                        ("buffer_tokens = 0", "buffer_tokens must be positive"),
                        ('candidates = "many"', "candidates='many' is invalid")):
        f.write_text(f"{table}{line}\n", encoding="utf-8")
        with pytest.raises(ConfigError) as info:
            Settings.from_env({"HMEM_CONFIG": str(f)})
        assert named in str(info.value) and "HMEM_" not in str(info.value), str(info.value)
    # candidates is checked where the long-term store's config is made (as Memory.open does).
    f.write_text(f"{table}candidates = 0\n", encoding="utf-8")
    settings = Settings.from_env({"HMEM_CONFIG": str(f)})
    with pytest.raises(ConfigError) as info:
        longterm_config(settings)
    assert "candidates=0" in str(info.value) and "HMEM_" not in str(info.value), str(info.value)


def test_the_environment_holds_few_variables_and_each_is_a_setting() -> None:
    """The point of the rule: an operator reads at most 25 HMEM_ variables (the settings,
    and HMEM_CONFIG, HMEM_UPSTREAM_API_KEY, HMEM_MCP_USER), each one a Settings field."""
    assert len(SHELL_ENV) == 3 and set(SHELL_ENV) == {"HMEM_CONFIG", "HMEM_UPSTREAM_API_KEY", "HMEM_MCP_USER"}
    assert len(ENV_SETTINGS) + len(SHELL_ENV) <= 25
    names = {f.name for f in fields(Settings)}
    assert set(ENV_SETTINGS) <= names, set(ENV_SETTINGS) - names
    assert all(setting_name(name) == f"HMEM_{name.upper()}" for name in ENV_SETTINGS)
    assert all(setting_name(name) == name for name in TUNING)


def test_env_beats_the_file_and_a_keyword_beats_both(tmp_path: Path) -> None:
    """Tried: vectors = "chroma" and model = "gpt-4.1" in the file, HMEM_VECTORS=memory and
    HMEM_MODEL=gpt-4o in the env, then vectors= / model= as keywords; a tuning key of the
    file (candidates) is kept when only the env and keywords set others."""
    f = tmp_path / "hmem.toml"
    f.write_text('[hmem]\nvectors = "chroma"\nmodel = "gpt-4.1"\ncandidates = 40\n', encoding="utf-8")
    env = {"HMEM_CONFIG": str(f)}
    assert (Settings.from_env(env).vectors, Settings.from_env(env).model) == ("chroma", "gpt-4.1")
    s = Settings.from_env({**env, "HMEM_VECTORS": "memory", "HMEM_MODEL": "gpt-4o"})
    assert (s.vectors, s.model, s.candidates) == ("memory", "gpt-4o", 40)
    s = Settings.from_env({**env, "HMEM_VECTORS": "memory", "HMEM_MODEL": "gpt-4o"},
                          vectors="chroma://127.0.0.1:8000", model="gpt-4.1-mini", candidates="50")
    assert (s.vectors, s.model, s.candidates) == ("chroma://127.0.0.1:8000", "gpt-4.1-mini", 50)
