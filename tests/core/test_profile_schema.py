"""The profile schema (canonical keys, aliases, merge rules) and what applying extracted
updates does to a real store: likes accumulate and leave on "no longer", allergies are
never dropped silently, a location supersedes into history, and every item keeps the
message, session and time it came from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hmem.errors import InvalidInput
from hmem.eval.profile_table import load_table
from hmem.profile.extract import OfflineProfileExtractor, ProfileUpdate, apply_updates
from hmem.profile.merge import diet_label_kind, item_identity, item_origins, merge_items
from hmem.profile.schema import KEYS, canonical_key, is_list_key
from hmem.protocols import ProfileStore
from hmem.types import ProfileEntry, Provenance


def test_the_schema_in_code_is_the_table_of_schema_md() -> None:
    table = load_table()
    assert {k: s.type for k, s in KEYS.items()} == table.types
    for alias, key in table.aliases.items():
        spelled = alias.replace("*", "x")  # "favorite_*" stands for every favorite_<thing>
        assert canonical_key(spelled) == key, alias
    assert len(KEYS) == 20


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("City", "location"), ("lives_in", "location"), ("所在地", "location"), ("Home-Town", "hometown"),
        ("favourite_band", "likes"), ("favorite food", "likes"), ("最喜欢的电影", "likes"), ("hobbies", "likes"),
        ("mother_tongue", "languages"), ("Spouse", "partner"), ("allergy", "allergies"), ("DOB", "birthday"),
        ("likes", "likes"), ("Blood Type", "blood_type"), ("car", "car"), ("favorite", "favorite"),
    ],
)  # fmt: skip
def test_canonical_key_maps_aliases_and_keeps_free_form_keys(raw: str, key: str) -> None:
    assert canonical_key(raw) == key


def test_canonical_key_refuses_what_normalize_key_refuses() -> None:
    for bad in ("", "   ", "a/b", 3):
        with pytest.raises(InvalidInput):
            canonical_key(bad)


def test_list_keys_and_merge_rules() -> None:
    assert {k for k in KEYS if is_list_key(k)} == {
        "languages", "children", "family", "pets", "diet", "allergies", "likes", "dislikes"}  # fmt: skip
    assert KEYS["allergies"].merge == KEYS["children"].merge == "keep"
    assert KEYS["likes"].merge == "accumulate" and KEYS["diet"].merge == "labels"
    assert all(KEYS[k].merge == "supersede" for k in ("location", "occupation", "employer", "name", "partner"))
    assert not is_list_key("car")


def test_merge_items_accumulates_and_removes_only_what_is_named() -> None:
    assert merge_items("likes", None, add=("Tea",)) == ("Tea",)
    assert merge_items("likes", ("tea",), add=("TEA", "teas", "chess")) == ("tea", "chess")  # case, plural
    assert merge_items("likes", ("tea", "chess"), remove=("Chess",)) == ("tea",)
    assert merge_items("likes", ("tea",), remove=("jazz",)) == ("tea",)  # nothing named, nothing gone
    assert merge_items("likes", ("tea",), remove=("tea",)) == ()  # empty: the caller deletes the key


def test_merge_items_a_complete_list_replaces_except_for_keep_keys() -> None:
    assert merge_items("likes", ("tea", "jazz"), add=("chess",), complete=True) == ("chess",)
    assert merge_items("allergies", ("peanuts",), add=("penicillin",), complete=True) == ("peanuts", "penicillin")
    assert merge_items("children", ("son: Noah",), add=("daughter",), complete=True) == ("son: Noah", "daughter")
    assert merge_items("allergies", ("peanuts", "penicillin"), remove=("peanut",)) == ("penicillin",)


def test_merge_items_diet_labels_supersede_by_kind_and_foods_accumulate() -> None:
    assert merge_items("diet", ("vegetarian", "no:pork"), add=("vegan",)) == ("no:pork", "vegan")
    assert merge_items("diet", ("吃素",), add=("halal",)) == ("吃素", "halal")  # another kind of label
    assert merge_items("diet", ("no:pork",), add=("不吃牛肉", "no:pork")) == ("no:pork", "不吃牛肉")
    assert [diet_label_kind(x) for x in ("Vegan", "keto diet", "清真", "no:pork", "spicy")] == [
        "pattern", "plan", "religious", None, None]  # fmt: skip


def test_merge_items_entities_named_replaces_unnamed_of_its_kind() -> None:
    assert merge_items("pets", ("dog", "cat"), add=("dog: Rex",)) == ("cat", "dog: Rex")
    assert merge_items("pets", ("dog: Rex",), add=("dog",)) == ("dog: Rex",)
    assert merge_items("pets", ("dog: Rex",), add=("dog: Max",)) == ("dog: Rex", "dog: Max")
    assert item_identity("pets", "Greyhound: Biscuit") == item_identity("pets", "dog: biscuit")


def test_item_origins_name_the_version_that_brought_each_item() -> None:
    t = [datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=d) for d in range(3)]
    p = [Provenance("message", "s1", "m1"), Provenance("message", "s2", "m2"), Provenance("message", "s3", "m3")]
    history = [
        ProfileEntry("u", "likes", ("tea",), t[0], t[1], p[0]),
        ProfileEntry("u", "likes", ("tea", "jazz"), t[1], t[2], p[1]),
        ProfileEntry("u", "likes", ("jazz", "chess"), t[2], None, p[2]),
    ]
    origins = item_origins(history)
    assert {item: (e.provenance.message_id, e.valid_from) for item, e in origins.items()} == {
        "jazz": ("m2", t[1]), "chess": ("m3", t[2])}  # fmt: skip
    assert item_origins([*history[:2], ProfileEntry("u", "likes", None, t[2], None, p[2])]) == {}
    assert item_origins([]) == {}


def _say(profile_store: ProfileStore, text: str, message: str, session: str = "s1") -> Any:
    updates = OfflineProfileExtractor().extract(text)
    return apply_updates(profile_store, "u1", updates, Provenance("message", session, message))


def _value(profile_store: ProfileStore, key: str) -> Any:
    entry = profile_store.get("u1", key)
    return None if entry is None else entry.value


def test_likes_accumulate_across_messages_and_leave_on_no_longer(profile_store: ProfileStore) -> None:
    _say(profile_store, "I love jazz.", "m1")
    _say(profile_store, "我也喜欢爬山。", "m2", session="s2")
    assert _value(profile_store, "likes") == ("jazz", "爬山")
    origins = item_origins(profile_store.history("u1", "likes"))
    assert {i: (e.provenance.session_id, e.provenance.message_id) for i, e in origins.items()} == {
        "jazz": ("s1", "m1"), "爬山": ("s2", "m2")}  # fmt: skip
    assert origins["jazz"].valid_from <= origins["爬山"].valid_from
    applied = _say(profile_store, "I don't like jazz anymore.", "m3")
    assert applied.changed == ("likes",) and _value(profile_store, "likes") == ("爬山",)
    assert _value(profile_store, "dislikes") is None  # taking a like back is not a new dislike
    _say(profile_store, "我不再喜欢爬山了。", "m4")
    assert profile_store.get("u1", "likes") is None
    assert [e.value for e in profile_store.history("u1", "likes")][-1] is None  # the deletion is in the history


def test_allergies_are_never_dropped_silently(profile_store: ProfileStore) -> None:
    _say(profile_store, "I'm allergic to peanuts.", "m1")
    # an LLM answering with a complete list that forgot peanuts
    apply_updates(profile_store, "u1", [ProfileUpdate("allergies", ["penicillin"])], Provenance("extractor", "s1", "m2"))
    assert _value(profile_store, "allergies") == ("peanuts", "penicillin")
    _say(profile_store, "我对芒果过敏", "m3")
    assert _value(profile_store, "allergies") == ("peanuts", "penicillin", "芒果")
    _say(profile_store, "I'm no longer allergic to peanuts.", "m4")
    assert _value(profile_store, "allergies") == ("penicillin", "芒果")


def test_location_supersedes_and_the_old_one_goes_to_history(profile_store: ProfileStore) -> None:
    _say(profile_store, "I live in Leeds.", "m1")
    _say(profile_store, "Just moved to York!", "m2")
    assert [e.value for e in profile_store.history("u1", "location")] == ["Leeds", "York"]
    current = profile_store.get("u1", "location")
    assert current is not None and current.provenance == Provenance("message", "s1", "m2")


def test_diet_labels_supersede_and_eating_meat_again_removes_them(profile_store: ProfileStore) -> None:
    _say(profile_store, "I'm vegetarian and I don't eat pork.", "m1")
    assert _value(profile_store, "diet") == ("vegetarian", "no:pork")
    _say(profile_store, "I'm vegan now.", "m2")
    assert _value(profile_store, "diet") == ("no:pork", "vegan")
    _say(profile_store, "I eat meat again, by the way.", "m3")
    assert _value(profile_store, "diet") == ("no:pork",)


def test_pets_get_their_name_and_leave_only_when_told(profile_store: ProfileStore) -> None:
    _say(profile_store, "I have a dog.", "m1")
    _say(profile_store, "My dog is called Rex.", "m2")
    assert _value(profile_store, "pets") == ("dog: Rex",)
    _say(profile_store, "We also have two cats.", "m3")
    _say(profile_store, "I'm not a cat person, honestly.", "m4")  # says nothing about the cats we have
    assert _value(profile_store, "pets") == ("dog: Rex", "cat")
    _say(profile_store, "Rex died last spring.", "m5")
    assert _value(profile_store, "pets") == ("cat",)


def test_updates_use_canonical_keys_and_reject_bad_removals(profile_store: ProfileStore) -> None:
    assert ProfileUpdate("City", "Paris").key == "location"
    one = ProfileUpdate("likes", "jazz")
    assert one.value == ("jazz",) and one.merge
    assert ProfileUpdate("likes", ["jazz"], operation="remove").value == ("jazz",)
    _say(profile_store, "I love jazz.", "m1")
    for bad in ({"value": {"a": 1}}, {"value": None}, {"value": [1]}, {"value": []}):
        with pytest.raises(InvalidInput):
            ProfileUpdate("likes", operation="remove", **bad)
    with pytest.raises(InvalidInput):
        apply_updates(profile_store, "u1", [ProfileUpdate("likes", ["jazz"], operation="remove"), "x"],  # type: ignore[list-item]
                      Provenance("message", "s1", "m9"))
    assert _value(profile_store, "likes") == ("jazz",)  # the valid removal before the bad item was not applied
