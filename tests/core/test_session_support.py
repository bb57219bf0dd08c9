"""Session support (issue #12 §3-4): a hit gains part of the score of the best other hit
of its session, so the turn that answers a question, sharing no word with it, rises
beside the turn that does."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.errors import ConfigError
from hmem.longterm._rank import SESSION_SPAN, session_support
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from tests.core.test_time_boost import SameVector

T0 = datetime(2024, 5, 1, 20, 0)


def test_each_hit_gains_a_share_of_the_best_other_hit_of_its_session() -> None:
    scored: dict[str, tuple[float, dict[str, float]]] = {
        "q": (1.0, {}), "a": (0.4, {"time": 1.2}), "x": (0.5, {}), "y": (0.45, {}), "lone": (0.6, {}), "zero": (0.0, {}),
    }
    sessions = {"q": "s1", "a": "s1", "zero": "s1", "x": "s2", "y": "s2", "lone": "s3"}
    places = {d: (s, T0) for d, s in sessions.items()}
    order = session_support(["q", "lone", "x", "y", "a", "zero"], scored, places, 0.5)
    assert scored["q"][0] == pytest.approx(1.0 + 0.5 * 0.4)  # the best gains from the second best
    assert scored["a"][0] == pytest.approx(0.4 + 0.5 * 1.0)
    assert scored["a"][1] == {"time": 1.2, "session": pytest.approx(0.9 / 0.4)}  # earlier boosts kept
    assert scored["x"][0] == pytest.approx(0.5 + 0.5 * 0.45) and scored["y"][0] == pytest.approx(0.45 + 0.5 * 0.5)
    assert scored["lone"] == (0.6, {})  # alone in its session
    assert scored["zero"] == (0.0, {})  # no evidence of its own: stays at 0
    assert order == ["q", "a", "x", "y", "lone", "zero"]


def test_a_tie_for_the_best_counts_the_other_one_and_items_without_a_session_gain_nothing() -> None:
    scored: dict[str, tuple[float, dict[str, float]]] = {"a": (0.5, {}), "b": (0.5, {}), "c": (0.9, {})}
    session_support(["c", "a", "b"], scored, {"a": ("s", T0), "b": ("s", T0), "c": None}, 1.0)
    assert scored["a"][0] == scored["b"][0] == pytest.approx(1.0)
    assert scored["c"] == (0.9, {})


def test_only_hits_said_within_the_span_support_each_other() -> None:
    # One session kept for months (the proxy's "default"): what was said an evening apart
    # is not one topic.
    scored: dict[str, tuple[float, dict[str, float]]] = {"q": (1.0, {}), "near": (0.4, {}), "later": (0.4, {})}
    places = {"q": ("default", T0), "near": ("default", T0 + SESSION_SPAN),
              "later": ("default", T0 + SESSION_SPAN + timedelta(seconds=1))}
    session_support(["q", "near", "later"], scored, places, 0.5)
    assert scored["near"][0] == pytest.approx(0.4 + 0.5 * 1.0)
    assert scored["later"][0] == pytest.approx(0.4 + 0.5 * 0.4)  # only "near" is within its span


def test_in_one_sitting_the_order_is_unchanged() -> None:
    # Every hit in one session and hour: each gains from the best, the best from the
    # second, so the order is the same (only the scores move closer).
    scored: dict[str, tuple[float, dict[str, float]]] = {
        d: (v, {}) for d, v in zip("abcde", (0.9, 0.7, 0.5, 0.2, 0.1), strict=True)}
    places = {d: ("s", T0 + timedelta(minutes=i)) for i, d in enumerate("edcba")}
    assert session_support(list("abcde"), scored, places, 0.3) == list("abcde")


def _store(weight: float) -> LongTermStore:
    store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), SameVector(),
                          # Questions not scored down: the expected scores below are session support's alone.
                          config=LongTermConfig(session_weight=weight, feedback_rounds=1, question_weight=0.0))
    # The answer ("sunset over the lake") shares no word with the question, nor does the
    # turn before it (the lexical key holds the previous turn); the one before that does.
    # Another session mentions painting once, in passing.
    store.archive_turns("mel", "s1", [
        {"role": "user", "name": "Caroline", "content": "What did you paint last week?", "id": "m0"},
        {"role": "assistant", "name": "Melanie", "content": "Guess!", "id": "m1"},
        {"role": "user", "name": "Caroline", "content": "No idea, tell me.", "id": "m1b"},
        {"role": "assistant", "name": "Melanie", "content": "A sunset. The kids helped me mix the orange.", "id": "m2"},
    ])
    store.archive_turns("mel", "s2", [
        {"role": "user", "name": "Caroline", "content": "I bought groceries and some paint for the fence.", "id": "m3"},
        {"role": "assistant", "name": "Melanie", "content": "The kids loved the boat trip on the lake.", "id": "m4"},
        {"role": "user", "name": "Caroline", "content": "We should go again soon.", "id": "m5"},
    ])
    return store


def test_recall_adds_the_share_of_the_best_session_mate_to_each_hit_only_when_on() -> None:
    question = "What did she paint with the kids?"
    off = _store(0.0).recall("mel", question, k=10)
    on = _store(0.3).recall("mel", question, k=10)
    assert all("session" not in h.boosts for h in off)
    before = {h.item.id: (h.score, h.item.session_id) for h in off}
    expected = {}
    for item_id, (score, session) in before.items():
        mates = [v for other, (v, s) in before.items() if s == session and other != item_id]
        expected[item_id] = score + 0.3 * max(mates) if score > 0 and mates and max(mates) > 0 else score
    assert {h.item.id: h.score for h in on} == pytest.approx(expected)
    assert [h.item.id for h in on] == sorted(expected, key=lambda d: (-expected[d], d))
    assert any(h.boosts.get("session", 1.0) > 1.0 for h in on)
    for h in on:  # the factor recorded is the one applied
        assert h.score == pytest.approx(before[h.item.id][0] * h.boosts.get("session", 1.0))


@pytest.mark.parametrize("bad", [-0.1, 10.5, "0.3", True, None, float("nan")])
def test_a_bad_session_weight_is_refused_naming_the_field(bad: object) -> None:
    # Tried: negative, above the cap, a string, a bool, None, NaN.
    with pytest.raises(ConfigError, match="session_weight"):
        LongTermConfig(session_weight=bad)  # type: ignore[arg-type]


def test_the_setting_reaches_recall_and_bad_values_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    from hmem.memory import Memory

    for weight, boosted in ((0.3, True), (0.0, False)):
        with Memory.open(tmp_path / f"w{weight}", vectors="memory", embedder=SameVector(),
                         session_weight=weight) as mem:
            mem.add("mel", "s1", [{"role": "user", "name": "Caroline", "content": "What did you paint last week?"},
                                  {"role": "assistant", "name": "Melanie", "content": "A sunset over the lake."}])
            hits = mem.recall("mel", "What did she paint?", k=5)
            assert any("session" in h.boosts for h in hits) is boosted
    # Tried: negative, above the cap, NaN, a word (session_weight through Memory.open's settings).
    for bad in (-1.0, 11.0, float("nan"), "high"):
        with pytest.raises(ConfigError, match=r"^session_weight="):
            Memory.open(tmp_path / "bad", vectors="memory", embedder=SameVector(), session_weight=bad)
        assert not (tmp_path / "bad").exists()


def test_the_settings_file_sets_it(tmp_path: Path) -> None:
    # A tuning setting: read from the HMEM_CONFIG file (or a keyword), refused as a variable.
    from hmem.config import Settings

    config = tmp_path / "hmem.toml"
    config.write_text("[hmem]\nsession_weight = 0\n", encoding="utf-8")
    assert Settings.from_env({"HMEM_CONFIG": str(config)}).session_weight == 0.0
    assert Settings.from_env({}, session_weight="0").session_weight == 0.0
    config.write_text("[hmem]\nsession_weight = -2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^session_weight=-2"):
        Settings.from_env({"HMEM_CONFIG": str(config)})
    with pytest.raises(ConfigError, match="HMEM_SESSION_WEIGHT: not an environment setting"):
        Settings.from_env({"HMEM_SESSION_WEIGHT": "0"})


def test_each_path_gives_the_plain_definition() -> None:
    # Random pools, one sitting (the two-best shortcut) and spread over hours (each hit's
    # window scanned), against the definition: best other hit of the session within the span.
    import random

    rng = random.Random(5)
    for _ in range(300):
        n = rng.randint(1, 8)
        values = [round(rng.choice([0.0, rng.random(), 0.5]), 3) for _ in range(n)]
        step = rng.choice([timedelta(minutes=1), timedelta(minutes=25)])  # 25 min: windows of ~5 hits
        ids = [f"d{i}" for i in range(n)]
        scored: dict[str, tuple[float, dict[str, float]]] = {d: (v, {}) for d, v in zip(ids, values, strict=True)}
        session_support(ids, scored, {d: ("s", T0 + i * step) for i, d in enumerate(ids)}, 0.3)
        for i, own in enumerate(values):
            mates = [v for j, v in enumerate(values) if j != i and abs(i - j) * step <= SESSION_SPAN]
            best = max(mates, default=0.0)
            assert scored[ids[i]][0] == pytest.approx(own + 0.3 * best if own > 0 and best > 0 else own)
