"""A date the question names boosts what was said in that period or about it (issue #12 §3):
recency stays out of it, so old evidence is never buried."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.errors import ConfigError
from hmem.longterm._rank import boosted_scores
from hmem.longterm.dates import mentions_period, query_period
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from hmem.types import MemoryItem

JULY = (date(2023, 7, 1), date(2023, 7, 31))


@pytest.mark.parametrize(
    ("query", "today", "expected"),
    [
        ("What did Mel paint in July 2023?", date(2024, 1, 5), JULY),
        ("Who did Maria have dinner with on May 3, 2023?", date(2024, 1, 5), (date(2023, 5, 3), date(2023, 5, 3))),
        ("What did I do last week?", date(2023, 8, 9), (date(2023, 7, 31), date(2023, 8, 6))),
        ("我2023年7月去了哪里？", date(2024, 1, 5), JULY),
        ("What did Mel do in May 2023 and in July 2023?", date(2024, 1, 5), (date(2023, 5, 1), date(2023, 7, 31))),
        ("What does Mel like to paint?", date(2024, 1, 5), None),
    ],
)
def test_the_period_a_question_names(query: str, today: date, expected: tuple[date, date] | None) -> None:
    assert query_period(query, today) == expected


@pytest.mark.parametrize(
    ("text", "said_on", "inside"),
    [
        ("I went camping.", date(2023, 7, 31), True),  # said on the period's last day
        ("I went camping.", date(2023, 8, 1), False),  # the day after, and about no date
        ("Last week I went camping.", date(2023, 8, 3), True),  # about the week of 24 July
        ("Next week I go camping.", date(2023, 6, 28), True),  # a plan for early July
        ("Two months ago I went camping.", date(2023, 8, 3), False),  # June
        ("上周我去露营了。", date(2023, 8, 3), True),
    ],
)
def test_a_turn_is_in_the_period_when_said_in_it_or_about_it(text: str, said_on: date, inside: bool) -> None:
    assert mentions_period(text, said_on, JULY) is inside


def _item(item_id: str, text: str, day: date, importance: float = 0.5) -> MemoryItem:
    return MemoryItem(item_id, "u", text, created_at=datetime(day.year, day.month, day.day, 12, tzinfo=UTC),
                      importance=importance)


def test_the_boost_multiplies_only_items_in_the_period_and_combines_with_importance() -> None:
    items = {"in": _item("in", "camping", date(2023, 7, 20), 1.0), "out": _item("out", "camping", date(2023, 9, 2))}
    now = datetime(2024, 1, 1, tzinfo=UTC)
    scored = boosted_scores({"in": 0.5, "out": 0.5}, items, now, None, 0.5, period=JULY, time_weight=0.4)
    assert scored["in"][1]["time"] == pytest.approx(1.4) and "time" not in scored["out"][1]
    assert scored["in"][0] == pytest.approx(0.5 * 1.4 * scored["in"][1]["importance"])
    # off: no period, or a zero weight
    for period, weight in ((None, 0.4), (JULY, 0.0)):
        plain = boosted_scores({"in": 0.5}, items, now, None, 0.0, period=period, time_weight=weight)
        assert plain == {"in": (0.5, {})}


class SameVector:
    """Every text the same vector: the dense side cannot tell items apart, so the test sees
    the lexical ranking and the boosts alone."""

    model_name, dimension, symmetric = "same-vector", 3, True

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)


def _store(time_weight: float) -> LongTermStore:
    store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), SameVector(),
                          config=LongTermConfig(time_weight=time_weight, feedback_rounds=1,
                                                near_duplicate_threshold=None))
    start = datetime(2023, 5, 1, 12, tzinfo=UTC)
    store.remember_many("u", [
        {"text": f"We went camping by the lake with the kids, trip {name}",
         "created_at": (start + timedelta(days=i * 30)).isoformat()}
        for i, name in enumerate(("one", "two", "three", "four", "five"))  # 1 May, 31 May, 30 June, 30 July, 29 Aug
    ])
    return store


def test_recall_puts_the_turn_of_the_named_month_first_only_when_the_boost_is_on() -> None:
    question = "Where did we go camping in July 2023?"
    boosted = _store(0.5).recall("u", question, k=5)
    assert boosted[0].item.created_at.date() == date(2023, 7, 30) and boosted[0].boosts == {"time": 1.5}
    assert all("time" not in h.boosts for h in boosted[1:])
    plain = _store(0.0).recall("u", question, k=5)
    assert all(h.boosts == {} for h in plain)
    # nothing is filtered out: the other months are still recalled, just below
    assert sorted(h.item.created_at for h in boosted) == sorted(h.item.created_at for h in plain) and len(boosted) == 5


@pytest.mark.parametrize("bad", [-0.1, 10.5, "0.3", True, None, float("nan")])
def test_a_bad_time_weight_is_refused_naming_the_field(bad: object) -> None:
    # Tried: negative, above the cap, a string, a bool, None, NaN.
    with pytest.raises(ConfigError, match="time_weight"):
        LongTermConfig(time_weight=bad)  # type: ignore[arg-type]


def test_the_setting_reaches_recall_and_bad_values_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    from hmem.memory import Memory

    question = "Where did we go camping in July 2023?"
    july_turn = "We went camping by the lake with the kids, trip four"
    for weight, boosted in ((0.5, True), (0.0, False)):
        with Memory.open(tmp_path / f"w{weight}", vectors="memory", embedder=SameVector(), time_weight=weight) as mem:
            mem.remember("u", july_turn, created_at="2023-07-30T12:00:00+00:00")
            mem.remember("u", "We went camping by the lake with the kids, trip one", created_at="2023-05-01T12:00:00+00:00")
            top = mem.recall("u", question, k=2)[0]
            assert (top.boosts.get("time") == 1.5) is boosted
    # Tried: negative, above the cap, NaN, a word (time_weight through Memory.open's settings).
    for bad in (-1.0, 11.0, float("nan"), "high"):
        with pytest.raises(ConfigError, match=r"^time_weight="):
            Memory.open(tmp_path / "bad", vectors="memory", embedder=SameVector(), time_weight=bad)
        assert not (tmp_path / "bad").exists()  # refused before any store was opened
