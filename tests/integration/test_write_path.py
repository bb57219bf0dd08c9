"""The write path of ``Memory.add`` (issue #17 §2), embedded default on the real model:
one model call per add for the archived turn and its facts together, none for a text
already embedded, concurrent adds sharing model calls with every item durable when
its add returns, warm-up, and bad settings refused before anything is created."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from hmem.config import Settings, setting_name
from hmem.errors import ConfigError
from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.testing.embedders import CountingEmbedder

pytestmark = pytest.mark.slow

FACTFUL = "I'm allergic to peanuts, and I moved to Lisbon last month."


def test_one_model_call_per_add_for_the_turn_and_its_facts(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    counting = CountingEmbedder(embedder)
    with Memory.open(tmp_path / "data", embedder=counting, vectors="memory") as mem:
        before = counting.calls
        result = mem.add("u1", "s1", [{"role": "user", "content": FACTFUL, "id": "m1"}])
        assert result.facts, "the offline rules find facts in this turn: the test needs some"
        assert counting.batches[before:] == [("embed", 1 + len(result.facts))]  # one call, turn + facts
        turns = mem.items("u1", kinds="turn")
        assert [t.source_message_id for t in turns] == ["m1"]
        assert {f.item.id for f in result.facts} <= {it.id for it in mem.items("u1")}
        assert mem.recall("u1", "peanut allergy", 3)[0].item.id in {it.id for it in mem.items("u1")}
        # An assistant turn: archived, no facts, one call.
        before = counting.calls
        mem.add("u1", "s1", [{"role": "assistant", "content": "Noted: no peanuts in any recipe.", "id": "m2"}])
        assert counting.calls - before == 1
        # The same words again (another session): every text is known, so the model is not asked at all.
        before = counting.calls
        again = mem.add("u1", "s2", [{"role": "user", "content": FACTFUL, "id": "m3"}])
        assert counting.calls == before
        assert all(f.status == "skipped" for f in again.facts)
        assert "m3" in {t.source_message_id for t in mem.items("u1", kinds="turn")}


def test_concurrent_adds_share_model_calls_and_are_durable_when_they_return(
    tmp_path: Path, embedder: SentenceTransformerEmbedder,
) -> None:
    gate, counting = threading.Event(), CountingEmbedder(embedder)

    class HeldFirst:
        """The real model; while the gate is shut, the call waits, so other adds queue up."""

        model_name, dimension, symmetric = embedder.model_name, 384, True

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            gate.wait(30)
            return counting.embed(texts)

        def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
            return self.embed(texts)

    settings = Settings.from_env({}, data_dir=str(tmp_path / "data"), vectors="memory", embed_batch_wait_ms=5)
    mem = Memory.from_settings(settings, embedder=HeldFirst())
    durable: dict[int, bool] = {}
    errors: list[BaseException] = []

    def client(n: int) -> None:
        try:
            mem.add(f"user{n}", "s", [{"role": "assistant", "content": f"Reply {n}: your order ships Monday.",
                                       "id": f"r{n}"}])
            # Stored and recallable the moment add() returned.
            durable[n] = [it.source_message_id for it in mem.items(f"user{n}", kinds="turn")] == [f"r{n}"]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    # The first add to reach the model holds it; give the others time to queue behind it
    # (if one is late, it makes one more call: the assertion below still holds unless none shared).
    threading.Event().wait(2.0)
    gate.set()
    for t in threads:
        t.join(60)
    mem.close()
    assert not errors
    assert durable == dict.fromkeys(range(8), True)
    assert counting.calls < 8, f"8 concurrent adds made {counting.calls} model calls: nothing was shared"


@pytest.mark.parametrize("bad", [
    {"embed_batch_wait_ms": -1}, {"embed_batch_wait_ms": 1001}, {"embed_batch_wait_ms": "soon"},
    {"embed_batch_max": 0}, {"embed_batch_max": -3}, {"embed_batch_max": 2.5}, {"embed_batch_max": "many"},
    {"embed_cache_size": -1}, {"embed_cache_size": 1.5}, {"embed_cache_size": "big"},
    {"warm_up": "maybe"},
], ids=lambda bad: f"{next(iter(bad))}={next(iter(bad.values()))!r}")
def test_bad_write_path_settings_raise_config_error_and_create_nothing(tmp_path: Path, bad: dict[str, Any]) -> None:
    folder = tmp_path / "data"
    # warm_up is named by its variable (HMEM_WARM_UP), the tuning settings by their key.
    with pytest.raises(ConfigError, match=setting_name(next(iter(bad)))):
        Memory.open(folder, vectors="memory", **bad)
    assert not folder.exists()


def test_env_values_are_read_and_checked() -> None:
    # HMEM_WARM_UP is an environment setting; the batching and cache knobs are tuning
    # settings, given as (string) keywords as a settings file or --set would.
    s = Settings.from_env({"HMEM_WARM_UP": "true"}, embed_batch_wait_ms="0", embed_batch_max="16",
                          embed_cache_size="0")
    assert (s.embed_batch_wait_ms, s.embed_batch_max, s.embed_cache_size, s.warm_up) == (0.0, 16, 0, True)
    for bad in ({"embed_batch_max": "0"}, {"embed_batch_wait_ms": "-2"}, {"embed_cache_size": "x"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            Settings.from_env({}, **bad)
    with pytest.raises(ConfigError, match="HMEM_WARM_UP"):
        Settings.from_env({"HMEM_WARM_UP": "maybe"})


def test_warm_up_runs_the_model_when_the_memory_is_built(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> None:
    counting = CountingEmbedder(embedder)
    settings = Settings.from_env({}, data_dir=str(tmp_path / "data"), vectors="memory", warm_up=True)
    with Memory.from_settings(settings, embedder=counting):
        assert counting.calls >= 1  # before any add or recall
    cold = CountingEmbedder(embedder)
    with Memory.from_settings(Settings.from_env({}, data_dir=str(tmp_path / "cold"), vectors="memory"),
                              embedder=cold):
        assert cold.calls == 0  # off by default: nothing runs at build time


def test_serve_has_a_warm_up_flag() -> None:
    import argparse

    from hmem.cli import serve_cmd

    parser = argparse.ArgumentParser(prog="hmem")
    serve_cmd.register(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["serve", "--warm-up"]).warm_up is True
    assert parser.parse_args(["serve"]).warm_up is None  # then HMEM_WARM_UP decides


def test_warm_up_loads_the_chinese_place_tagger_too() -> None:
    """The first Chinese add naming a place hmem does not know used to load jieba's
    dictionary (~0.4 s) inside the add; warm-up now loads it. A fresh process: the
    dictionary is loaded once per process."""
    import subprocess
    import sys

    code = ("import jieba; from hmem._pipeline import warm_rules; "
            "assert not jieba.dt.initialized; warm_rules(); print(jieba.dt.initialized)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "True"
