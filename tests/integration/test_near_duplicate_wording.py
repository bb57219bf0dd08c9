"""Write-time near-duplicates on the embedded default (multilingual-e5, SQLite, embedded
Chroma), through ``Memory.remember`` and ``Memory.add``.

multilingual-e5 puts two different events of one shape close together ("went to an
LGBTQ support group yesterday" and "went to an LGBTQ conference two days ago": cosine
~0.97, above the 0.95 near-duplicate threshold). Merging them kept one wording and
moved its source to the other turn: the second event was lost and the first pointed at
a turn that does not say it. A fact now merges into another only in the same wording
(terms overlapping >= 80 %) as well as at the cosine.

Bad input tried: none new here (the threshold's own checks are in test_longterm).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from hmem.memory import Memory
from hmem.types import Message

pytestmark = pytest.mark.slow

SUPPORT_GROUP = "Caroline went to a LGBTQ support group yesterday (7 May 2023)"
CONFERENCE = "Caroline went to an LGBTQ conference two days ago (6 July 2023)"


def test_two_events_of_one_shape_stay_two_items(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "d") as mem:
        first = mem.remember("caro", SUPPORT_GROUP, kind="event", source_message_id="D1:3")
        second = mem.remember("caro", CONFERENCE, kind="event", source_message_id="D7:1")
        assert (first.status, second.status) == ("stored", "stored")
        items = {it.text: it for it in mem.items("caro")}
        assert set(items) == {SUPPORT_GROUP, CONFERENCE}
        # Each keeps the turn that said it.
        assert items[SUPPORT_GROUP].source_message_id == "D1:3"
        assert items[CONFERENCE].source_message_id == "D7:1"


def test_the_same_fact_reworded_slightly_is_still_one_item(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "d") as mem:
        first = mem.remember("caro", "Caroline is allergic to peanuts.", importance=0.4)
        again = mem.remember("caro", "caroline is ALLERGIC to peanuts!!", importance=0.9)
        reworded = mem.remember("caro", "Caroline's allergic to peanuts", importance=0.7)
        assert first.status == "stored" and again.status == "skipped"
        assert reworded.status == "updated" and reworded.item.id == first.item.id
        assert reworded.similarity is not None and reworded.similarity >= 0.95
        assert [it.text for it in mem.items("caro")] == ["Caroline is allergic to peanuts."]


def test_facts_drawn_from_two_turns_keep_their_own_sources(tmp_path: Path) -> None:
    # The offline extractor writes a dated event per turn; the two events share a shape.
    with Memory.open(tmp_path / "d") as mem:
        mem.add("caro", "s1", [Message(role="user", content="I went to a LGBTQ support group yesterday.", id="m1",
                                       created_at=datetime(2023, 5, 8, 13, tzinfo=UTC))])
        mem.add("caro", "s7", [Message(role="user", content="I went to an LGBTQ conference two days ago.", id="m7",
                                       created_at=datetime(2023, 7, 8, 13, tzinfo=UTC))])
        mem.flush()
        facts = [it for it in mem.items("caro") if it.kind != "turn"]
        assert facts, "the offline extractor wrote no fact"
        for fact in facts:
            said = {"m1": "support group", "m7": "conference"}[fact.source_message_id or ""]
            assert said in fact.text, f"{fact.text!r} points at the turn that did not say it"
