"""``HMEM_REDIS_WAIT_REPLICAS``: what a write does when its replicas do not confirm it.

The single Redis on 127.0.0.1:6379 has no replica, so with ``WAIT 1`` every write of
every store (session append, summary put, profile set, item put) lands on the master
but cannot be confirmed: each must raise ``BackendUnavailable`` that says so and what to
do, within the WAIT timeout. With ``WAIT 0`` (the default) the same writes succeed. The
cluster paths (a replica that confirms) run the whole contract suites
(tests/contract, ``-k ClusterWait``) and the failover test (test_redis_failover.py).
Settings: bad values of both variables are a ``ConfigError`` naming the variable.
"""

from __future__ import annotations

import time

import pytest
import redis
from redis_helpers import redis_prefix  # noqa: F401  (fixture)

from hmem.backends.redis.client import NO_WAIT, ReplicaWait
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.profile import RedisProfileStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.backends.redis.summaries import RedisSummaryStore
from hmem.config import Settings
from hmem.errors import BackendUnavailable, ConfigError
from hmem.types import MemoryItem, Message, SessionSummary

pytestmark = pytest.mark.integration


def _writes(client: redis.Redis, prefix: str, wait: ReplicaWait) -> dict[str, object]:
    """One write per store, as callables (run by the test)."""
    sessions = RedisSessionStore(client, prefix=prefix, wait=wait)
    summaries = RedisSummaryStore(client, prefix=prefix, wait=wait)
    profile = RedisProfileStore(client, prefix=prefix, wait=wait)
    items = RedisItemStore(client, prefix=prefix, wait=wait)
    return {
        "session append": lambda: sessions.append("u1", "s1", [Message(role="user", content="hi")]),
        "summary put": lambda: summaries.put(SessionSummary("u1", "s1", "User said hi.", None, 0, "extractive")),
        "profile set": lambda: profile.set("u1", "home town", "Lisbon"),
        "item put": lambda: items.put([MemoryItem(id="i1", user_id="u1", text="likes tea")]),
        # Deletes too: a forgotten user must stay forgotten after a failover.
        "summary delete": lambda: summaries.delete("u1", "s1"),
        "profile delete": lambda: profile.delete("u1", "home town"),
        "profile delete_user": lambda: profile.delete_user("u1"),
        "item delete": lambda: items.delete("u1", ["i1"]),
        "items delete_user": lambda: items.delete_user("u1"),
        "session delete": lambda: sessions.delete("u1", "s1"),
    }


def test_writes_without_a_replica_to_confirm_them_raise_backend_unavailable(
    redis_prefix: tuple[redis.Redis, str],  # noqa: F811
) -> None:
    client, prefix = redis_prefix
    assert client.info("replication")["connected_slaves"] == 0  # the premise: nobody can confirm
    for name, write in _writes(client, prefix, ReplicaWait(1, 50)).items():
        started = time.monotonic()
        with pytest.raises(BackendUnavailable, match=r"only 0 of 1 replica\(s\) confirmed it within 50 ms") as caught:
            write()  # type: ignore[operator]
        assert time.monotonic() - started < 2.0, f"{name} waited past the WAIT timeout"
        assert "HMEM_REDIS_WAIT_REPLICAS" in str(caught.value), name
    # The writes did land on the master (WAIT only reports): a caller's retry is safe;
    # the deletes ran last, so everything written is gone again.
    assert RedisSessionStore(client, prefix=prefix).load("u1", "s1").version == 0
    assert RedisProfileStore(client, prefix=prefix).all("u1") == []
    assert RedisSummaryStore(client, prefix=prefix).get("u1", "s1") is None


def test_without_wait_the_same_writes_succeed(redis_prefix: tuple[redis.Redis, str]) -> None:  # noqa: F811
    client, prefix = redis_prefix
    writes = _writes(client, prefix, NO_WAIT)
    for name, write in writes.items():
        if "delete" not in name:
            write()  # type: ignore[operator]
    assert RedisItemStore(client, prefix=prefix).count("u1") == 1
    for name, write in writes.items():
        if "delete" in name:
            write()  # type: ignore[operator]
    assert RedisItemStore(client, prefix=prefix).count("u1") == 0


# HMEM_REDIS_WAIT_REPLICAS is an environment setting; redis_wait_timeout_ms and
# redis_timeout_s are tuning settings (keywords here, or the HMEM_CONFIG file).
@pytest.mark.parametrize(("env", "overrides", "names"), [
    ({"HMEM_REDIS_WAIT_REPLICAS": "-1"}, {}, "HMEM_REDIS_WAIT_REPLICAS"),
    ({"HMEM_REDIS_WAIT_REPLICAS": "one"}, {}, "HMEM_REDIS_WAIT_REPLICAS"),
    ({"HMEM_REDIS_WAIT_REPLICAS": "1.5"}, {}, "HMEM_REDIS_WAIT_REPLICAS"),
    ({}, {"redis_wait_timeout_ms": "0"}, "^redis_wait_timeout_ms"),
    # not below the socket timeout (5 s by default), with WAIT on
    ({"HMEM_REDIS_WAIT_REPLICAS": "1"}, {"redis_wait_timeout_ms": "5000"}, "^redis_wait_timeout_ms"),
    ({"HMEM_REDIS_WAIT_REPLICAS": "1"}, {"redis_timeout_s": "0.5"}, "^redis_wait_timeout_ms"),
])
def test_bad_wait_settings_are_config_errors(env: dict[str, str], overrides: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        Settings.from_env(env, **overrides)


def test_wait_settings_reach_the_stores() -> None:
    settings = Settings.from_env({"HMEM_REDIS_WAIT_REPLICAS": "2"}, redis_wait_timeout_ms="250")
    assert (settings.redis_wait_replicas, settings.redis_wait_timeout_ms) == (2, 250)
    assert Settings().redis_wait_replicas == 0  # off by default
    # With WAIT off, a short socket timeout does not trip over the (unused) WAIT timeout.
    assert Settings.from_env({}, redis_timeout_s="0.5").redis_timeout_s == 0.5
    for bad in (-1, True, 1.0):
        with pytest.raises(ConfigError, match=r"ReplicaWait\.replicas"):
            ReplicaWait(bad)  # type: ignore[arg-type]
