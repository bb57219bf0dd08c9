"""The /ui inspector over a real uvicorn, without a browser (tests/browser/ drives one):
escaping, bad parameters, auth and the confirm-then-POST deletes."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from server_fixtures import ADMIN_KEY, ALICE_KEY, client, fast_settings, live_server

from hmem.memory import Memory

pytestmark = pytest.mark.integration

SCRIPT = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Memory]]:
    with live_server(fast_settings(tmp_path_factory.mktemp("ui"))) as (url, mem):
        mem.add("alice", "s1", [{"role": "user", "content": f"My name is Alice {SCRIPT} and I live in Berlin.", "id": "m1"},
                                {"role": "assistant", "content": "Nice to meet you.", "id": "m2"}])
        mem.remember("alice", f"Alice collects {SCRIPT} stamps", kind="preference", session_id="s1")
        mem.profile.set("alice", "motto", SCRIPT)
        mem.add("bob", "b1", [{"role": "user", "content": "Bob here."}])
        yield url, mem


def error_text(html: str) -> str:
    found = re.search(r'id="error-message">([^<]*)<', html)
    assert found, html[:500]
    return found.group(1)


def test_script_in_a_message_a_fact_and_a_profile_value_is_escaped_on_every_page(site: tuple[str, Memory]) -> None:
    url, _ = site
    escaped = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
    with client(url) as c:
        pages = {
            "user": c.get("/ui/users/alice"),  # the fact and the profile value
            "session": c.get("/ui/users/alice/sessions/s1"),  # the message and the fact
            "message": c.get("/ui/users/alice/sessions/s1/messages/m1"),
            "ask": c.get("/ui/users/alice/ask", params={"q": "stamps Berlin motto"}),  # prompt, hits, profile
        }
    for name, r in pages.items():
        assert r.status_code == 200, name
        assert "<script" not in r.text.lower(), name  # no page has any script element at all
        assert escaped in r.text, name
        assert "default-src 'none'" in r.headers["content-security-policy"], name
    assert pages["user"].text.count(escaped) >= 2  # the fact and the motto
    assert pages["ask"].text.count(escaped) >= 2  # recalled / profile / current turn


@pytest.mark.parametrize(("path", "params", "status", "says"), [
    ("/ui/users/nobody-here", {}, 200, None),  # an unknown user is an empty user, as on /v1
    ("/ui/users/%20alice", {}, 422, "user_id must not start or end with whitespace"),
    ("/ui/users/" + "u" * 300, {}, 422, "user_id is longer than"),
    ("/ui/users/alice", {"since": "2024-13-01"}, 422, "since must be a date like"),
    ("/ui/users/alice", {"until": "yesterday"}, 422, "until must be a date like"),
    ("/ui/users/alice", {"since": "2024-05-02", "until": "2024-05-01"}, 422, "since must not be after until"),
    ("/ui/users/alice", {"page": "0"}, 422, "page must be a whole number"),
    ("/ui/users/alice", {"page": "99"}, 422, "page must be a whole number"),
    ("/ui/users/alice", {"session": "s\x011"}, 422, "session must not contain control characters"),
    ("/ui/users/alice/ask", {"q": "hi", "budget": "abc"}, 422, "budget must be a whole number"),
    ("/ui/users/alice/ask", {"q": "hi", "budget": "-5"}, 422, "budget must be a whole number"),
    ("/ui/users/alice/ask", {"q": "hi", "budget": "99999999999"}, 422, "budget must be a whole number"),
    ("/ui/users/alice/ask", {"q": "hi", "budget": "3"}, 409, "raise the budget"),
    ("/ui/users/alice/ask", {"q": "hi", "model": "no-such-model"}, 422, "unknown model"),
    ("/ui/users/alice/ask", {"q": "x" * 20_001}, 422, "the question is longer than"),
    ("/ui/users/alice/ask", {"q": "hi", "session": "\x01"}, 422, "session must not contain control characters"),
    ("/ui", {"q": "x" * 300}, 422, "the search is longer than"),
    ("/ui", {"page": "x"}, 422, "page must be a whole number"),
    ("/ui/users/alice/sessions/nope", {}, 404, "has no session 'nope'"),
    ("/ui/users/alice/sessions/s1/messages/nope", {}, 404, "has no message 'nope'"),
    ("/ui/users/alice/items/nope/delete", {}, 404, "has no item 'nope'"),
    ("/ui/users/alice/profile/nope/delete", {}, 404, "has no profile key 'nope'"),
    ("/ui/no/such/page", {}, 404, "Not Found"),
])
def test_bad_parameters_give_a_4xx_page_that_says_why(
    site: tuple[str, Memory], path: str, params: dict[str, str], status: int, says: str | None
) -> None:
    url, _ = site
    with client(url) as c:
        r = c.get(path, params=params)
    assert r.status_code == status, (path, params, r.text[:300])
    assert r.headers["content-type"].startswith("text/html")
    assert "Traceback" not in r.text
    if says is not None:
        assert says.replace("'", "&#39;") in error_text(r.text)


def test_login_cookie_and_user_binding(site: tuple[str, Memory]) -> None:
    url, _ = site
    with client(url, key=None, follow_redirects=False) as c:
        r = c.get("/ui/users/alice")
        assert (r.status_code, r.headers["location"]) == (303, "/ui/login?next=%2Fui%2Fusers%2Falice")
        r = c.post("/ui/login", data={"key": "wrong", "next": "/ui"})
        assert r.status_code == 401 and "unknown API key" in error_text(r.text)
        r = c.post("/ui/login", data={"key": ALICE_KEY, "next": "https://evil.example/"})
        assert (r.status_code, r.headers["location"]) == (303, "/ui")  # never an open redirect
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        assert ALICE_KEY not in cookie  # the cookie holds an HMAC of the key, not the key
        assert c.get("/ui/users/alice").status_code == 200
        r = c.get("/ui/users/bob")
        assert r.status_code == 403 and "bound to another user" in error_text(r.text)
        assert c.get("/ui/users/bob/ask", params={"q": "hi"}).status_code == 403
        users = c.get("/ui").text
        assert "/ui/users/alice" in users and "/ui/users/bob" not in users
        c.post("/ui/logout")
        assert c.get("/ui/users/alice").status_code == 303
        c.cookies.set("hmem_ui", "forged", path="/ui")
        assert c.get("/ui/users/alice").status_code == 303


def _token(html: str) -> str:
    found = re.search(r'name="token" value="([0-9a-f]+)"', html)
    assert found
    return found.group(1)


def test_deletes_need_the_confirm_page_and_go_through_memory(site: tuple[str, Memory]) -> None:
    url, mem = site
    fact = mem.remember("alice", "Alice owns a red bicycle", kind="fact").item
    mem.profile.set("alice", "pet", "cat")
    with client(url, follow_redirects=False) as c:
        item_path = f"/ui/users/alice/items/{fact.id}/delete"
        # Without the confirm page's token (a forged cross-site form), nothing is deleted.
        for token in ("", "0" * 64):
            assert c.post(item_path, data={"token": token}).status_code == 403
        assert mem.items("alice", ids=[fact.id])
        page = c.get(item_path)
        assert page.status_code == 200 and "Alice owns a red bicycle" in page.text
        r = c.post(item_path, data={"token": _token(page.text)})
        assert (r.status_code, r.headers["location"]) == (303, "/ui/users/alice?done=item")
        assert mem.items("alice", ids=[fact.id]) == []
        assert c.post(item_path, data={"token": _token(page.text)}).status_code == 404  # already gone

        key_path = "/ui/users/alice/profile/pet/delete"
        r = c.post(key_path, data={"token": _token(c.get(key_path).text)})
        assert r.status_code == 303
        assert mem.profile.get("alice", "pet") is None or not mem.profile.get("alice", "pet").is_current  # type: ignore[union-attr]
        assert [h.value for h in mem.profile.history("alice", "pet")] == ["cat", None]  # history keeps the deletion

        # A token is bound to its page: the item page's token cannot forget a user.
        assert c.post("/ui/users/bob/forget", data={"token": _token(page.text)}).status_code == 403
        assert "bob" in mem.users()
        r = c.post("/ui/users/bob/forget", data={"token": _token(c.get("/ui/users/bob/forget").text)})
        assert (r.status_code, r.headers["location"]) == (303, "/ui")
        assert "bob" not in mem.users() and mem.stats("bob")["items"] == 0


def test_a_user_bound_key_cannot_delete_for_another_user(site: tuple[str, Memory]) -> None:
    url, mem = site
    mem.add("carol", "c1", [{"role": "user", "content": "Carol here."}])
    with client(url, key=ADMIN_KEY) as admin:
        token = _token(admin.get("/ui/users/carol/forget").text)
    with client(url, key=ALICE_KEY) as alice:
        assert alice.get("/ui/users/carol/forget").status_code == 403
        assert alice.post("/ui/users/carol/forget", data={"token": token}).status_code == 403
    assert "carol" in mem.users()


def test_superseded_facts_show_beside_their_newer_version_linked_both_ways(site: tuple[str, Memory]) -> None:
    url, mem = site
    mem.add("carol", "c1", [{"role": "user", "content": "I live in Leeds.", "id": "c1m1"}])
    mem.add("carol", "c2", [{"role": "user", "content": "We just moved to York!", "id": "c2m1"}])
    versions = [it for it in mem.items("carol") if it.metadata.get("claim_key") == "profile:user:location"]
    leeds, york = sorted(versions, key=lambda it: it.created_at)
    assert leeds.metadata["superseded_by"] == york.id and york.metadata["supersedes"] == leeds.id
    with client(url) as c:
        user_page = c.get("/ui/users/carol").text
        old_session = c.get("/ui/users/carol/sessions/c1").text
        new_message = c.get("/ui/users/carol/sessions/c2/messages/c2m1").text
    # Both versions on the user page, the old one marked and pointing at the new one.
    assert f'<tr id="item-{leeds.id}" class="superseded">' in user_page and f'id="item-{york.id}"' in user_page
    assert f'superseded by <a href="#item-{york.id}">' in user_page and f'supersedes <a href="#item-{leeds.id}">' in user_page
    # A page that shows one version names the other, with its text.
    assert "superseded by" in old_session and york.text in old_session
    assert "supersedes" in new_message and leeds.text in new_message


def test_ask_without_a_budget_says_why_the_recalled_tier_stopped_and_shows_each_chance(
        site: tuple[str, Memory]) -> None:
    url, mem = site
    # More notes than the default memory budget holds, so something must stop the tier.
    for i in range(200):
        mem.remember("carol", f"Note {i}: the choir rehearsal moved to hall {i} on {['Monday', 'Friday'][i % 2]}.")
    mem.add("carol", "c1", [{"role": "user", "content": "Hello again."}])  # the page asks within a session
    mem.flush()  # vectors are written behind the adds
    with client(url) as c:  # the admin key
        page = c.get("/ui/users/carol/ask", params={"q": "Where is the choir rehearsal now?"})
    assert page.status_code == 200, page.text[:300]
    assert re.search(r"stopped: (next item below the calibrated threshold \(estimated chance \d+\.\d%\)"
                     r"|the default memory budget was used)", page.text), page.text[page.text.find('data-tier="recalled"'):][:1500]
    assert re.search(r'data-label="chance"[^>]*>\d+\.\d%<', page.text)
