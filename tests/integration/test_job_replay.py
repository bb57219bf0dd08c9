"""The background engine's contract on the embedded default (SQLite queue, real Chroma,
the real embedding model): an acknowledged write's derived work survives ``kill -9``
and runs in the next process; a poison job is quarantined and reported, the rest runs,
and deleting its item clears it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from hmem.build import build_parts
from hmem.config import Settings
from hmem.memory import Memory
from hmem.protocols import Embedder

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import sys, time
    from dataclasses import replace
    from hmem.build import build_parts
    from hmem.config import Settings
    from hmem.memory import Memory

    class Stuck:  # the fact extractor never finishes: the after_add jobs are running at the kill
        def extract(self, messages):
            time.sleep(3600)

    settings = Settings.from_env({}, data_dir=sys.argv[1], extraction="background")
    mem = Memory(replace(build_parts(settings), fact_extractor=Stuck()))
    for n, text in enumerate(["I moved to Lisbon last spring.", "My daughter Ana is gluten-free.",
                              "We adopted a grey cat called Miso.", "I work as a nurse at the night shift.",
                              "My favourite tea is a smoky lapsang souchong."]):
        mem.add("u1", "s1", [{"role": "user", "content": text, "id": f"m{n}"}])
    print("acked", flush=True)
    time.sleep(3600)
""")


def test_kill_9_after_add_returned_replays_the_background_work(tmp_path: Path) -> None:
    data = tmp_path / "data"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "acked"  # five adds returned: their jobs are stored
        time.sleep(0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    mem = Memory.open(data)  # the folder lock died with the child; the queue's leases end now
    try:
        assert [m.id for m in mem.history("u1", "s1")] == [f"m{n}" for n in range(5)]
        assert mem.flush(120)
        archived = {it.source_message_id for it in mem.items("u1", kinds="turn")}
        assert archived == {f"m{n}" for n in range(5)}  # nothing lost
        assert sum(1 for it in mem.items("u1", kinds="turn")) == 5  # and each archived once
        assert mem.stats("u1")["background"]["quarantined"] == []
        hits = mem.recall("u1", "which city do I live in", 3)
        assert hits and hits[0].item.source_message_id == "m0"
    finally:
        mem.close()


class RefusingEmbedder:
    """The real model, except that it refuses any text holding ``POISON`` (as a model
    or an endpoint refuses one bad input): only sentence keys embed such a sentence alone."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any("POISON" in t and len(t) < 60 for t in texts):
            raise ValueError("the model refused an input")
        return self.inner.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_query(texts)


def test_a_poison_sentence_key_job_is_quarantined_the_rest_is_built_and_delete_clears_it(tmp_path: Path) -> None:
    from hmem.providers.onnx import OnnxMiniLMEmbedder

    embedder = RefusingEmbedder(OnnxMiniLMEmbedder())
    settings = Settings.from_env({}, data_dir=str(tmp_path / "data"))
    parts = build_parts(settings, embedder=embedder)  # type: ignore[arg-type]
    fast = replace(parts.engine.policy, first_s=0.01, max_s=0.05)
    parts.engine.policy = fast  # keep the test quick: same rule, shorter waits
    mem = Memory(parts)
    try:
        long_turns = {
            "m0": "We went hiking in the Alps last week. The weather was perfect. We saw three ibexes near the hut.",
            "m1": "The meeting moved to Thursday. POISON here. Please bring the budget sheets along with you.",
            "m2": "My sister teaches maths in Porto. She loves the old trams. Her school is near the river.",
        }
        for mid, text in long_turns.items():
            mem.add("u1", "s1", [{"role": "user", "content": text, "id": mid}])
        assert mem.flush(60)  # a quarantined job does not hold flush up, and nothing waits forever
        background = mem.stats("u1")["background"]
        [stuck] = background["quarantined"]
        turn_ids = {it.source_message_id: it.id for it in mem.items("u1", kinds="turn")}
        assert (stuck["kind"], stuck["key"]) == ("sentence_keys", turn_ids["m1"])
        assert "refused an input" in stuck["error"]
        assert background["kinds"]["sentence_keys"]["waiting"] == 0
        assert "quarantined" in (mem.readiness()["jobs"].detail or "")
        # The others' keys were built: a buried sentence finds its turn by embedding alone.
        assert mem.stats("u1")["sentence_keys_waiting"] == 0
        # Deleting the item clears its job.
        mem.forget("u1", [turn_ids["m1"]])
        assert mem.stats("u1")["background"]["quarantined"] == []
        assert mem.readiness()["jobs"].detail is None
    finally:
        mem.close()


class BrokenFacts:
    """A fact extractor with a bug: every call raises."""

    def extract(self, messages: object) -> object:
        raise ValueError("extractor bug")


def test_a_failing_background_add_is_quarantined_not_retried_forever_and_forget_user_drops_it(
        tmp_path: Path) -> None:
    settings = Settings.from_env({}, data_dir=str(tmp_path / "data"), extraction="background")
    parts = replace(build_parts(settings), fact_extractor=BrokenFacts())  # type: ignore[arg-type]
    parts.engine.policy = replace(parts.engine.policy, first_s=0.01, max_s=0.05)
    mem = Memory(parts)
    try:
        mem.add("u1", "s1", [{"role": "user", "content": "I moved to Lisbon last spring.", "id": "m0"}])
        mem.add("u2", "s1", [{"role": "user", "content": "I moved to Porto last spring.", "id": "m0"}])
        assert mem.flush(60)  # quarantined jobs hold nothing up
        [stuck] = mem.stats("u1")["background"]["quarantined"]
        assert stuck["kind"] == "after_add" and "extractor bug" in stuck["error"]
        assert stuck["attempts"] == parts.engine.policy.attempts
        # The turn was archived all the same (a failed extraction never costs the archive).
        assert {it.source_message_id for it in mem.items("u1", kinds="turn")} == {"m0"}
        erased = mem.forget_user("u1")
        assert erased["jobs"] == 1  # the job held u1's message: it goes with the user
        assert mem.stats("u1")["background"]["quarantined"] == []
        assert len(mem.stats("u2")["background"]["quarantined"]) == 1  # another user's stays
    finally:
        mem.close()


def test_the_inspector_and_readyz_show_a_quarantined_job_and_the_api_forgets_it(tmp_path: Path) -> None:
    from server_fixtures import client, embedder, fast_settings, live_server

    settings = fast_settings(tmp_path, extraction="background")
    parts = replace(build_parts(settings, embedder=embedder()), fact_extractor=BrokenFacts())  # type: ignore[arg-type]
    parts.engine.policy = replace(parts.engine.policy, first_s=0.01, max_s=0.05)
    with live_server(settings, memory=Memory(parts)) as (url, mem):
        mem.add("carol", "s1", [{"role": "user", "content": "I moved to Lisbon last spring.", "id": "m0"}])
        assert mem.flush(60)
        with client(url) as http:
            page = http.get("/ui/users/carol")
            assert page.status_code == 200
            section = re.search(r'<section id="jobs-quarantined">(.*?)</section>', page.text, re.S)
            assert section, page.text[:2000]
            assert "after_add" in section.group(1) and "extractor bug" in section.group(1)
            detail = http.get("/readyz").json()["backends"]["jobs"]["detail"]
            assert "quarantined" in detail and "after_add 1" in detail and "carol" not in detail
            gone = http.delete("/v1/users/carol")
            assert gone.status_code == 200 and gone.json()["jobs"] == 1, gone.text
            assert 'id="jobs-quarantined"' not in http.get("/ui/users/carol").text
            assert http.get("/readyz").json()["backends"]["jobs"]["detail"] is None
