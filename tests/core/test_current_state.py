"""The ``current`` stage: a question about how things stand now is answered by the newest
of what was said on it, so the head tilts toward newer items (``asks_about_now`` and
``favour_newer`` in :mod:`hmem.longterm._rank`, ``CurrentState`` in
:mod:`hmem.longterm.stages`).

Bad inputs tried: a negative weight, one above 10, NaN, infinity, a string, a bool and
None in ``LongTermConfig``; "lots", "-1", "11" and "nan" as the setting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.longterm._rank import Scored, asks_about_now, favour_newer
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from tests.core.test_time_boost import SameVector

T0 = datetime(2024, 1, 10, 9, tzinfo=UTC)


@pytest.mark.parametrize(("question", "now"), [
    ("What espresso machine am I using these days?", True),
    ("Which organisation do I work for at the moment?", True),
    ("Where are we living now?", True),
    ("What was my latest lipid reading?", True),
    ("What are my current dates for the Japan trip?", True),
    ("Do I still eat seafood, or not anymore?", True),
    ("我现在住在杭州哪一块？", True),
    ("我目前每天服用的降压药叫什么？", True),
    ("我而家用緊邊部手機？", True),
    ("What do I know about snowboarding?", False),  # "now" inside a word is not "now"
    ("Where did Caroline move from?", False),
    ("When is the concert?", False),
    ("", False),
])
def test_a_question_about_how_things_stand_now_is_told_by_its_words(question: str, now: bool) -> None:
    assert asks_about_now(question) is now


def test_newer_hits_gain_by_where_they_were_said_between_the_oldest_and_the_newest() -> None:
    scored: Scored = {"old": (1.0, {"session": 1.1}), "mid": (0.95, {}), "new": (0.9, {})}
    said = {"old": T0, "mid": T0 + timedelta(days=5), "new": T0 + timedelta(days=10)}
    order = favour_newer(["old", "mid", "new"], scored, said, 0.2)
    assert order == ["new", "mid", "old"]
    assert scored["new"][0] == pytest.approx(1.08) and scored["new"][1] == {"current": 1.2}
    assert scored["mid"][0] == pytest.approx(1.045) and scored["mid"][1] == {"current": 1.1}
    assert scored["old"] == (1.0, {"session": 1.1})  # the oldest is left as it was


def test_a_pool_said_at_one_time_or_a_zero_weight_is_left_alone() -> None:
    scored: Scored = {"a": (1.0, {}), "b": (0.5, {})}
    assert favour_newer(["a", "b"], scored, {"a": T0, "b": T0}, 0.2) == ["a", "b"]
    assert favour_newer(["a", "b"], scored, {}, 0.2) == ["a", "b"]
    assert favour_newer(["a", "b"], scored, {"a": T0, "b": T0 + timedelta(days=1)}, 0.0) == ["a", "b"]
    assert scored == {"a": (1.0, {}), "b": (0.5, {})}
    assert "current" in [s.name for s in LongTermConfig().stages]
    assert "current" not in [s.name for s in LongTermConfig(current_weight=0.0).stages]


@pytest.mark.parametrize("bad", [-0.1, 10.5, float("nan"), float("inf"), "0.2", True, None])
def test_a_bad_current_weight_is_refused_naming_the_field(bad: object) -> None:
    with pytest.raises(ConfigError, match="current_weight"):
        LongTermConfig(current_weight=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["lots", "-1", "11", "nan"])
def test_a_bad_current_weight_setting_is_refused_before_any_store_opens(bad: str) -> None:
    with pytest.raises(ConfigError, match="current_weight"):
        Settings.from_env({}, current_weight=bad)
    assert Settings.from_env({}, current_weight="0").current_weight == 0.0


def _store(weight: float) -> LongTermStore:
    # One vector for every text: BM25 alone ranks. The old statement repeats the
    # question's words more than the update does, so it leads unless the stage moves it.
    store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), SameVector(),
                          config=LongTermConfig(current_weight=weight, session_weight=0.0, question_weight=0.0,
                                                speaker_weight=0.0))
    store.archive_turns("ana", "s1", [
        {"role": "user", "content": "Using a Pixel 6 phone model, and using it for work.",
         "id": "old", "created_at": T0.isoformat()},
    ])
    store.archive_turns("ana", "s2", [
        {"role": "user", "content": "Using an iPhone 15 phone model from today on.", "id": "new",
         "created_at": (T0 + timedelta(days=90)).isoformat()},
    ])
    for n, said in enumerate(["Lunch was soup again.", "Called mum on the phone.", "We booked the cabin."]):
        store.archive_turns("ana", f"f{n}", [{"role": "user", "content": said, "id": f"f{n}",
                                              "created_at": (T0 + timedelta(days=n)).isoformat()}])
    return store


def test_asked_how_things_stand_now_the_newer_statement_ranks_first() -> None:
    hits = _store(0.2).recall("ana", "Which phone model am I using now?", 2)
    assert [h.item.source_message_id for h in hits] == ["new", "old"]
    assert hits[0].boosts.get("current") == pytest.approx(1.2)


def test_without_the_stage_or_without_now_in_the_question_the_better_match_keeps_its_place() -> None:
    off = _store(0.0).recall("ana", "Which phone model am I using now?", 2)
    assert [h.item.source_message_id for h in off] == ["old", "new"]
    plain = _store(0.2).recall("ana", "Which phone model am I using?", 2)
    assert [h.item.source_message_id for h in plain] == ["old", "new"]
    assert all("current" not in h.boosts for h in plain)
