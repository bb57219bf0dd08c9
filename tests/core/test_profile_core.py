"""Pure profile rules: key normalization, value validation, storage encoding, rendering,
and the versioning plan every profile store persists (plan_set / plan_delete)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hmem.errors import CapacityError, InvalidInput
from hmem.profile.model import (
    MAX_LIST_ITEMS,
    MAX_VALUE_CHARS,
    coerce_value,
    decode_value,
    encode_value,
    history_problems,
    normalize_key,
    render_profile,
    render_profile_tokens,
    same_value,
)
from hmem.profile.versioning import (
    Plan,
    check_max_keys,
    check_update,
    confirm,
    plan_delete,
    plan_set,
    write_time,
)
from hmem.types import ProfileEntry, Provenance

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


# -- versioning: plan_set / plan_delete as pure functions ------------------------------


def _no_count() -> int:
    raise AssertionError("live_keys() must only be asked when the write adds a live key")


def _counter(value: int) -> tuple[list[int], Any]:
    calls: list[int] = []

    def count() -> int:
        calls.append(value)
        return value

    return calls, count


def _persist(history: list[ProfileEntry], plan: Plan) -> None:
    """What every store does with a plan, on a plain list (oldest first)."""
    if plan.rewrite is not None:
        history[-1] = plan.rewrite
    if plan.append is not None:
        history.append(plan.append)


def test_plan_set_first_value_appends_one_open_version_and_counts_live_keys() -> None:
    calls, count = _counter(0)
    plan = plan_set(None, check_update("u1", "Home Town", "Berlin"), now=T0, max_keys=5, live_keys=count)
    assert plan.rewrite is None and calls == [0]
    assert plan.append == plan.result == ProfileEntry("u1", "home_town", "Berlin", T0, None, Provenance(), 1.0)


def test_plan_set_new_value_closes_the_current_version_where_the_new_one_starts() -> None:
    current = ProfileEntry("u1", "city", "Berlin", T0)
    t1 = T0 + timedelta(hours=1)
    plan = plan_set(current, check_update("u1", "city", "Paris", confidence=0.7), now=t1, max_keys=1,
                    live_keys=_no_count)  # replacing a live value adds no key: the cap is not asked
    assert plan.rewrite == ProfileEntry("u1", "city", "Berlin", T0, t1)
    assert plan.append is not None and plan.append.value == "Paris" and plan.append.valid_from == t1
    assert plan.result.confidence == 0.7
    assert history_problems([plan.rewrite, plan.append]) == []


def test_plan_set_same_value_confirms_in_place_and_keeps_the_first_provenance() -> None:
    first = ProfileEntry("u1", "city", "Paris", T0, None, Provenance("message", "s1", "m1"), 0.6)
    t1 = T0 + timedelta(days=2)
    for confidence, kept in ((0.9, 0.9), (0.2, 0.6)):
        update = check_update("u1", "CITY", "Paris", confidence=confidence, provenance=Provenance("api"))
        plan = plan_set(first, update, now=t1, max_keys=1, live_keys=_no_count)
        assert plan.append is None and plan.result is plan.rewrite
        assert (plan.result.valid_from, plan.result.valid_to, plan.result.confirmed_at) == (T0, None, t1)
        assert plan.result.confidence == kept and plan.result.provenance == first.provenance


def test_plan_set_same_text_of_another_type_is_a_new_version() -> None:
    current = ProfileEntry("u1", "vegan", 1, T0)
    plan = plan_set(current, check_update("u1", "vegan", True), now=T0, max_keys=1, live_keys=_no_count)
    assert plan.append is not None and plan.append.value is True and plan.rewrite is not None


def test_plan_set_after_a_deletion_closes_the_tombstone_and_counts_the_cap() -> None:
    tombstone = ProfileEntry("u1", "city", None, T0)
    calls, count = _counter(2)
    t1 = T0 + timedelta(minutes=1)
    plan = plan_set(tombstone, check_update("u1", "city", "Rome"), now=t1, max_keys=3, live_keys=count)
    assert calls == [2] and plan.rewrite == ProfileEntry("u1", "city", None, T0, t1)
    assert plan.result.value == "Rome"


@pytest.mark.parametrize("current", [None, ProfileEntry("u1", "pet", None, T0)], ids=["new", "after-delete"])
def test_plan_set_past_the_cap_raises_one_capacity_message(current: ProfileEntry | None) -> None:
    with pytest.raises(CapacityError) as info:
        plan_set(current, check_update("u1", "Pet", "cat"), now=T0, max_keys=3, live_keys=lambda: 3)
    assert str(info.value) == (
        "user 'u1' already has 3 profile keys, the cap (max_keys=3); delete a key first or configure a larger"
        " max_keys. Key 'pet' was not stored."
    )


def test_plan_set_clamps_a_clock_behind_the_current_version_and_refuses_backdating() -> None:
    current = ProfileEntry("u1", "city", "Berlin", T0)
    skewed = plan_set(current, check_update("u1", "city", "Paris"), now=T0 - timedelta(seconds=30), max_keys=1,
                      live_keys=_no_count)
    assert skewed.rewrite is not None and skewed.append is not None
    assert skewed.result.valid_from == T0 and history_problems([skewed.rewrite, skewed.append]) == []
    with pytest.raises(InvalidInput) as info:
        plan_set(current, check_update("u1", "city", "Paris", at=T0 - timedelta(days=1)), now=T0, max_keys=1,
                 live_keys=_no_count)
    assert info.value.field == "at"


def test_plan_delete_closes_a_live_value_and_does_nothing_otherwise() -> None:
    assert plan_delete(None, Provenance(), now=T0) is None
    assert plan_delete(ProfileEntry("u1", "city", None, T0), Provenance(), now=T0) is None
    current = ProfileEntry("u1", "city", "Paris", T0, confidence=0.4)
    t1 = T0 + timedelta(minutes=5)
    plan = plan_delete(current, Provenance("api", "s9"), now=t1)
    assert plan is not None and plan.rewrite == ProfileEntry("u1", "city", "Paris", T0, t1, confidence=0.4)
    assert plan.result == ProfileEntry("u1", "city", None, t1, None, Provenance("api", "s9"), 1.0)
    skewed = plan_delete(current, Provenance(), now=T0 - timedelta(hours=1))
    assert skewed is not None and skewed.result.valid_from == T0  # clamped, the chain stays sound


# Inputs tried: empty/ill-typed user id, key, value, confidence, provenance and time.
BAD_UPDATES = [
    ({"user_id": ""}, "user_id"), ({"user_id": 7}, "user_id"), ({"key": " - "}, "key"), ({"key": "a/b"}, "key"),
    ({"value": None}, "value"), ({"value": {"a": 1}}, "value"), ({"confidence": 1.5}, "confidence"),
    ({"confidence": True}, "confidence"), ({"provenance": "api"}, "provenance"),
    ({"provenance": Provenance("robot")}, "provenance.source"), ({"at": "yesterday"}, "at"), ({"at": math.nan}, "at"),
]  # fmt: skip


@pytest.mark.parametrize(("override", "field"), BAD_UPDATES, ids=[f for _, f in BAD_UPDATES])
def test_check_update_rejects_bad_arguments_naming_the_field(override: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"user_id": "u1", "key": "city", "value": "Paris", **override}
    with pytest.raises(InvalidInput) as info:
        check_update(args.pop("user_id"), args.pop("key"), args.pop("value"), **args)
    assert info.value.field == field


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10", None])
def test_check_max_keys_rejects_non_positive_ints(bad: Any) -> None:
    with pytest.raises(InvalidInput):
        check_max_keys(bad)
    assert check_max_keys(1) == 1


@given(st.lists(st.tuples(st.sampled_from(["a", "b", 1, True, None]), st.integers(-90, 90)), max_size=25))
def test_any_sequence_of_plans_keeps_one_sound_chain(ops: list[tuple[Any, int]]) -> None:
    """Writes and deletes with a clock that jumps back and forth: the persisted history
    is always a gap-free chain whose newest version is the only open one."""
    history: list[ProfileEntry] = []
    clock = T0
    for value, step in ops:
        clock += timedelta(minutes=step)
        current = history[-1] if history else None
        if value is None:
            plan = plan_delete(current, Provenance(), now=clock)
        else:
            plan = plan_set(current, check_update("u1", "k", value), now=clock, max_keys=1, live_keys=lambda: 0)
        if plan is not None:
            _persist(history, plan)
        assert history_problems(history) == []
        if value is None:
            assert not history or history[-1].value is None
        else:
            assert same_value(history[-1].value, value)
