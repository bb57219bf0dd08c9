"""The ``speaker`` stage: a question about the one asking is answered by what the user
said, so the assistant's turns score down (``asks_about_the_user``/``demote_speaker`` in
:mod:`hmem.longterm._rank`, ``SpeakerPrior`` in :mod:`hmem.longterm.stages`)."""

from __future__ import annotations

import pytest

from hmem.backends.memory.items import MemoryItemStore
from hmem.backends.memory.lexical import MemoryLexicalIndex
from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.config import Settings
from hmem.errors import ConfigError
from hmem.longterm._rank import Scored, answered_by_the_user, asks_about_the_user, asks_for_advice, demote_speaker
from hmem.longterm.store import LongTermStore
from hmem.longterm.types import LongTermConfig
from tests.core.test_time_boost import SameVector


@pytest.mark.parametrize(("question", "about_user"), [
    ("Which roaster did I buy my beans from?", True),
    ("What's my sister's name?", True),
    ("Remind me when the dentist appointment is.", True),
    ("I'm cooking for Ana tonight: which grain should I avoid?", True),
    ("我妹妹叫什么名字？", True),
    ("我搬到哪个城市了？", True),
    ("What did I tell you about my diet?", False),  # addresses the assistant: left alone
    ("Which tune did you set for week 3?", False),
    ("你给我推荐了哪本书？", False),
    ("您帮我算的预算是多少？", False),
    ("When did we first talk about the trip?", False),  # "we" may be the user and the assistant
    ("我们什么时候去的？", False),
    ("What does Caroline paint?", False),  # LoCoMo's third-person questions
    ("Is Iris coming to Mike's party?", False),  # "I" inside a name is not the asker
    ("", False),
])
def test_a_question_about_the_asker_is_first_person_and_does_not_address_the_assistant(
    question: str, about_user: bool,
) -> None:
    assert asks_about_the_user(question) is about_user


@pytest.mark.parametrize(("question", "advice"), [
    ("Which tool would you recommend for drilling my Japanese vocabulary?", True),
    ("Can you suggest a few tracks for me to pick up next?", True),
    ("I want a bookshelf for the living room: what would you suggest?", True),
    ("Any ideas for my sister's birthday?", True),
    ("最近想找点连续剧看，你会推荐什么样的？", True),
    ("想喺我嘅訓練入面加多啲心肺運動，你有咩建議？", True),
    ("What did you recommend for my knee last spring?", False),  # asks back about advice given
    ("你当时建议温度和时长怎么设？", False),
    ("Which app had you suggested for my practice log?", False),
    ("What advice does Caroline give for getting started with adoption?", False),  # third person: LoCoMo
    ("Where does James get his ideas from?", False),
    ("给美琪推荐菜的时候要注意什么？", False),  # no one addressed or asking: a question about someone
    ("What time is it?", False),
    ("", False),
])
def test_a_request_for_advice_for_the_asker_is_told_from_a_question_about_advice_given(
    question: str, advice: bool,
) -> None:
    assert asks_for_advice(question) is advice
    assert answered_by_the_user(question) is (advice or asks_about_the_user(question))


def test_the_assistants_turns_score_down_by_the_weight_and_it_is_recorded() -> None:
    scored: Scored = {"reply": (1.0, {"session": 1.2}), "said": (0.8, {}), "fact": (0.75, {}), "other": (0.5, {})}
    roles = {"reply": "assistant", "said": "user", "fact": None}
    order = demote_speaker(["reply", "said", "fact", "other"], scored, roles, 0.3)
    assert order == ["said", "fact", "reply", "other"]
    assert scored["reply"][0] == pytest.approx(0.7) and scored["reply"][1] == {"session": 1.2, "speaker": 0.7}
    assert scored["said"] == (0.8, {}) and scored["fact"] == (0.75, {}) and scored["other"] == (0.5, {})


def test_a_zero_weight_turns_the_stage_off() -> None:
    assert "speaker" in [s.name for s in LongTermConfig().stages]
    assert "speaker" not in [s.name for s in LongTermConfig(speaker_weight=0.0).stages]
    scored: Scored = {"reply": (1.0, {}), "said": (0.8, {})}
    assert demote_speaker(["reply", "said"], scored, {"reply": "assistant"}, 0.0) == ["reply", "said"]
    assert scored["reply"] == (1.0, {})


@pytest.mark.parametrize("bad", [-0.1, 1.01, float("nan"), float("inf"), "0.3", True, None])
def test_a_bad_speaker_weight_is_refused_naming_the_field(bad: object) -> None:
    # Tried: below 0, above 1, NaN, infinity, a string, a bool, None.
    with pytest.raises(ConfigError, match="speaker_weight"):
        LongTermConfig(speaker_weight=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["2", "-1", "lots", "nan"])
def test_a_bad_speaker_weight_setting_is_refused_before_any_store_opens(bad: str) -> None:
    with pytest.raises(ConfigError, match="speaker_weight"):
        Settings.from_env({}, speaker_weight=bad)
    assert Settings.from_env({}, speaker_weight="0").speaker_weight == 0.0


def _store(weight: float) -> LongTermStore:
    # One vector for every text: BM25 alone ranks, so the assistant's echo, which repeats
    # the question's words, comes first unless the stage moves it.
    store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), SameVector(),
                          config=LongTermConfig(speaker_weight=weight, session_weight=0.0, question_weight=0.0))
    store.archive_turns("ana", "s1", [
        {"role": "user", "content": "The espresso beans came from Grindstone Roasters in Kirkstall.", "id": "m1"},
        {"role": "assistant", "content": "Espresso beans from a local roaster are a fine start: espresso beans "
                                         "rested a week after roasting pull sweeter espresso shots.", "id": "m2"},
    ])
    store.archive_turns("ana", "s2", [
        {"role": "user", "content": "Thanks, the chart is done.", "id": "m3"},
        {"role": "assistant", "content": "Glad the chart worked out.", "id": "m4"},
    ])
    # Other sittings, so that the question's words are rare in the archive (BM25's idf).
    for n, (said, reply) in enumerate([("Beans on toast for lunch again.", "Quick and filling."),
                                       ("My guitar needs new strings.", "Try a lighter gauge."),
                                       ("We booked the cabin for June.", "June is a lovely month there.")]):
        store.archive_turns("ana", f"s{n + 3}", [{"role": "user", "content": said, "id": f"f{n}u"},
                                                 {"role": "assistant", "content": reply, "id": f"f{n}a"}])
    return store


def test_asked_about_themselves_the_user_finds_their_own_statement_first() -> None:
    store = _store(0.3)
    hits = store.recall("ana", "Where did I get my espresso beans?", 6)
    assert [h.item.source_message_id for h in hits][:2] == ["m1", "m2"]
    for h in hits:  # every assistant turn of the head, and only those, scored down
        assert h.boosts.get("speaker") == (pytest.approx(0.7) if h.item.metadata["role"] == "assistant" else None)


def test_asked_for_advice_the_user_finds_what_they_said_they_like_first() -> None:
    # "you" in the question: asks_about_the_user alone would leave the echo first.
    question = "Which espresso beans would you recommend I order next?"
    assert not asks_about_the_user(question)
    hits = {h.item.source_message_id: h for h in _store(0.3).recall("ana", question, 10)}
    assert next(iter(hits)) == "m1"
    assert hits["m2"].boosts.get("speaker") == pytest.approx(0.7) and "speaker" not in hits["m1"].boosts
    given = _store(0.3).recall("ana", "Which espresso beans did you recommend?", 4)
    assert [h.item.source_message_id for h in given][:2] == ["m2", "m1"]


def test_without_the_stage_or_when_the_assistant_is_asked_the_echo_keeps_its_place() -> None:
    off = _store(0.0).recall("ana", "Where did I get my espresso beans?", 4)
    assert [h.item.source_message_id for h in off][:2] == ["m2", "m1"]
    asked = _store(0.3).recall("ana", "What did you say about espresso beans and roasting?", 4)
    assert [h.item.source_message_id for h in asked][:2] == ["m2", "m1"]
    assert all("speaker" not in h.boosts for h in asked)


def _asking_store() -> LongTermStore:
    # One vector for every text: BM25 alone ranks. The user said what they like inside a
    # request; the question stage alone would score it down as a question.
    store = LongTermStore(MemoryItemStore(), MemoryVectorIndex(), MemoryLexicalIndex(), SameVector(),
                          config=LongTermConfig(speaker_weight=0.0, session_weight=0.0, question_weight=0.5))
    store.archive_turns("ana", "s1", [
        {"role": "user", "content": "Is swimming any good for cardio? I hate gyms but love the water.", "id": "ask"},
        {"role": "assistant", "content": "Yes.", "id": "yes"},
    ])
    store.archive_turns("ana", "s2", [
        {"role": "user", "content": "Noted: cardio twice a week, swimming or cycling, no gyms.", "id": "note"},
        {"role": "assistant", "content": "Good plan.", "id": "ok"},
    ])
    for n, said in enumerate(["Lunch was soup again.", "The guitar needs strings.", "We booked the cabin."]):
        store.archive_turns("ana", f"f{n}", [{"role": "user", "content": said, "id": f"f{n}"}])
    return store


def test_a_users_own_request_is_not_scored_down_as_a_question_when_the_user_answers() -> None:
    store = _asking_store()
    # A request for advice for the asker: the user's question-turn keeps its score.
    hits = {h.item.source_message_id: h for h in store.recall("ana", "What cardio would you suggest, swimming?", 10)}
    assert "question" not in hits["ask"].boosts
    # Any other question: the turn that asks is scored down, as before.
    other = {h.item.source_message_id: h for h in store.recall("ana", "Is swimming good cardio for Tom?", 10)}
    assert other["ask"].boosts.get("question") == pytest.approx(1 - 0.5 * 0.5)
