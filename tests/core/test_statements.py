"""Atomic facts: claims of a turn, the speaker named, relative dates resolved, profile
updates as statements with claim keys, and the supersession plan. Pure functions."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from hmem.errors import ConfigError, InvalidInput
from hmem.longterm.dates import annotate_dates
from hmem.longterm.facts import ExtractionResult, FactCandidate, TurnContext, fact_entries, resolve_fact
from hmem.longterm.supersede import CLAIM_KEY, SUPERSEDED_BY, SUPERSEDES, plan_supersession
from hmem.longterm.types import LongTermConfig
from hmem.profile.extract import OfflineProfileExtractor, ProfileUpdate
from hmem.profile.statements import covered, third_person, update_statements, user_claims
from hmem.types import MemoryItem, Message

MAY_8 = date(2023, 5, 8)


@pytest.mark.parametrize(("said", "named"), [
    ("I am vegetarian now", "Maya is vegetarian now"),
    ("I'm allergic to peanuts", "Maya is allergic to peanuts"),
    ("I've been running for years", "Maya has been running for years"),
    ("I love hiking and my dog loves it too", "Maya loves hiking and Maya's dog loves it too"),
    ("I usually go swimming on Fridays", "Maya usually goes swimming on Fridays"),
    ("I don't eat pork", "Maya doesn't eat pork"),
    ("I no longer like jazz", "Maya no longer likes jazz"),
    ("I moved to Leeds in 2021", "Maya moved to Leeds in 2021"),
    ("I can speak Polish", "Maya can speak Polish"),
    ("I watch a lot of anime", "Maya watches a lot of anime"),
    ("I study law", "Maya studies law"),
    ("My wife Priya and I play tennis", "Maya's wife Priya and Maya play tennis"),
    ("we just moved to Lisbon", "Maya and others just moved to Lisbon"),
    ("我养了一只猫", "Maya养了一只猫"),
    ("我们上周去了杭州", "Maya等人上周去了杭州"),
    ("在阿里做前端", "Maya在阿里做前端"),  # Chinese drops the subject: named in front
    ("我的自我介绍写好了", "Maya的自我介绍写好了"),  # 自我 is not "I"
])
def test_third_person_names_the_speaker(said: str, named: str) -> None:
    assert third_person(said, "Maya") == named


def test_an_unknown_speaker_is_the_user() -> None:
    assert third_person("I live in Oslo") == "The user lives in Oslo"
    assert third_person("我住在上海") == "用户住在上海"


def test_claims_drop_questions_and_role_play_but_keep_plans_and_the_past() -> None:
    claims = [c.bare for c in user_claims(
        "I used to live in Berlin. I'm thinking about getting a dog. Can you find me a vet? "
        "Pretend you are a pirate.")]
    assert claims == ["I used to live in Berlin", "I am thinking about getting a dog"]


def test_relative_dates_are_resolved_against_the_day_said() -> None:
    assert annotate_dates("I went there yesterday and will go again next month", MAY_8) == (
        "I went there yesterday (7 May 2023) and will go again next month (June 2023)")
    assert annotate_dates("我上周去了杭州", MAY_8) == "我上周 (week of 1 May 2023)去了杭州"
    assert annotate_dates("on 3 May 2023 I left", MAY_8) == "on 3 May 2023 I left"  # already absolute
    assert resolve_fact("I went hiking last Saturday", "Maya", MAY_8) == "Maya went hiking last Saturday (6 May 2023)"
    # An LLM's fact already names its subject: no "Maya:" in front of it.
    assert resolve_fact("The user went hiking", "Maya", None, name_bare=False) == "The user went hiking"


def _statements(text: str, subject: str | None = "Maya") -> list[tuple[str, str]]:
    return [(s.text, s.claim_key) for u in OfflineProfileExtractor().extract(text)
            for s in update_statements(u, subject, MAY_8, zh=any("\u4e00" <= ch <= "\u9fff" for ch in text))]


def test_profile_updates_become_dated_statements_with_claim_keys() -> None:
    assert _statements("I'm Maya, I work as a UX designer in Manchester") == [
        ("The user's name is Maya (as of 8 May 2023).", "profile:user:name"),
        ("Maya works as a UX designer (as of 8 May 2023).", "profile:user:occupation"),
        ("Maya lives in Manchester (as of 8 May 2023).", "profile:user:location"),
    ]
    # A list key has one claim per item: taking it back supersedes exactly that item.
    assert _statements("I love jazz") == [("Maya likes jazz (as of 8 May 2023).", "profile:user:likes=jazz")]
    assert _statements("I no longer like jazz") == [
        ("Maya no longer likes jazz (as of 8 May 2023).", "profile:user:likes=jazz")]
    assert _statements("我对花生过敏", None) == [("用户对花生过敏（2023年5月8日时）", "profile:user:allergies=花生")]


def test_a_delete_update_says_nothing_and_speakers_keep_their_claims_apart() -> None:
    assert update_statements(ProfileUpdate("birthday", None, operation="delete"), "Maya", MAY_8) == []
    a, = update_statements(ProfileUpdate("location", "Rome"), "Caroline", MAY_8, speaker_key="caroline")
    assert a.claim_key == "profile:caroline:location" and a.kind == "profile"


def test_a_claim_its_statements_already_say_is_covered() -> None:
    said = ["Maya's diet is vegetarian (as of 8 May 2023).", "Maya does not eat pork (as of 8 May 2023)."]
    assert covered("I am vegetarian now", said) and covered("I don't eat pork", said)
    assert not covered("I eat pork again", ["Maya does not eat pork (as of 8 May 2023)."])
    assert not covered("I work at a fintech in Manchester", ["Maya lives in Manchester."])


def test_fact_entries_put_statements_first_and_drop_what_they_repeat() -> None:
    turn = Message(role="user", content="I'm vegetarian now. I went hiking yesterday.", id="m1",
                   created_at=datetime(2023, 5, 8, 12, tzinfo=UTC))
    stmts = tuple(s for u in OfflineProfileExtractor().extract(turn.text)
                  for s in update_statements(u, "Maya", MAY_8))
    extracted = ExtractionResult((FactCandidate("preference", "I am vegetarian now", 0.6, "m1"),
                                  FactCandidate("event", "I went hiking yesterday", 0.6, "m1")), "offline")
    entries = fact_entries(extracted, [turn], {"m1": TurnContext("Maya", "user", stmts)}, "s1")
    assert [(e["kind"], e["text"]) for e in entries] == [
        ("profile", "Maya's diet is vegetarian (as of 8 May 2023)."),
        ("event", "Maya went hiking yesterday (7 May 2023)"),
    ]
    assert entries[0]["metadata"] == {CLAIM_KEY: "profile:user:diet=vegetarian", "profile_key": "diet"}
    assert all(e["source_message_id"] == "m1" and e["session_id"] == "s1" and e["created_at"] == turn.created_at
               for e in entries)


def test_with_the_turn_archived_only_claims_that_add_a_date_are_stored() -> None:
    turn = Message(role="user", content="I love hiking. I went hiking yesterday.", id="m1",
                   created_at=datetime(2023, 5, 8, 12, tzinfo=UTC))
    claims = ExtractionResult((FactCandidate("preference", "I love hiking", 0.6, "m1"),
                               FactCandidate("event", "I went hiking yesterday", 0.6, "m1")), "offline")
    ctx = {"m1": TurnContext("Maya")}
    assert [e["text"] for e in fact_entries(claims, [turn], ctx, "s1", turns_archived=True)] == [
        "Maya went hiking yesterday (7 May 2023)"]  # the other only repeats the archived turn
    assert len(fact_entries(claims, [turn], ctx, "s1", turns_archived=False)) == 2  # no turn kept: every claim
    # An LLM's facts are its own reading of the turn: always kept.
    llm = ExtractionResult((FactCandidate("preference", "Maya loves hiking.", 0.6, "m1"),), "llm")
    assert [e["text"] for e in fact_entries(llm, [turn], ctx, "s1", turns_archived=True)] == ["Maya loves hiking."]


def test_plan_supersession_links_versions_and_leaves_the_rest() -> None:
    t = datetime(2024, 1, 1, tzinfo=UTC)
    old = MemoryItem("a", "u", "Maya lives in Leeds.", "profile", metadata={CLAIM_KEY: "loc"})
    other = MemoryItem("b", "u", "Maya works as a nurse.", "profile", metadata={CLAIM_KEY: "job"})
    plain = MemoryItem("c", "u", "Maya lives in Leeds.", "fact")
    new = MemoryItem("d", "u", "Maya lives in York.", "profile", metadata={CLAIM_KEY: "loc"})
    news, olds = plan_supersession([new, plain], [old, other], t)
    assert [(n.id, n.metadata.get(SUPERSEDES)) for n in news] == [("d", "a"), ("c", None)]
    assert [(o.id, o.metadata[SUPERSEDED_BY]) for o in olds] == [("a", "d")]
    # Another kind is another claim, and an item already superseded is not current.
    done = MemoryItem("e", "u", "x", "profile", metadata={CLAIM_KEY: "loc", SUPERSEDED_BY: "a"})
    fact = MemoryItem("f", "u", "x", "fact", metadata={CLAIM_KEY: "loc"})
    assert plan_supersession([new], [done, fact], t) == ([new], [])


@pytest.mark.parametrize("weight", [-0.1, 1.5, True, "0.5", float("nan")])
def test_superseded_weight_outside_zero_one_is_a_config_error(weight: object) -> None:
    with pytest.raises(ConfigError, match="superseded_weight"):
        LongTermConfig(superseded_weight=weight)  # type: ignore[arg-type]


def test_entries_may_not_write_the_store_s_own_links() -> None:
    from hmem.longterm._args import check_entry

    with pytest.raises(InvalidInput, match="written by the store"):
        check_entry({"text": "x", "metadata": {SUPERSEDES: "a"}})
