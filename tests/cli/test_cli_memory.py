"""``hmem add | context | recall | profile | export | import | inspect`` in-process, JSON parsed."""

from __future__ import annotations

from pathlib import Path

from cli_result import Runner
from settings_helpers import settings_file


def test_add_then_context_contains_the_message(hmem: Runner) -> None:
    added = hmem("add", "u1", "s1", "I'm allergic to peanuts and I live in Lyon.", "--json")
    assert added.code == 0, added.err
    assert len(added.json["message_ids"]) == 1
    reply = hmem("add", "u1", "s1", "--role", "assistant", "Noted: no peanuts.", "--json")
    assert reply.code == 0, reply.err

    ctx = hmem("context", "u1", "s1", "--query", "what should I cook?", "--json")
    assert ctx.code == 0, ctx.err
    contents = [m["content"] for m in ctx.json["messages"]]
    assert "I'm allergic to peanuts and I live in Lyon." in contents
    assert "Noted: no peanuts." in contents
    report = ctx.json["report"]
    assert report["total"] == ctx.json["tokens"] <= report["budget"]
    assert {t["tier"] for t in report["tiers"]} >= {"system", "current_turn", "history", "recalled"}


def test_add_reads_stdin_and_an_openai_message_file(hmem: Runner, tmp_path: Path) -> None:
    assert hmem("add", "u1", "s1", "-", stdin="typed on stdin\n").code == 0
    file = tmp_path / "messages.json"
    file.write_text('[{"role": "user", "content": "from a file"}, {"role": "assistant", "content": "ok"}]')
    assert hmem("add", "u1", "s1", "--file", str(file)).code == 0
    shown = hmem("inspect", "u1", "s1", "--json").json
    assert [m["content"] for m in shown["buffer"]] == ["typed on stdin\n", "from a file", "ok"]
    assert all(m["tokens"] > 0 for m in shown["buffer"])


def test_recall_finds_a_remembered_fact_with_its_explanation(hmem: Runner, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HMEM_VECTORS", "chroma")  # vectors must outlive each command: the embedded default
    hmem("add", "u1", "s1", "My tortoise Gerald needs his heat lamp on every morning.")
    hmem("add", "u1", "s2", "I started a new job as a curriculum designer.")
    out = hmem("recall", "u1", "what pet do I have?", "-k", "5", "--json")
    assert out.code == 0, out.err
    hits = out.json["hits"]
    assert "Gerald" in hits[0]["text"]
    assert hits[0]["session_id"] == "s1"
    assert hits[0]["dense_rank"] == 1
    assert hits[0]["score"] > 0 and hits[0]["created_at"]
    # --kind filters: no item of an unknown kind
    assert hmem("recall", "u1", "pet", "--kind", "nonexistent", "--json").json["hits"] == []


def test_profile_set_get_rm_history(hmem: Runner) -> None:
    assert hmem("profile", "set", "u1", "city", "Paris").code == 0
    assert hmem("profile", "set", "u1", "city", "Berlin").code == 0
    assert hmem("profile", "set", "u1", "likes", '["jazz", "tea"]', "--json").json["value"] == ["jazz", "tea"]
    assert hmem("profile", "set", "u1", "age", "41", "--json").json["value"] == 41
    assert hmem("profile", "set", "u1", "vegan", "true", "--json").json["value"] is True
    assert hmem("profile", "set", "u1", "zip", '"02139"', "--json").json["value"] == "02139"

    assert hmem("profile", "get", "u1", "city", "--json").json["value"] == "Berlin"
    everything = {e["key"]: e["value"] for e in hmem("profile", "get", "u1", "--json").json["profile"]}
    assert everything == {"city": "Berlin", "likes": ["jazz", "tea"], "age": 41, "vegan": True, "zip": "02139"}

    assert hmem("profile", "rm", "u1", "city", "--json").json["deleted"] is True
    missing = hmem("profile", "get", "u1", "city")
    assert missing.code == 1 and "no profile key 'city'" in missing.err
    history = hmem("profile", "history", "u1", "city", "--json").json["history"]
    assert [h["value"] for h in history] == ["Paris", "Berlin", None]
    assert hmem("profile", "rm", "u1", "city").code == 1  # already gone: says so, exit 1


def test_export_import_round_trip_gives_identical_context(hmem: Runner, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HMEM_VECTORS", "chroma")
    hmem("add", "u1", "s1", "I'm vegetarian and my sister Hannah lives in Porto.")
    hmem("add", "u1", "s1", "--role", "assistant", "Got it.")
    hmem("add", "u1", "s2", "Book me a window seat to Tromsø, please.")
    hmem("profile", "set", "u1", "city", "Lisbon")
    file = tmp_path / "u1.jsonl"
    exported = hmem("export", "u1", str(file), "--json")
    assert exported.code == 0 and exported.json["records"] > 4

    other = tmp_path / "other-store"
    imported = hmem("import", str(file), "--as", "u2", "--data", str(other), "--json")
    assert imported.code == 0, imported.err
    assert imported.json["stats"] | {"user_id": "u1"} == exported.json["stats"]

    before = hmem("context", "u1", "s1", "--query", "where does my sister live?", "--json").json
    after = hmem("context", "u2", "s1", "--query", "where does my sister live?", "--data", str(other), "--json").json
    assert after["messages"] == before["messages"]
    assert after["report"] == before["report"]
    again = hmem("import", str(file), "--as", "u2", "--data", str(other))
    assert again.code == 1 and "already has data" in again.err


def test_inspect_shows_every_tier_after_compaction(hmem: Runner, monkeypatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Tuning settings: in the file HMEM_CONFIG names (an HMEM_BUFFER_TOKENS variable is refused).
    monkeypatch.setenv("HMEM_CONFIG", str(settings_file(tmp_path / "hmem.toml", buffer_tokens=120,
                                                          summary_min_messages=2)))
    for i in range(8):
        hmem("add", "u1", "s1", f"Note number {i}: I practised the piano for {20 + i} minutes today.")
    view = hmem("inspect", "u1", "s1", "--json").json
    assert view["summary"] is not None and view["summary"]["method"] == "extractive"
    assert view["summary"]["covers_until"]
    kinds = {i["kind"] for i in view["items"]}
    assert "turn" in kinds  # evicted turns were archived
    assert view["stats"]["buffered_messages"] == len(view["buffer"]) < 8
    text = hmem("inspect", "u1", "s1")
    assert text.code == 0 and "Summary (extractive" in text.out and "Buffer:" in text.out
