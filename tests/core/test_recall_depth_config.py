"""``LongTermConfig.candidates`` and ``rerank_depth``: the two depths of recall, fixed by
the config (never by ``k``, tests/integration/test_recall_depth.py), checked when made."""

from __future__ import annotations

from pathlib import Path

import pytest

from hmem._checks import RECALL_WEIGHTS
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.longterm.types import MAX_K, LongTermConfig
from hmem.memory import Memory
from tests.core.test_time_boost import SameVector


def test_defaults_retrieve_deeper_than_they_rerank() -> None:
    config = LongTermConfig()
    assert (config.candidates, config.rerank_depth) == (300, 100)


@pytest.mark.parametrize("name", ["candidates", "rerank_depth"])
@pytest.mark.parametrize("value", [1, 50, MAX_K])
def test_any_integer_from_1_to_max_k_is_accepted(name: str, value: int) -> None:
    assert getattr(LongTermConfig(**{name: value}), name) == value  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["candidates", "rerank_depth"])
@pytest.mark.parametrize("value", [0, -1, MAX_K + 1, True, 2.5, "50", None])
def test_bad_depths_are_refused_with_the_field_named(name: str, value: object) -> None:
    """Tried: 0, -1, MAX_K + 1, a bool, a float, a string, None."""
    with pytest.raises(ConfigError, match=f"{name} must be an integer from 1 to {MAX_K}"):
        LongTermConfig(**{name: value})  # type: ignore[arg-type]


def test_a_negative_rrf_k_is_still_refused() -> None:
    with pytest.raises(ConfigError, match="rrf_k must be >= 0"):
        LongTermConfig(rrf_k=-1)


def test_the_settings_reach_the_store_and_bad_values_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    """candidates / rerank_depth (Memory.open's keywords, or the HMEM_CONFIG file) set
    the store's config; unset, LongTermConfig's defaults stand. Tried: 0, 1001, -5, a word
    (a ConfigError naming the setting, no data folder made)."""
    assert Settings.from_env({}, candidates="120", rerank_depth="40").candidates == 120
    assert Settings.from_env({}).rerank_depth is None
    with Memory.open(tmp_path / "ok", vectors="memory", embedder=SameVector(), candidates=120, rerank_depth=40) as mem:
        store = mem._longterm
        assert (store.config.candidates, store.config.rerank_depth) == (120, 40)
    for name in ("candidates", "rerank_depth"):
        for bad in (0, MAX_K + 1, -5, "deep"):
            with pytest.raises(ConfigError, match=f"^{name}="):
                Memory.open(tmp_path / "bad", vectors="memory", embedder=SameVector(), **{name: bad})
            assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("name", sorted(RECALL_WEIGHTS))
def test_settings_and_the_store_config_accept_the_same_weights(name: str) -> None:
    """One range table (hmem._checks.RECALL_WEIGHTS): the setting and LongTermConfig
    agree at both ends and just past them. Tried: 0, the top, a hair above it, a hair below 0."""
    top = RECALL_WEIGHTS[name]
    for value in (0.0, top):
        assert getattr(Settings.from_env({}, **{name: str(value)}), name) == value
        assert getattr(LongTermConfig(**{name: value}), name) == value
    for value in (top + 1e-6, -1e-6):
        with pytest.raises(ConfigError, match=f"^{name}=.*{name} must be a number in \\[0, {top:g}\\]"):
            Settings.from_env({}, **{name: str(value)})
        with pytest.raises(ConfigError, match=f"^{name} must be a number in \\[0, {top:g}\\]"):
            LongTermConfig(**{name: value})
