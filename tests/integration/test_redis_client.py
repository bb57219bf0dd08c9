"""Connecting to Redis: URL masking, clear errors within the timeout (refused credentials
are a settings error, not an outage), the explicit fallback, and the key layout (one
Cluster slot per user, prefix respected)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import redis
from redis.crc import key_slot
from redis_helpers import REDIS_URL, redis_prefix  # noqa: F401  (fixture)
from redis_server import RedisServer

from hmem.backends.memory.sessions import MemorySessionStore
from hmem.backends.redis.client import connect_redis, mask_url
from hmem.backends.redis.fallback import open_redis_stores
from hmem.backends.redis.profile import RedisProfileStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.backends.redis.summaries import RedisSummaryStore
from hmem.errors import BackendUnavailable, ConfigError
from hmem.types import Message, SessionSummary


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://:s3cret@host:6379/0", "redis://:****@host:6379/0"),
        ("redis://user:s3cret@host:6379/2", "redis://user:****@host:6379/2"),
        ("rediss://u:p%40ss@host:6380", "rediss://u:****@host:6380"),
        ("redis://s3cret@host:6379", "redis://****@host:6379"),
        ("redis://host:6379/0?password=s3cret&db=1", "redis://host:6379/0?password=****&db=1"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://:s3#cret@host:6379/0", "redis://:****@host:6379/0"),
        ("redis://:s3?cr/et@host:6379/0", "redis://:****@host:6379/0"),
        ("redis://host:6379/0?db=1&token=s3cret", "redis://host:6379/0?db=1&token=****"),
    ],
)
def test_mask_url_hides_passwords(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    assert "s3cret" not in mask_url(url) and "cr" not in mask_url(url).split("@")[0]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_redis_fails_fast_with_masked_url_and_advice() -> None:
    url = f"redis://:hunter2@127.0.0.1:{closed_port()}/0"
    start = time.perf_counter()
    with pytest.raises(BackendUnavailable) as info:
        connect_redis(url, socket_connect_timeout=2.0)
    elapsed = time.perf_counter() - start
    message = str(info.value)
    assert "hunter2" not in message and ":****@127.0.0.1" in message
    assert "Start it" in message
    assert elapsed < 2.0, f"took {elapsed:.2f}s: refused connections must not wait for the timeout"


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "127.0.0.1:6379", "", "redis://host:notaport/0"])
def test_malformed_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError):
        connect_redis(url)


def test_fallback_is_explicit_and_warns_about_data_loss(caplog: pytest.LogCaptureFixture) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    with pytest.raises(BackendUnavailable):
        open_redis_stores(url)  # the default: a clear error, no silent fallback
    with caplog.at_level(logging.WARNING, logger="hmem.redis"):
        stores = open_redis_stores(url, allow_fallback=True)
    assert stores.backend == "memory-fallback"
    assert isinstance(stores.sessions, MemorySessionStore)
    assert stores.sessions.append("u1", "s1", [Message(role="user", content="hi")]) == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and "NOT survive a restart" in warnings[0].getMessage()
    stores.close()


def test_open_redis_stores_uses_redis_when_reachable(redis_prefix) -> None:  # noqa: F811
    _, prefix = redis_prefix
    stores = open_redis_stores(REDIS_URL, prefix=prefix)
    try:
        assert stores.backend == "redis"
        assert stores.sessions.append("u1", "s1", [Message(role="user", content="hi")]) == 1
    finally:
        stores.close()


@pytest.mark.parametrize("user", ["alice", "we}i{rd:user", "}", "{x}", "用户 1"])
def test_all_keys_of_a_user_share_one_cluster_slot_under_the_prefix(redis_prefix, user: str) -> None:  # noqa: F811
    client, prefix = redis_prefix
    sessions = RedisSessionStore(client, prefix=prefix, ttl_seconds=60)
    sessions.append(user, "s:1", [Message(role="user", content="hi", id="m1")])
    sessions.append(user, "s}2", [Message(role="user", content="hi", id="m1")])
    RedisSummaryStore(client, prefix=prefix, ttl_seconds=60).put(SessionSummary(user, "s:1", "text", "m1", 1, "raw"))
    profile = RedisProfileStore(client, prefix=prefix)
    profile.set(user, "home town", "Berlin")
    profile.set(user, "home town", "Paris")
    keys = [k.decode() for k in client.scan_iter(match=f"{prefix}:*")]
    assert len(keys) >= 6
    assert all(k.startswith(f"{prefix}:{{") for k in keys)
    assert len({key_slot(k.encode()) for k in keys}) == 1, keys
    assert all(0 < client.pttl(k) <= 60_000 for k in keys if ":s:" in k or ":sum:" in k or k.endswith(":sessions"))
    assert all(client.pttl(k) == -1 for k in keys if ":p:" in k)  # profiles never expire


def test_bad_prefix_is_rejected() -> None:
    client = redis.Redis()  # never used: the prefix check comes first
    for bad in ["", "a{b", "x}", " hmem"]:
        with pytest.raises(ConfigError):
            RedisSessionStore(client, prefix=bad)


PASSWORD = "right#pass/word"  # the characters that need percent-encoding in a URL


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server started with --requirepass on a spare port."""
    srv = RedisServer(Path(tmp_path_factory.mktemp("redis-auth")), password=PASSWORD)
    srv.start()
    yield srv
    srv.stop()


@pytest.mark.parametrize("userinfo", [":wrong-pass", "default:wrong-pass", "", "nobody:" + quote(PASSWORD, safe="")])
def test_refused_credentials_are_a_config_error_saying_so(auth_server: RedisServer, userinfo: str) -> None:
    url = f"redis://{userinfo}{'@' if userinfo else ''}127.0.0.1:{auth_server.port}/0"
    started = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        connect_redis(url)
    message = str(info.value)
    assert "refused the credentials" in message and "password" in message
    assert "unreachable" not in message and "Start it" not in message
    assert "wrong-pass" not in message and "pass%2Fword" not in message
    assert time.perf_counter() - started < 2.0


def test_the_right_password_connects(auth_server: RedisServer) -> None:
    client = connect_redis(auth_server.url)  # percent-encoded '#' and '/'
    try:
        assert client.ping()
    finally:
        client.close()


def test_refused_credentials_never_fall_back_to_memory(auth_server: RedisServer) -> None:
    """The fallback is for an outage; a wrong password is a mistake to fix, not to hide."""
    with pytest.raises(ConfigError, match="refused the credentials"):
        open_redis_stores(f"redis://:wrong@127.0.0.1:{auth_server.port}/0", allow_fallback=True)


def test_an_unencoded_password_is_refused_before_connecting_and_not_shown(auth_server: RedisServer) -> None:
    url = f"redis://:{PASSWORD}@127.0.0.1:{auth_server.port}/0"
    with pytest.raises(ConfigError) as info:
        connect_redis(url)
    message = str(info.value)
    assert "percent-encode" in message and f"redis://:****@127.0.0.1:{auth_server.port}/0" in message
    assert "pass" not in message.split("percent-encode", maxsplit=1)[0].replace("password", "")


def test_a_password_the_server_stops_accepting_is_reported_on_the_next_command(auth_server: RedisServer) -> None:
    client = connect_redis(auth_server.url)
    store = RedisSessionStore(client)
    assert store.append("u1", "s1", [Message(role="user", content="hi")]) == 1
    admin = redis.Redis(port=auth_server.port, password=PASSWORD)
    admin.config_set("requirepass", "rotated")
    try:
        client.connection_pool.disconnect()  # the next command opens a new connection and authenticates
        with pytest.raises(ConfigError, match="refused the credentials"):
            store.load("u1", "s1")
    finally:
        redis.Redis(port=auth_server.port, password="rotated").config_set("requirepass", PASSWORD)
        client.close()
