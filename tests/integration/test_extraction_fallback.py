"""The LLM extraction path of ``Memory.add`` over real HTTP (ScriptedLLMServer): the
method it reports, the tokens per add, the fallback to the offline rules when the LLM
fails (and the reason it gives), and the schema checks and guards on the LLM's updates."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hmem.config import Settings
from hmem.errors import InvalidInput
from hmem.memory import Memory
from hmem.profile._update import ProfileUpdate, check_schema_value
from hmem.providers.llm import OpenAICompatibleLLM
from hmem.testing.llm_server import RecordedRequest, ScriptedLLMServer, ScriptedReply

pytest.importorskip("openai")

Responder = Callable[[RecordedRequest], ScriptedReply]


def _is_profile(request: RecordedRequest) -> bool:
    return "user's profile" in str(request.body["messages"][0]["content"])


def _route(profile: list[str], facts: list[str], tokens: tuple[int, int] = (100, 20)) -> Responder:
    """Profile calls get the ``profile`` replies in turn (the last one repeats), fact calls ``facts``."""
    def answer(request: RecordedRequest) -> ScriptedReply:
        queue = profile if _is_profile(request) else facts
        text = queue.pop(0) if len(queue) > 1 else queue[0]
        return ScriptedReply("text", text, prompt_tokens=tokens[0], completion_tokens=tokens[1])
    return answer


@contextmanager
def _memory(tmp_path: Path, base_url: str, server: ScriptedLLMServer) -> Iterator[Memory]:
    settings = Settings.from_env(
        {}, data_dir=str(tmp_path), vectors="memory", embed_provider="openai", embed_model="fake",
        embed_base_url=server.base_url, embed_api_key="k",
    )
    llm = OpenAICompatibleLLM(base_url=base_url, api_key="k", model="m", max_attempts=1, backoff_s=0.0, timeout=2.0)
    mem = Memory.from_settings(settings, llm=llm)
    try:
        yield mem
    finally:
        mem.close()


def _updates(*items: dict[str, Any]) -> str:
    return json.dumps({"updates": list(items)})


FACTS_OK = json.dumps({"facts": [{"kind": "fact", "text": "The user lives in Berlin.", "importance": 0.7}]})


def test_valid_replies_take_the_llm_path_and_report_tokens_per_add(tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        server.respond_with(_route(
            [_updates({"key": "City", "value": "Berlin", "evidence": "I live in Berlin"},
                      {"key": "age", "value": "34", "evidence": "I'm 34"})],
            [FACTS_OK], tokens=(120, 30)))
        with _memory(tmp_path, server.base_url, server) as mem:
            result = mem.add("u1", "s1", [{"role": "user", "content": "I live in Berlin and I'm 34."}])
            assert result.profile is not None and result.fact_report is not None
            assert (result.profile.method, result.profile.reason) == ("llm", "")
            assert (result.profile.usage.prompt_tokens, result.profile.usage.completion_tokens) == (120, 30)
            assert (result.fact_report.method, result.fact_report.usage.total_tokens) == ("llm", 150)
            # "City" is an alias of location; the quoted age is read as a number
            assert set(result.profile.changed) == {"location", "age"}
            loc, age = mem.profile.get("u1", "location"), mem.profile.get("u1", "age")
            assert loc is not None and loc.value == "Berlin" and age is not None and age.value == 34
            # The updates become dated statements; the LLM's fact only repeats one, so it is left out.
            assert [(f.item.kind, f.item.text.split(" (as of ")[0]) for f in result.facts] == [
                ("profile", "The user lives in Berlin"), ("profile", "The user is 34 years old")]


def test_invalid_json_falls_back_to_the_rules_at_once_says_why_and_stores(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with ScriptedLLMServer() as server:
        # valid JSON, wrong schema: not asked again (one call per extractor)
        server.respond_with(_route(['{"location": "Berlin"}'], ['{"facts": "oops"}'], tokens=(50, 5)))
        with _memory(tmp_path, server.base_url, server) as mem:
            result = mem.add("u1", "s1", [{"role": "user", "content": "I live in Berlin now."}])
            assert len(server.completion_requests) == 2
        assert result.profile is not None and result.fact_report is not None
        assert result.profile.method == "rules-fallback" and "no valid profile JSON in 1" in result.profile.reason
        assert result.profile.usage.total_tokens == 55  # the failed call is still counted
        assert result.fact_report.method == "rules-fallback" and "no valid facts JSON" in result.fact_report.reason
        assert result.fact_report.usage.total_tokens == 55
        # the rules stored what they found
        assert result.profile.changed == ("location",)
        # (its statement; the clause itself only repeats it, so it is not stored twice)
        assert [(f.item.kind, f.item.text.split(" (as of ")[0]) for f in result.facts] == [
            ("profile", "The user lives in Berlin")]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("profile extraction: the LLM failed" in m for m in warned)
    assert any("fact extraction: the LLM failed" in m for m in warned)


def test_server_down_falls_back_and_the_add_succeeds(tmp_path: Path) -> None:
    with ScriptedLLMServer() as dead:
        down_url = dead.base_url
    with ScriptedLLMServer() as embeddings, _memory(tmp_path, down_url, embeddings) as mem:
        result = mem.add("u1", "s1", [{"role": "user", "content": "I'm a nurse and I live in Leeds."}])
        assert [m.content for m in mem.history("u1", "s1")] == ["I'm a nurse and I live in Leeds."]
        assert result.profile is not None and result.fact_report is not None
        assert result.profile.method == result.fact_report.method == "rules-fallback"
        assert "Connection" in result.profile.reason and "Connection" in result.fact_report.reason
        assert result.profile.usage.total_tokens == 0
        entry = mem.profile.get("u1", "location")
        assert entry is not None and entry.value == "Leeds"
        assert sorted(f.item.text.split(" (as of ")[0] for f in result.facts) == [
            "The user lives in Leeds", "The user works as a nurse"]


def test_guards_hold_on_the_llm_path(tmp_path: Path) -> None:
    """A model that ignores the prompt: a third party's city, a plan, a past home, a
    temporary stay. The evidence check refuses each; the user's own facts pass."""
    text = ("My sister lives in Rome. I'm thinking about getting a dog. I used to live in Paris. "
            "I'm in Tokyo for a conference this week. I'm a teacher.")
    reply = _updates(
        {"key": "location", "value": "Rome", "evidence": "My sister lives in Rome"},
        {"key": "pets", "value": ["dog"], "evidence": "I'm thinking about getting a dog"},
        {"key": "location", "value": "Paris", "evidence": "I used to live in Paris"},
        {"key": "hometown", "value": "Paris", "evidence": "I'm from Paris"},
        {"key": "Current City", "value": "Tokyo", "evidence": "I'm in Tokyo for a conference this week"},
        {"key": "Job", "value": "teacher", "evidence": "I'm a teacher"},
    )
    with ScriptedLLMServer() as server:
        server.respond_with(_route([reply], ['{"facts": []}']))
        with _memory(tmp_path, server.base_url, server) as mem:
            result = mem.add("u1", "s1", [{"role": "user", "content": text}])
            stored = {e.key: e.value for e in mem.profile.all("u1")}
    assert result.profile is not None and result.profile.method == "llm"
    # The limit of the check: evidence the model invents ("I'm from Paris" is not in the
    # message) reads as the user's own words, so that hometown gets through.
    assert stored == {"occupation": "teacher", "hometown": "Paris"}
    assert result.profile.refused == (
        "location: evidence is about someone else",
        "pets: evidence is hypothetical",
        "location: evidence is past",
        "location: evidence is temporary",
    )


def test_an_invalid_value_is_refused_and_the_rules_read_the_turn(tmp_path: Path) -> None:
    with ScriptedLLMServer() as server:
        server.respond_with(_route(
            [_updates({"key": "age", "value": "thirty"}), _updates({"key": "age", "value": 30})], ['{"facts": []}']))
        with _memory(tmp_path, server.base_url, server) as mem:
            result = mem.add("u1", "s1", [{"role": "user", "content": "I'm thirty."}])
            asked = [r for r in server.completion_requests if _is_profile(r)]
    assert len(asked) == 1  # not asked again (LLMProfileExtractor(max_attempts=2) would)
    assert result.profile is not None and result.profile.method == "rules-fallback"
    assert "whole number of years" in result.profile.reason  # what was wrong is said


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [("age", 34, 34), ("age", "34", 34), ("birthday", "1990-02-28", "1990-02-28"), ("birthday", "02-29", "02-29"),
     ("location", "Oslo", "Oslo"), ("pets", ["cat"], ("cat",)), ("blood_type", 3, 3)],
)
def test_schema_values_accepted(key: str, value: Any, expected: Any) -> None:
    assert ProfileUpdate(key, value).value == expected
    if not isinstance(value, list):
        assert check_schema_value(key, value) == expected


@pytest.mark.parametrize(
    ("key", "value"),
    # tried: words, a negative, a huge number, a bool, a float for age; a non-date, an impossible
    # date and a US-order date for birthday; a list and a number for a one-value key; a number for a list key
    [("age", "thirty"), ("age", -1), ("age", 400), ("age", True), ("age", 30.5), ("birthday", "next tuesday"),
     ("birthday", "2023-02-30"), ("birthday", "12/25/1990"), ("location", ["Paris", "Rome"]), ("name", 7),
     ("likes", 3)],
)
def test_schema_values_refused(key: str, value: Any) -> None:
    with pytest.raises(InvalidInput, match=key):
        ProfileUpdate(key, value)
