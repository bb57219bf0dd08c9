"""The /ui inspector and /docs in a real headless Chromium, outside network blocked.

One uvicorn + Memory per module (SQLite, in-process vectors, the real MiniLM model),
with API keys: an admin key and keys bound to alice and to bob."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from server_fixtures import ADMIN_KEY, ALICE_KEY, fast_settings, live_server

from hmem.memory import Memory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TRIP = [
    ("user", "I'm planning a trip to Lisbon in June with my sister Anna."),
    ("assistant", "Lovely! Lisbon in June is warm. Any plans yet?"),
    ("user", "I am vegetarian, so I need restaurants without meat."),
    ("assistant", "Noted: vegetarian places only."),
    ("user", "My budget is about 1500 euros for the whole week."),
    ("assistant", "That works for a week in Lisbon."),
    ("user", "I also want to visit the Gulbenkian museum."),
    ("assistant", "Great choice, it is closed on Tuesdays."),
    ("user", "I live in Berlin, by the way."),
    ("assistant", "Then a direct flight from BER takes about 3.5 hours."),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    # A short buffer, so the trip overflows: a summary, archived turns and facts exist.
    settings = fast_settings(tmp_path_factory.mktemp("browser"), window_policy="message", buffer_messages=6)
    with live_server(settings) as (url, mem):
        mem.add("alice", "trip", [{"role": r, "content": c, "id": f"t{i}"} for i, (r, c) in enumerate(TRIP)])
        for fact in ("Alice is allergic to peanuts", "Alice's sister Anna lives in Porto",
                     "Alice prefers window seats on flights"):
            mem.remember("alice", fact, kind="fact", session_id="trip")
        mem.profile.set("alice", "city", "Hamburg")
        mem.profile.set("alice", "city", "Berlin")
        mem.add("bob", "b1", [{"role": "user", "content": "Bob likes chess."}])
        mem.flush()
        yield url, mem


def login(driver: Any, url: str, key: str) -> None:
    driver.delete_all_cookies()
    driver.get(f"{url}/ui/login")
    driver.find_element(By.ID, "key").send_keys(key)
    driver.find_element(By.ID, "login").click()
    WebDriverWait(driver, 20).until(ec.presence_of_element_located((By.ID, "users")))


def text(driver: Any, css: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def no_error(driver: Any) -> None:
    assert driver.find_elements(By.ID, "error-message") == [], text(driver, "#error-message")


def test_each_page_loads(offline: Any, site: tuple[str, Memory]) -> None:
    url, _ = site
    login(offline, url, ADMIN_KEY)
    rows = offline.find_elements(By.CSS_SELECTOR, "#users tbody tr")
    assert {r.find_element(By.CSS_SELECTOR, "a.user-link").text for r in rows} == {"alice", "bob"}
    assert "1" in rows[0].text  # counts per tier are shown

    offline.find_element(By.LINK_TEXT, "alice").click()
    no_error(offline)
    assert offline.find_element(By.CSS_SELECTOR, "h1").text == "User alice"
    city = offline.find_element(By.ID, "key-city")
    assert city.get_attribute("open") is not None  # a key with history shows it open, as a timeline
    versions = city.find_elements(By.CSS_SELECTOR, ".timeline li")
    assert [v.find_element(By.CSS_SELECTOR, ".value").text for v in versions] == ["Hamburg", "Berlin"]
    assert offline.find_elements(By.CSS_SELECTOR, "table.items tbody tr")

    offline.find_element(By.LINK_TEXT, "trip").click()
    no_error(offline)
    assert offline.find_element(By.ID, "watermark").text  # the summary exists, with its watermark
    assert offline.find_elements(By.CSS_SELECTOR, "#archived table.items tbody tr")  # folded and archived
    offline.find_element(By.ID, "watermark").click()  # the watermark message, one click away
    no_error(offline)
    assert "Message" in offline.find_element(By.CSS_SELECTOR, "h1").text

    offline.get(f"{url}/ui/users/alice/ask")
    no_error(offline)
    assert offline.find_element(By.ID, "ask-form")


def assemble(driver: Any, url: str, question: str, budget: str = "") -> None:
    driver.get(f"{url}/ui/users/alice/ask")
    driver.find_element(By.ID, "q").send_keys(question)
    field = driver.find_element(By.ID, "budget")
    field.clear()
    field.send_keys(budget)
    driver.find_element(By.ID, "ask").click()
    WebDriverWait(driver, 30).until(ec.presence_of_element_located((By.ID, "budget-report")))


def tier_tokens(driver: Any) -> dict[str, int]:
    return {row.get_attribute("data-tier"): int(row.find_element(By.CSS_SELECTOR, ".tokens").text)
            for row in driver.find_elements(By.CSS_SELECTOR, "#tiers tr.tier-row")}


def test_an_ask_shows_prompt_tiers_hits_with_ranks_and_drops(offline: Any, site: tuple[str, Memory]) -> None:
    url, _ = site
    login(offline, url, ADMIN_KEY)
    assemble(offline, url, "what food is Alice allergic to?")
    no_error(offline)
    assert "allergic to peanuts" in text(offline, "#prompt")
    assert set(tier_tokens(offline)) == {"system", "current_turn", "history", "summary", "profile", "recalled"}
    hits = offline.find_elements(By.CSS_SELECTOR, "#hits tr.hit")
    assert hits
    first = {cell.get_attribute("data-label"): cell.text for cell in hits[0].find_elements(By.TAG_NAME, "td")}
    assert "peanuts" in first["text"]
    assert first["BM25"].startswith("1 (") and first["dense"][0].isdigit() and first["fusion"] and first["score"]


def test_changing_the_budget_re_renders_the_report(offline: Any, site: tuple[str, Memory]) -> None:
    url, _ = site
    login(offline, url, ADMIN_KEY)
    assemble(offline, url, "where does Alice live and what does she eat?", budget="4000")
    roomy = tier_tokens(offline)
    assert text(offline, "#budget-total").endswith("of 4000 tokens used")
    offline.find_element(By.LINK_TEXT, "250").click()  # a budget button: the server re-renders
    WebDriverWait(offline, 30).until(lambda d: text(d, "#budget-total").endswith("of 250 tokens used"))
    tight = tier_tokens(offline)
    assert sum(tight.values()) < sum(roomy.values()) <= 4000
    assert sum(tight.values()) <= 250
    reasons = {e.text for e in offline.find_elements(By.CSS_SELECTOR, "#dropped .reason")}
    assert reasons & {"budget", "tier cap"}, reasons  # what no longer fits is listed with its reason
    assert offline.find_element(By.ID, "budget").get_attribute("value") == "250"


def test_deleting_an_item_asks_for_confirmation_then_removes_it(offline: Any, site: tuple[str, Memory]) -> None:
    url, mem = site
    item = mem.remember("alice", "Alice keeps a bonsai named Kiko", kind="fact").item
    login(offline, url, ADMIN_KEY)
    offline.get(f"{url}/ui/users/alice")
    row = offline.find_element(By.ID, f"item-{item.id}")
    row.find_element(By.CSS_SELECTOR, "a.delete-item").click()
    assert "bonsai named Kiko" in offline.page_source and offline.find_element(By.ID, "confirm-what")
    offline.find_element(By.ID, "cancel").click()  # cancelling changes nothing
    assert offline.find_elements(By.ID, f"item-{item.id}")
    assert mem.items("alice", ids=[item.id])

    offline.find_element(By.ID, f"item-{item.id}").find_element(By.CSS_SELECTOR, "a.delete-item").click()
    offline.find_element(By.ID, "confirm").click()
    WebDriverWait(offline, 20).until(ec.presence_of_element_located((By.ID, "done")))
    assert offline.find_elements(By.ID, f"item-{item.id}") == []
    assert mem.items("alice", ids=[item.id]) == []


def test_a_user_bound_key_cannot_open_another_users_page(offline: Any, site: tuple[str, Memory]) -> None:
    url, _ = site
    login(offline, url, ALICE_KEY)
    users = [a.text for a in offline.find_elements(By.CSS_SELECTOR, "#users a.user-link")]
    assert users == ["alice"]
    for path in ("/ui/users/bob", "/ui/users/bob/sessions/b1", "/ui/users/bob/ask?q=chess", "/ui/users/bob/forget"):
        offline.get(url + path)
        assert offline.find_element(By.CSS_SELECTOR, "h1").text == "Error 403", path
        assert "bound to another user" in text(offline, "#error-message")
        assert "chess" not in offline.page_source
    offline.get(f"{url}/ui/users/alice")
    no_error(offline)


def test_docs_render_swagger_ui_offline(offline: Any, site: tuple[str, Memory]) -> None:
    url, _ = site
    offline.get(f"{url}/docs")
    WebDriverWait(offline, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, ".opblock")))
    paths = {e.text.replace("\u200b", "") for e in offline.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert "/v1/users/{user_id}/sessions/{session_id}/context" in paths
    offline.get(f"{url}/redoc")  # not served: ReDoc's bundle fetches its logo from a CDN
    assert "Not Found" in offline.page_source
