"""Settings.items (a tuning setting: a keyword or the HMEM_CONFIG file): accepted values,
HMEM_REDIS_URL applies to it, bad values."""

from __future__ import annotations

import pytest

from hmem.config import Settings
from hmem.errors import ConfigError


def test_items_default_to_sqlite_and_take_memory_or_a_redis_url() -> None:
    assert Settings.from_env({}).items == "sqlite"
    assert Settings.from_env({}, items="memory").items == "memory"
    url = "redis://127.0.0.1:6379/3"
    assert Settings.from_env({}, items=url).items == url


def test_redis_url_moves_the_items_too_unless_they_are_set() -> None:
    url = "redis://cache:6379/0"
    assert Settings.from_env({"HMEM_REDIS_URL": url}).items == url
    assert Settings.from_env({"HMEM_REDIS_URL": url}, items="sqlite").items == "sqlite"


@pytest.mark.parametrize("bad", ["", "postgres://db/1", "redis", "SQLITE", "chroma://h:1"])
def test_a_bad_items_value_is_a_config_error_naming_the_setting(bad: str) -> None:
    with pytest.raises(ConfigError, match=r"^items="):
        Settings.from_env({}, items=bad)
