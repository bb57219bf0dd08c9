"""Edge cases of the integration layer (facade, builder, settings, export/import, server
factory): bad arguments refused, nothing half-written.

Bad inputs tried here (each raises InvalidInput naming the field, and changes nothing):
``context(k=-1 | "3" | True | 2.5 | 1001)``, an export file that is not UTF-8, an export
whose profile record lacks its value (after valid messages and summaries), an export
path that cannot be written. Unknown keyword arguments to ``recall``/``forget``/
``remember``/``context`` (the parameters are spelled out) are Python's TypeError naming
the argument, and change nothing either.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis_helpers import REDIS_URL, redis_prefix  # noqa: F401  (fixture)
from server_fixtures import embedder, fast_settings, live_server

from hmem.build import build_llm, build_parts
from hmem.config import Settings, setting_name
from hmem.errors import ConfigError, InvalidInput
from hmem.memory import Memory
from hmem.testing import ScriptedLLMServer, ScriptedReply

pytestmark = pytest.mark.slow  # loads the real embedding model


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    memory = Memory.open(tmp_path / "data", embedder=embedder(), vectors="memory")
    yield memory
    memory.close()


def _seed(mem: Memory, user: str = "u1") -> None:
    mem.add(user, "s1", [{"role": "user", "content": "I live in Paris and I love green tea."},
                         {"role": "assistant", "content": "Noted."}])
    mem.remember(user, "Allergic to peanuts", kind="fact", importance=0.9)


def _snapshot(mem: Memory, user: str) -> tuple[Any, ...]:
    return (mem.stats(user), [m.id for m in mem.history(user, "s1")], sorted(i.id for i in mem.items(user)))


# -- Memory facade -----------------------------------------------------------------------


@pytest.mark.parametrize("bad_k", [-1, "3", True, 2.5, 1001])
def test_context_rejects_a_bad_k(mem: Memory, bad_k: Any) -> None:
    _seed(mem)
    with pytest.raises(InvalidInput) as info:
        mem.context("u1", "s1", k=bad_k)
    assert info.value.field == "k"


def test_unknown_keyword_arguments_are_type_errors_and_change_nothing(mem: Memory) -> None:
    _seed(mem)
    before = _snapshot(mem, "u1")
    for call, name in (
        (lambda: mem.recall("u1", "tea", bogus=1), "bogus"),  # type: ignore[call-arg]
        (lambda: mem.forget("u1", kind="fact"), "kind"),  # type: ignore[call-arg]  # the filter is `kinds`
        (lambda: mem.remember("u1", "Likes jazz", colour="blue"), "colour"),  # type: ignore[call-arg]
        (lambda: mem.context("u1", "s1", recall_filters={"kind": "fact"}), "recall_filters"),  # type: ignore[call-arg]
    ):
        with pytest.raises(TypeError, match=name):
            call()
    assert _snapshot(mem, "u1") == before


def test_context_works_for_every_k_the_api_accepts(mem: Memory, tmp_path: Path) -> None:
    # context() over-fetched 2*k + len(history) and the recall refused more than 1000:
    # k=1000 failed with "k must be an integer from 1 to 1000, got 2002", a number never sent.
    _seed(mem)
    for i in range(5):
        mem.remember("u1", f"Visited museum number {i} in Paris", importance=0.4)
    ctx = mem.context("u1", "s1", query="museum in Paris", k=1000)
    recalled = [r for r in ctx.report.items if r.tier == "recalled"]
    assert any("museum" in str(m["content"]) for m in ctx.messages) and len(recalled) >= 5
    with live_server(fast_settings(tmp_path / "http", api_keys=())) as (url, _), \
            httpx.Client(base_url=url, timeout=60) as http:
        http.post("/v1/users/u1/sessions/s1/messages", json={"messages": [{"role": "user", "content": "hi"}]})
        http.post("/v1/users/u1/items", json={"text": "Visited the Louvre in Paris"})
        ok = http.post("/v1/users/u1/sessions/s1/context", json={"query": "Louvre", "k": 1000})
        assert ok.status_code == 200, ok.text
        assert "Louvre" in json.dumps(ok.json()["messages"])
        too_many = http.post("/v1/users/u1/sessions/s1/context", json={"query": "Louvre", "k": 1001})
        assert too_many.status_code == 422 and too_many.json()["error"]["field"].endswith("k")


def test_open_with_redis_url_puts_every_tier_in_redis(tmp_path: Path, redis_prefix: Any) -> None:  # noqa: F811
    # Memory.open pinned sessions/summaries/profile to SQLite, so redis_url moved only the
    # items there: two app instances on one Redis then did not share their sessions.
    _, prefix = redis_prefix
    opts = {"embedder": embedder(), "vectors": "memory", "redis_url": REDIS_URL, "redis_prefix": prefix}
    with Memory.open(tmp_path / "host-a", **opts) as a, Memory.open(tmp_path / "host-b", **opts) as b:
        a.add("u1", "s1", [{"role": "user", "content": "I moved to Lisbon last month."}])
        a.profile.set("u1", "city", "Lisbon")
        assert [m.content for m in b.history("u1", "s1")] == ["I moved to Lisbon last month."]
        entry = b.profile.get("u1", "city")
        assert entry is not None and entry.value == "Lisbon"
        assert [i.session_id for i in b.session_infos("u1")] == ["s1"]


def _open_fds_under(folder: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_failed_build_leaves_no_file_open(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    settings = Settings.from_env({}, data_dir=str(folder), vectors="http://")  # no host: fails late in the build
    with pytest.raises(ConfigError) as info:
        build_parts(settings, embedder=embedder())
    # A caller that keeps the error (a log record, a retry loop) must not keep the SQLite file open.
    assert info.value is not None
    assert _open_fds_under(folder) == []


# -- settings wired end to end -------------------------------------------------------------


def test_summary_model_is_used_for_extraction_too(tmp_path: Path) -> None:
    # README: summary_model is "a cheaper model for summaries and extraction".
    with ScriptedLLMServer() as server:
        server.respond_with(lambda _req: ScriptedReply("text", '{"updates": [], "facts": []}', 200))
        settings = Settings.from_env(
            {}, data_dir=str(tmp_path), vectors="memory", llm_base_url=server.base_url,
            llm_api_key="test", llm_model="big-chat-model", summary_model="cheap-side-model", compaction="off",
        )
        with Memory.from_settings(settings, embedder=embedder()) as memory:
            memory.add("u1", "s1", [{"role": "user", "content": "I live in Porto and I work as a nurse."}])
        models = {r.body["model"] for r in server.completion_requests}
    assert models == {"cheap-side-model"}


def test_llm_timeout_is_a_tuning_setting_without_an_alias(tmp_path: Path) -> None:
    # llm_timeout_s is read from the HMEM_CONFIG file (or a keyword) and reaches the LLM;
    # the old alias HMEM_LLM_TIMEOUT is gone (an unknown variable, ignored like any other)
    # and HMEM_LLM_TIMEOUT_S is refused as a tuning variable.
    config = tmp_path / "hmem.toml"
    config.write_text("[hmem]\nllm_timeout_s = 7.5\n", encoding="utf-8")
    settings = Settings.from_env({"HMEM_CONFIG": str(config), "HMEM_LLM_MODEL": "m"})
    llm = build_llm(settings)
    assert llm is not None and llm.timeout == 7.5  # type: ignore[attr-defined]
    aliased = Settings.from_env({"HMEM_LLM_TIMEOUT": "3", "HMEM_LLM_MODEL": "m"})
    assert aliased.llm_timeout_s == 60.0  # the default: the alias is not read
    with pytest.raises(ConfigError, match="HMEM_LLM_TIMEOUT_S: not an environment setting"):
        Settings.from_env({"HMEM_LLM_TIMEOUT_S": "3"})


@pytest.mark.parametrize(("name", "value"), [("summary_cap_tokens", 8), ("max_body_bytes", 100),
                                             ("redis_timeout_s", 0.0), ("llm_timeout_s", -1.0)])
def test_settings_below_a_components_floor_are_config_errors(name: str, value: Any, tmp_path: Path) -> None:
    # Before: accepted by Settings, then an InvalidInput from deep inside the build (or
    # a ConfigError only when the server started).
    # Named by its variable (HMEM_MAX_BODY_BYTES) or, for a tuning setting, its key.
    with pytest.raises(ConfigError, match=setting_name(name)):
        Settings.from_env({}, data_dir=str(tmp_path), **{name: value})


def test_settings_never_show_secrets() -> None:
    settings = Settings(llm_api_key="sk-LLMSECRET", embed_api_key="sk-EMBEDSECRET", api_keys=("APIKEYSECRET",),
                        redis_url="redis://:REDISPASS@10.0.0.5:6379/0")
    shown = repr(settings) + str(settings)
    for secret in ("LLMSECRET", "EMBEDSECRET", "APIKEYSECRET", "REDISPASS"):
        assert secret not in shown
    assert "10.0.0.5" in shown  # still useful for an operator
    with pytest.raises(ConfigError) as info:
        Settings(sessions="redis:/:TYPOPASS@10.0.0.5:6379")  # a mistyped URL in the error message
    assert "TYPOPASS" not in str(info.value)


def test_create_app_honours_max_body_bytes_from_settings(tmp_path: Path) -> None:
    settings = fast_settings(tmp_path, api_keys=(), max_body_bytes=2048)
    with live_server(settings) as (url, _mem), httpx.Client(base_url=url, timeout=30) as http:
        body = {"messages": [{"role": "user", "content": "x" * 3000}]}
        response = http.post("/v1/users/u1/sessions/s1/messages", json=body)
        assert response.status_code == 413, response.text
        assert http.get("/v1/users/u1/sessions/s1/messages").json()["messages"] == []


def test_demo_never_uses_the_configured_redis_llm_or_embedding_endpoint(tmp_path: Path) -> None:
    from argparse import Namespace

    from hmem.cli.demo_cmd import demo_overrides

    env = {"HMEM_REDIS_URL": "redis://10.0.0.9:6379/0", "HMEM_LLM_MODEL": "gpt-x",
           "HMEM_EMBED_PROVIDER": "openai", "HMEM_EMBED_MODEL": "text-embedding-3-small"}
    args = Namespace(buffer_tokens=300, archive_on_evict=False, model=None)
    settings = Settings.from_env(env, **demo_overrides(args, str(tmp_path)))
    assert (settings.sessions, settings.summaries, settings.profile, settings.items) == ("sqlite",) * 4
    # The default embedder, as every other entry point: `hmem serve --data` answers from a kept demo store.
    assert settings.llm_model is None and settings.embed_provider == Settings().embed_provider
    assert settings.embed_model is None


# -- export / import -----------------------------------------------------------------------


def test_import_of_a_non_utf8_file_is_invalid_input(mem: Memory, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'\xff\xfe{"type": "header"}\n')
    with pytest.raises(InvalidInput) as info:
        mem.import_user(path, user_id="u9")
    assert info.value.field == "path"
    assert mem.stats("u9")["sessions"] == 0


def test_import_with_a_bad_profile_record_changes_nothing(mem: Memory, tmp_path: Path) -> None:
    _seed(mem)
    mem.profile.set("u1", "city", "Paris")
    path = tmp_path / "u1.jsonl"
    mem.export_user("u1", path)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    bad = [dict(r) for r in lines]
    for record in bad:
        if record["type"] == "profile":
            del record["value"]
    assert any(r["type"] == "message" for r in bad)  # messages come first: they were written, then it failed
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(json.dumps(r) for r in bad) + "\n", encoding="utf-8")

    with pytest.raises(InvalidInput):
        mem.import_user(broken, user_id="u2")
    assert mem.stats("u2")["sessions"] == 0 and mem.stats("u2")["items"] == 0
    assert mem.profile.all("u2") == []
    assert mem.import_user(path, user_id="u2") == "u2"  # the user is still empty, so a good file imports


def test_export_to_an_unwritable_path_is_invalid_input(mem: Memory, tmp_path: Path) -> None:
    _seed(mem)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        mem.export_user("u1", blocker / "sub" / "u1.jsonl")
    assert info.value.field == "path"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "data"]
