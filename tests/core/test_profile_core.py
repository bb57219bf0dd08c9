"""Pure profile rules: key normalization, value validation, storage encoding, rendering."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.errors import InvalidInput
from hmem.profile.model import (
    MAX_LIST_ITEMS,
    MAX_VALUE_CHARS,
    coerce_value,
    confirm,
    decode_value,
    encode_value,
    history_problems,
    normalize_key,
    render_profile,
    render_profile_tokens,
    same_value,
    write_time,
)
from hmem.types import ProfileEntry

T0 = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("name", "name"),
        ("  Name ", "name"),
        ("Home Town", "home_town"),
        ("home-town", "home_town"),
        ("home \t -  town", "home_town"),
        ("_home_town_", "home_town"),
        ("ＨＯＭＥ　ＴＯＷＮ", "home_town"),  # full-width letters and ideographic space (NFKC)
        ("Straße", "strasse"),  # case-folded, not just lower-cased
        ("favorite.color", "favorite.color"),
        ("居住城市", "居住城市"),
        ("最喜欢的 颜色", "最喜欢的_颜色"),
        ("Ｋｅｙ１", "key1"),
    ],
)
def test_normalize_key(raw: str, key: str) -> None:
    assert normalize_key(raw) == key


@pytest.mark.parametrize(
    "bad", ["", "   ", "-", " _ - ", "a/b", "a:b", "emoji🙂", "k" * 65, 5, None, b"name", "\udcff"]
)
def test_normalize_key_rejects(bad: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        normalize_key(bad)
    assert info.value.field == "key"


@given(st.text(min_size=1, max_size=40))
def test_normalize_key_is_idempotent(raw: str) -> None:
    try:
        once = normalize_key(raw)
    except InvalidInput:
        return
    assert normalize_key(once) == once
    assert once == once.strip("_") and "__" not in once and " " not in once


profile_values = st.one_of(
    st.text(min_size=1, max_size=50).filter(lambda s: s.strip() and "\x00" not in s),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.lists(
        st.text(min_size=1, max_size=20).filter(lambda s: s.strip() and "\x00" not in s), min_size=1, max_size=5
    ).map(tuple),
)


@given(profile_values)
def test_encode_decode_round_trips_exactly_with_the_type(value: Any) -> None:
    value = coerce_value(value)
    back = decode_value(encode_value(value))
    assert same_value(back, value)


def test_coerce_value_accepts_and_normalizes() -> None:
    assert coerce_value(["a", "b"]) == ("a", "b")
    assert coerce_value("x" * MAX_VALUE_CHARS) == "x" * MAX_VALUE_CHARS
    assert coerce_value(["x"] * MAX_LIST_ITEMS) == ("x",) * MAX_LIST_ITEMS
    assert coerce_value(-0.5) == -0.5


@pytest.mark.parametrize(
    "bad",
    [None, {"a": 1}, {"a"}, b"x", math.nan, -math.inf, 2**64, [], ["a", 1], ["a", None], [""], "", " \n",
     "x" * (MAX_VALUE_CHARS + 1), ["x"] * (MAX_LIST_ITEMS + 1), object(), 1j],
)  # fmt: skip
def test_coerce_value_rejects(bad: Any) -> None:
    with pytest.raises(InvalidInput):
        coerce_value(bad)


def test_same_value_respects_types() -> None:
    assert same_value(1, 1) and same_value(("a",), ("a",))
    assert not same_value(1, True) and not same_value(1, 1.0) and not same_value("1", 1)


def test_write_time_clamps_the_clock_and_rejects_backdating() -> None:
    assert write_time(None, T0, None) == T0
    assert write_time(None, T0 - timedelta(seconds=5), T0) == T0  # skewed clock: clamp
    assert write_time(T0 + timedelta(days=1), T0, T0) == T0 + timedelta(days=1)
    assert write_time("2024-01-02T00:00:00Z", T0, T0) == datetime(2024, 1, 2, tzinfo=UTC)
    with pytest.raises(InvalidInput):
        write_time(T0 - timedelta(days=1), T0, T0)


def _entry(key: str, value: Any, minutes: int, **kw: Any) -> ProfileEntry:
    return ProfileEntry("u1", key, value, T0 + timedelta(minutes=minutes), **kw)


def test_history_problems_finds_gaps_overlaps_and_open_versions() -> None:
    a = _entry("k", "a", 0, valid_to=T0 + timedelta(minutes=1))
    b = _entry("k", "b", 1)
    assert history_problems([a, b]) == []
    assert history_problems([a, _entry("k", "b", 2)])  # gap
    assert history_problems([_entry("k", "a", 0), b])  # two open versions
    assert history_problems([a])  # newest version closed


def test_render_most_recently_confirmed_first() -> None:
    location = _entry("location", "Paris", 0)
    likes = _entry("likes", ("tea", "chess"), 5)
    age = _entry("age", 34, 3)
    assert render_profile([location, likes, age]) == "likes: tea, chess\nage: 34\nlocation: Paris"
    # stating the location again makes it the most recent
    location = confirm(location, T0 + timedelta(minutes=9), 0.5)
    assert location.confidence == 1.0 and location.valid_from == T0
    assert render_profile([location, likes, age]).splitlines()[0] == "location: Paris"


def test_render_formats_values_on_one_line_and_skips_non_current() -> None:
    entries = [
        _entry("vegan", True, 4),
        _entry("height_m", 1.75, 3),
        _entry("bio", "likes\n  long\twalks", 2),
        _entry("old", "gone", 1, valid_to=T0 + timedelta(minutes=2)),
        _entry("deleted", None, 0),
        _entry("unsure", "maybe", 5, confidence=0.3),
    ]
    assert render_profile(entries, min_confidence=0.5) == "vegan: yes\nheight_m: 1.75\nbio: likes long walks"
    assert render_profile([]) == ""


def _tokenizer() -> Any:
    tokens = pytest.importorskip("hmem.tokens")
    return tokens.get_tokenizer("gpt-4o-mini")


def test_render_tokens_counts_with_the_model_tokenizer() -> None:
    tokenizer = _tokenizer()
    entries = [_entry("location", "上海", 2), _entry("name", "Alice Chen", 1)]
    text, tokens = render_profile_tokens(entries, tokenizer)
    assert text == "location: 上海\nname: Alice Chen"
    assert tokens == tokenizer.count(text) > 0
    assert render_profile_tokens([], tokenizer) == ("", 0)


@given(st.integers(min_value=0, max_value=80))
def test_render_tokens_never_exceeds_the_budget_and_keeps_lines_whole(budget: int) -> None:
    tokenizer = _tokenizer()
    entries = [_entry(f"key_{i}", ("x " * (i * 3)).strip() or "short", i) for i in range(8)]
    full = render_profile(entries).splitlines()
    text, tokens = render_profile_tokens(entries, tokenizer, max_tokens=budget)
    assert tokens <= budget and tokens == (tokenizer.count(text) if text else 0)
    kept = text.splitlines()
    assert all(line in full for line in kept)
    assert kept == [line for line in full if line in kept]  # priority order preserved
    if budget >= tokenizer.count(full[0]):
        assert kept and kept[0] == full[0]  # the most recent line is never dropped when it fits


def test_render_tokens_rejects_a_bad_budget() -> None:
    tokenizer = _tokenizer()
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidInput):
            render_profile_tokens([], tokenizer, max_tokens=bad)  # type: ignore[arg-type]
