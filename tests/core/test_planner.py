"""Query planning (hmem.longterm.planner): reading an LLM's queries, fusing the rounds,
and the planner's own behaviour with an in-process LLM double (the HTTP path is in
tests/integration/test_query_planner.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from hmem.errors import ConfigError, LLMError
from hmem.longterm.planner import (
    MAX_PLANNED_QUERIES,
    MAX_QUERY_CHARS,
    LLMQueryPlanner,
    QueryPlanner,
    fuse_planned,
    parse_queries,
)
from hmem.protocols import LLMReply
from hmem.types import Hit, MemoryItem, Message


def _hit(item_id: str, score: float, **boosts: float) -> Hit:
    return Hit(MemoryItem(id=item_id, user_id="u", text=f"text of {item_id}"), score, boosts=boosts)


# -- parse_queries -----------------------------------------------------------------


@pytest.mark.parametrize(("answer", "expected"), [
    ('{"queries": ["pottery class", "camping trip"]}', ("pottery class", "camping trip")),
    ('["pottery class", "camping trip"]', ("pottery class", "camping trip")),
    ("1. pottery class\n2) camping trip\n- swimming\n* museum", ("pottery class", "camping trip", "swimming")),
    ('{"queries": ["  pottery  class ", "Pottery class", "POTTERY CLASS?"]}', ("pottery  class",)),
    ('{"queries": ["陶艺课", "露营"]}', ("陶艺课", "露营")),
])
def test_the_queries_are_read_from_json_or_lines_without_repeats(answer: str, expected: tuple[str, ...]) -> None:
    assert parse_queries(answer, "What does Mel do?", 3) == expected


@pytest.mark.parametrize("answer", [
    "", "   ", "{}", '{"queries": []}', '{"queries": "pottery"}', '{"queries": [1, null, {"q": "x"}, ""]}',
    "42", "null", '["What does Mel do?", "what does mel do"]', '{"queries": ["' + "x" * (MAX_QUERY_CHARS + 1) + '"]}',
])
def test_an_answer_with_no_usable_query_gives_none(answer: str) -> None:
    # Tried: empty and blank text, an empty object or list, a string instead of a list,
    # non-strings, a bare number, null, only the question itself, a query over the length cap.
    assert parse_queries(answer, "What does Mel do?", 3) == ()


def test_a_query_at_the_length_cap_is_kept() -> None:
    assert parse_queries(f'["{"y" * MAX_QUERY_CHARS}"]', "q", 1) == ("y" * MAX_QUERY_CHARS,)


def test_no_room_means_no_queries() -> None:
    assert parse_queries('["a", "b"]', "q", 0) == () == parse_queries('["a"]', "q", -1)


# -- fuse_planned ------------------------------------------------------------------


def test_each_item_keeps_its_best_score_and_a_planned_query_counts_less() -> None:
    own = [_hit("a", 1.0), _hit("b", 0.5, session=1.2)]
    planned = [_hit("c", 1.0), _hit("b", 0.9), _hit("a", 0.2)]
    fused = fuse_planned([own, planned], k=10, weight=0.8)
    assert [(h.item.id, round(h.score, 6)) for h in fused] == [("a", 1.0), ("c", 0.8), ("b", 0.72)]
    # what found it is kept: the question's own hit unchanged, a planned one marked
    assert fused[0] is own[0]
    assert dict(fused[2].boosts) == {"planned": 0.8} and dict(fused[1].boosts) == {"planned": 0.8}


def test_the_question_alone_leads_a_tie_and_k_cuts_the_fused_list() -> None:
    own = [_hit("a", 0.8)]
    planned = [_hit("a", 1.0), _hit("z", 0.1), _hit("m", 0.1)]
    fused = fuse_planned([own, planned], k=2, weight=0.8)
    assert [h.item.id for h in fused] == ["a", "m"]  # a: 0.8 from both, the own hit kept; m before z by id
    assert fused[0] is own[0]


def test_a_single_result_list_is_its_own_best_k() -> None:
    own = [_hit("a", 0.9), _hit("b", 0.3)]
    assert fuse_planned([own], k=1) == [own[0]]
    assert fuse_planned([[], []], k=5) == []


# -- LLMQueryPlanner ---------------------------------------------------------------


class _ScriptedLLM:
    """An LLM double: answers from a list (an exception is raised), records the calls."""

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[list[Message], dict[str, object]]] = []

    def complete(self, messages: Sequence[Message], *, model: str | None = None, temperature: float = 0.0,
                 max_tokens: int | None = None, json_mode: bool = False) -> LLMReply:
        self.calls.append((list(messages), {"model": model, "json_mode": json_mode, "max_tokens": max_tokens}))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return LLMReply(text=answer, model=model or "m")


def test_the_planner_asks_once_per_question_and_remembers_the_plan() -> None:
    llm = _ScriptedLLM('{"queries": ["pottery class", "swimming with kids", "camping", "museum"]}')
    planner = LLMQueryPlanner(llm, model="small", max_queries=3)
    assert isinstance(planner, QueryPlanner)
    first = planner.plan("What does Mel do with her kids?")
    assert first == ("pottery class", "swimming with kids", "camping")  # max_queries of them
    assert planner.plan("What does Mel do with her kids?") == first
    assert len(llm.calls) == 1
    messages, options = llm.calls[0]
    assert options == {"model": "small", "json_mode": True, "max_tokens": 180}
    assert messages[-1].content == "What does Mel do with her kids?" and "at most 3" in (messages[0].content or "")


def test_an_llm_failure_gives_no_plan_is_logged_and_is_asked_again(caplog: pytest.LogCaptureFixture) -> None:
    llm = _ScriptedLLM(LLMError("HTTP 500: down"), '["camping"]')
    planner = LLMQueryPlanner(llm)
    with caplog.at_level("WARNING", logger="hmem.longterm.planner"):
        assert planner.plan("Where has Mel camped?") == ()
    assert "query planner: the LLM failed (LLMError: HTTP 500: down)" in caplog.text
    assert planner.plan("Where has Mel camped?") == ("camping",)  # a failure is not remembered


def test_a_bug_in_the_llm_client_is_not_swallowed() -> None:
    planner = LLMQueryPlanner(_ScriptedLLM(TypeError("bug")))
    with pytest.raises(TypeError, match="bug"):
        planner.plan("q")


def test_the_cache_keeps_the_newest_plans_only() -> None:
    llm = _ScriptedLLM('["a1"]', '["b1"]', '["a2"]')
    planner = LLMQueryPlanner(llm, cache_size=1)
    assert planner.plan("a") == ("a1",) and planner.plan("b") == ("b1",)
    assert planner.plan("a") == ("a2",)  # "a" was pushed out by "b"
    uncached = LLMQueryPlanner(_ScriptedLLM('["x"]', '["y"]'), cache_size=0)
    assert (uncached.plan("q"), uncached.plan("q")) == (("x",), ("y",))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_queries": 0}, "max_queries must be an int from 1 to"),
    ({"max_queries": MAX_PLANNED_QUERIES + 1}, "max_queries must be an int from 1 to"),
    ({"max_queries": True}, "max_queries must be an int"),
    ({"max_queries": 2.0}, "max_queries must be an int"),
    ({"cache_size": -1}, "cache_size must be an int >= 0"),
    ({"cache_size": "10"}, "cache_size must be an int >= 0"),
])
def test_bad_planner_settings_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LLMQueryPlanner(_ScriptedLLM(), **kwargs)  # type: ignore[arg-type]
