"""Redacting text that may hold a URL or a configured secret (issue 32, defects 2 and 5):
the pieces behind every error message, log line and relayed upstream error."""

from __future__ import annotations

import json
import logging

import pytest

from hmem._secrets import mask_text, mask_urls_in_logs, redact, redact_json, url_secrets
from hmem.config import Settings, secrets_in_env
from hmem.server._upstream_errors import upstream_error
from hmem.server.proxy import ProxyOptions


@pytest.mark.parametrize(("text", "shown"), [
    ("POST http://h:8000/v1/embeddings?api_key=s3cret&model=m failed",
     "POST http://h:8000/v1/embeddings?api_key=****&model=m failed"),
    ("to 'https://user:s3cret@llm.internal/v1' (timeout)", "to 'https://user:****@llm.internal/v1' (timeout)"),
    ("no route /v1/chat/completions?token=s3cret", "no route /v1/chat/completions?token=****"),
    ("redis://:s3cret@cache:6379/0 and https://h/v1?jwt=s3cret", "redis://:****@cache:6379/0 and https://h/v1?jwt=****"),
    ("nothing secret here: max_tokens=5 at http://h/v1?model=m", "nothing secret here: max_tokens=5 at http://h/v1?model=m"),
])
def test_mask_text_hides_the_secrets_of_every_url_in_a_text(text: str, shown: str) -> None:
    assert mask_text(text) == shown


def test_redact_replaces_configured_values_wherever_they_stand() -> None:
    said = "Incorrect API key provided: sk-live-12345. (sent as sk-live-12345, or sk-live-12345%21 encoded)"
    assert redact(said, ["sk-live-12345", "sk-live-12345!"]) == (
        "Incorrect API key provided: ****. (sent as ****, or **** encoded)")
    assert redact("a key k and a key kk", ["k", "kk"]) == "a key k and a key kk"  # too short to be worth it


def test_url_secrets_are_what_a_client_sends_for_the_url() -> None:
    found = url_secrets("http://user:p%21ss@h/v1?api_key=k3y&token=t0k&model=m")
    assert {"p%21ss", "p!ss", "k3y", "t0k", "dXNlcjpwIXNz"} == set(found)  # base64 of user:p!ss (Basic auth)
    assert "m" not in found and url_secrets("sqlite") == ()


def test_redact_json_scrubs_keys_and_values_at_any_depth() -> None:
    body = {"error": {"message": "bad key sk-12345", "received": {"Authorization": "Bearer sk-12345"},
                      "list": ["sk-12345", 3, None, True], "sk-12345": "as a key"}}
    assert "sk-12345" not in json.dumps(redact_json(body, ["sk-12345"]))


def test_every_secret_setting_is_a_secret_value() -> None:
    settings = Settings.from_env({
        "HMEM_LLM_API_KEY": "llm-key-1", "HMEM_EMBED_API_KEY": "emb-key-2", "HMEM_API_KEYS": "adm-key-3,ali-key-4:alice",
        "HMEM_REDIS_URL": "redis://:redis-pw-5@127.0.0.1:6379/0", "HMEM_LLM_BASE_URL": "https://h/v1?token=tok-6",
        "HMEM_EMBED_BASE_URL": "https://u:emb-pw-7@h/v1", "HMEM_VECTORS": "https://chroma:8000/?api_key=chr-8",
        "HMEM_EMBED_PROVIDER": "openai", "HMEM_EMBED_MODEL": "e"})
    values = settings.secret_values()
    for secret in ("llm-key-1", "emb-key-2", "adm-key-3", "ali-key-4", "redis-pw-5", "tok-6", "emb-pw-7", "chr-8"):
        assert secret in values
    assert "alice" not in values and "e" not in values


def test_secrets_in_env_also_when_the_settings_do_not_read() -> None:
    # Tried: a bad env setting (HMEM_VECTORS=pinecone) and a tuning variable, refused as
    # one (HMEM_BUFFER_TOKENS=lots): neither makes a Settings.
    for bad in ({"HMEM_VECTORS": "pinecone"}, {"HMEM_BUFFER_TOKENS": "lots"}):
        env = {"HMEM_LLM_API_KEY": "llm-key-1", **bad, "MY_UPSTREAM": "up-key-2",
               "HMEM_LLM_BASE_URL": "https://h/v1?api_key=q-key-3"}
        assert secrets_in_env(env, names=["MY_UPSTREAM"]) == {"llm-key-1", "up-key-2", "q-key-3"}


def test_the_http_clients_log_lines_are_masked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    mask_urls_in_logs("hmem.tests.client")
    mask_urls_in_logs("hmem.tests.client")  # idempotent
    logging.getLogger("hmem.tests.client").info('HTTP Request: %s %s "%s"', "POST",
                                                "http://u:s3cret@h/v1/embeddings?api_key=s3cret", "HTTP/1.1 200 OK")
    assert caplog.messages == ['HTTP Request: POST http://u:****@h/v1/embeddings?api_key=**** "HTTP/1.1 200 OK"']
    assert len(logging.getLogger("hmem.tests.client").filters) == 1


def test_an_upstream_error_is_summarised_and_scrubbed() -> None:
    secret = "sk-upstream-0123456789"
    echoed = {"error": {"message": "x" * 490 + f" bad key {secret}", "type": "invalid_request_error",
                        "code": "invalid_api_key", "param": None, "headers": {"authorization": f"Bearer {secret}"}}}
    body = json.loads(bytes(upstream_error(401, echoed, [secret]).body))["error"]
    assert body["details"]["upstream"] == {"message": "x" * 490 + " bad key *", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}  # scrubbed, then cut: no head of the key
    assert "sk-upstream" not in json.dumps(body)
    for answer, message in (({"error": "rate limited"}, "rate limited"), ({"detail": "no model m"}, "no model m"),
                            ([1, 2], "no error message"), ({"error": {"message": 7}}, "no error message")):
        shown = json.loads(bytes(upstream_error(400, answer, []).body))["error"]
        assert shown["message"] == f"the upstream answered 400: {message}"


def test_proxy_options_never_show_the_upstream_password() -> None:
    with pytest.raises(Exception, match="must be an http") as info:
        ProxyOptions(upstream="ftp://u:s3cret@h/v1?api_key=s3cret")
    assert "s3cret" not in str(info.value)
    options = ProxyOptions(upstream="https://u:pw-1234@h/v1?key=k-5678", api_key="sk-9012")
    assert {"pw-1234", "k-5678", "sk-9012"} <= set(options.secret_values())
