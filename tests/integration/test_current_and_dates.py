"""Two things a user asks months later, end to end on the embedded default (SQLite,
embedded Chroma, the packaged multilingual-e5 model, sentence keys) through ``Memory.add``,
``Memory.recall`` and ``Memory.context``:

- "Who do I work for now?": the ``current`` stage puts the newer statement first (the
  older one, said at length, matches the question's words better); ``current_weight=0``
  turns it off and the older statement leads.
- "When did I hike Mount Tam?": the prompt says the date, not only "last Saturday" under
  the session's date (the template's ``resolve_dates``).

Bad input tried: a ``current_weight`` above 10, below 0 and not a number (refused before
the data folder is created)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.types import Message

pytestmark = pytest.mark.slow

OLD = "I work for Northwind Analytics as a data analyst; I have worked for Northwind for six years."
NEW = "I accepted the offer from Globex, I work as product manager there from Monday."


def _said(mem: Memory, session: str, when: datetime, user: str, reply: str) -> None:
    mem.add("ana", session, [Message(role="user", content=user, created_at=when),
                             Message(role="assistant", content=reply, created_at=when)])


def _fill(mem: Memory) -> None:
    _said(mem, "s1", datetime(2024, 1, 8, 9, tzinfo=UTC), OLD, "Dashboards are a good base for analytics work.")
    _said(mem, "s2", datetime(2024, 3, 4, 9, tzinfo=UTC), "the train to Leeds was late again",
          "Sorry to hear that, delays on that line are common.")
    _said(mem, "s3", datetime(2024, 6, 3, 9, tzinfo=UTC), NEW, "Congratulations on the new role!")
    mem.flush()


def test_asked_who_they_work_for_now_the_user_finds_the_newer_statement_first(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "on") as mem:
        _fill(mem)
        hits = [h for h in mem.recall("ana", "Who do I work for now?", 6) if h.item.metadata.get("role") == "user"]
        assert [h.item.text for h in hits[:2]] == [NEW, OLD]
        assert hits[0].boosts.get("current", 1.0) > hits[1].boosts.get("current", 1.0)


def test_with_the_stage_off_the_longer_older_statement_leads(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "off", current_weight=0) as mem:
        _fill(mem)
        hits = [h for h in mem.recall("ana", "Who do I work for now?", 6) if h.item.metadata.get("role") == "user"]
        assert [h.item.text for h in hits[:2]] == [OLD, NEW]
        assert all("current" not in h.boosts for h in hits)


def test_the_prompt_says_the_date_a_turn_called_last_saturday(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "dates") as mem:
        _said(mem, "s1", datetime(2023, 5, 8, 18, tzinfo=UTC), "We hiked Mount Tam last Saturday, the fog was thick.",
              "Sounds like a great hike!")
        mem.flush()
        ctx = mem.context("ana", "s9", query="When did I hike Mount Tam?")
        memory = str(ctx.messages[0]["content"])
        assert "We hiked Mount Tam last Saturday (6 May 2023), the fog was thick." in memory
        kept = [i for i in ctx.report.items if i.tier == "recalled" and i.kept]
        assert kept and ctx.tokens <= ctx.report.budget


@pytest.mark.parametrize("bad", [10.5, -0.2, "much"])
def test_a_bad_current_weight_is_refused_before_the_folder_is_touched(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ConfigError, match="current_weight"):
        Memory.open(tmp_path / "bad", current_weight=bad)
    assert not (tmp_path / "bad").exists()
