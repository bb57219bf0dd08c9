"""hmem on a real Redis Cluster (three masters, three replicas, started by
tests/cluster_helpers.py), beyond the contract suites in tests/contract/:

1. connecting: a ``redis://`` URL of any node is detected as a cluster, the
   ``redis+cluster://`` form asks for one explicitly, the single Redis on 6379 stays
   a plain client, and a cluster URL naming a database other than 0 is refused;
2. one slot per user: after a ``Memory`` on the cluster has written every tier
   (sessions, summaries, profile, items), every key of a user hashes to one slot,
   and the users are spread over more than one master (so the check could fail);
3. a ``put`` of several users' items in one call (different slots) lands whole;
4. a plain client forced onto a cluster node (``check=False``) fails with advice
   to use ``redis+cluster://``, not with a bare ``MOVED``.

Failover (a master killed mid-load) and ``WAIT`` for replicas: test_redis_failover.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cluster_helpers import (  # noqa: F401
    ClusterInfo,
    HashEmbedder,
    cluster_client_prefix,
    delete_prefix,
    redis_cluster,
)
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis_helpers import REDIS_URL

from hmem.backends.redis.client import client_label, connect_redis, is_cluster
from hmem.backends.redis.items import RedisItemStore
from hmem.backends.redis.sessions import RedisSessionStore
from hmem.config import Settings
from hmem.errors import BackendUnavailable, ConfigError
from hmem.memory import Memory
from hmem.types import MemoryItem, Message

pytestmark = pytest.mark.integration

# Ids chosen to stress the hash tag: braces and colons must not end the tag early.
USERS = ["alice", "bob", "we}ird:id", "{carol}", "用户七", "dave%7D", "erin", "frank"]


@pytest.fixture
def cluster_prefix(redis_cluster: ClusterInfo) -> Iterator[tuple[RedisCluster, str]]:  # noqa: F811
    with cluster_client_prefix(redis_cluster) as pair:
        yield pair


def test_startup_time_is_reported(redis_cluster: ClusterInfo) -> None:  # noqa: F811
    # CI budget (issue #17): the cluster tests run in well under a minute.
    print(f"\nRedis Cluster on ports {redis_cluster.ports} started in {redis_cluster.startup_seconds:.2f} s")
    assert redis_cluster.startup_seconds < 30


def test_node_url_is_detected_and_cluster_scheme_is_explicit(redis_cluster: ClusterInfo) -> None:  # noqa: F811
    detected = connect_redis(redis_cluster.url)
    explicit = connect_redis(redis_cluster.url.replace("redis://", "redis+cluster://"))
    single = connect_redis(REDIS_URL)
    try:
        assert is_cluster(detected) and is_cluster(explicit) and not is_cluster(single)
        # The client found all three masters from one node's URL.
        assert len(detected.get_primaries()) == 3  # type: ignore[union-attr]
        assert client_label(explicit).startswith("redis+cluster://127.0.0.1:")
        assert client_label(single) == "redis://127.0.0.1:6379/0"
    finally:
        for client in (detected, explicit, single):
            client.close()


@pytest.mark.parametrize("suffix", ["/1", "/3", "?db=2"])
def test_cluster_url_with_a_database_other_than_0_is_refused(redis_cluster: ClusterInfo, suffix: str) -> None:  # noqa: F811
    port = redis_cluster.ports[0]
    for url in (f"redis+cluster://127.0.0.1:{port}{suffix}", f"redis://127.0.0.1:{port}{suffix}"):
        with pytest.raises(ConfigError, match="database 0"):
            connect_redis(url)


def test_unreachable_cluster_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailable, match=r"redis\+cluster://127\.0\.0\.1:1"):
        connect_redis("redis+cluster://127.0.0.1:1", socket_connect_timeout=0.5, retries=0)


def test_settings_accept_the_cluster_url_form() -> None:
    settings = Settings.from_env({"HMEM_REDIS_URL": "redis+cluster://10.0.0.5:7000"})
    assert (settings.sessions, settings.items) == ("redis+cluster://10.0.0.5:7000",) * 2
    with pytest.raises(ConfigError, match=r"^sessions='redis\+clusterr://"):
        Settings(sessions="redis+clusterr://10.0.0.5:7000")


def test_every_key_of_a_user_is_in_one_slot(
    redis_cluster: ClusterInfo, cluster_prefix: tuple[RedisCluster, str], tmp_path: Path  # noqa: F811
) -> None:
    client, prefix = cluster_prefix
    env = {
        "HMEM_REDIS_URL": redis_cluster.url,
        "HMEM_REDIS_PREFIX": prefix,
        "HMEM_DATA_DIR": str(tmp_path),
        "HMEM_VECTORS": "memory",
    }
    # buffer_tokens small: compaction archives turns and writes summaries
    settings = Settings.from_env(env, buffer_tokens=120, summary_min_messages=4)
    with Memory.from_settings(settings, embedder=HashEmbedder()) as mem:
        for user in USERS:
            for i in range(6):
                mem.add(user, "s1", [
                    {"role": "user", "content": f"I moved to city number {i} and like tea {i}.", "id": f"q{i}"},
                    {"role": "assistant", "content": f"Noted: city {i}, tea {i}.", "id": f"a{i}"},
                ])
            mem.remember(user, f"{user} prefers green tea")
            mem.profile.set(user, "home town", "Lisbon")
        mem.flush()
        slots_by_tag: dict[str, set[int]] = defaultdict(set)
        kinds: set[str] = set()
        for raw in client.scan_iter(match=f"{prefix}:*", count=1000):
            key = raw.decode()
            tag = key[len(prefix) + 2 : key.index("}")]
            slots_by_tag[tag].add(key_slot(raw))
            kinds.add(key[key.index("}") + 2 :].split(":")[0])
        # Each tier wrote something, or the slot check would prove less than it claims.
        assert {"s", "sessions", "sum", "p", "it"} <= kinds, kinds
        assert len(slots_by_tag) == len(USERS)
        assert all(len(slots) == 1 for slots in slots_by_tag.values()), slots_by_tag
        masters = {client.get_node_from_key(f"{prefix}:{{{tag}}}:x").name for tag in slots_by_tag}
        assert len(masters) > 1, "all test users hash to one master; pick other ids"
        # A second app instance (its own client) reads what the first wrote.
        with Memory.from_settings(Settings.from_env({**env, "HMEM_DATA_DIR": str(tmp_path / "b")}),
                                  embedder=HashEmbedder()) as other:
            for user in USERS:
                assert other.history(user, "s1")[-1].id == "a5"
                assert other.profile.get(user, "home town") is not None
                assert any("green tea" in it.text for it in other.items(user))
            erased = other.forget_user("we}ird:id")
        assert sum(erased.values()) > 0
        # Only the items' change counter stays, on purpose: a lexical cache elsewhere must
        # never see a restarted counter (hmem/backends/redis/items.py).
        left = {raw.decode() for raw in client.scan_iter(match=f"{prefix}:{{we%7Dird%3Aid}}:*")}
        assert left <= {f"{prefix}:{{we%7Dird%3Aid}}:it:gen"}, left


def test_put_of_several_users_lands_whole_on_a_cluster(cluster_prefix: tuple[RedisCluster, str]) -> None:
    client, prefix = cluster_prefix
    store = RedisItemStore(client, prefix=prefix)
    items = [MemoryItem(user_id=user, text=f"{user} fact {i}", kind="fact", id=f"{i}") for user in USERS
             for i in range(3)]
    store.put(items)
    for user in USERS:
        assert sorted(store.get(user, ["0", "1", "2"])) == ["0", "1", "2"]
        assert store.generation(user) > 0
    # The change feed of the shared BM25 cache reads in MULTI/EXEC: one slot each.
    generation, snap = store.snapshot("alice")
    assert generation == store.generation("alice") and sorted(it.id for it in snap) == ["0", "1", "2"]
    assert store.delete("alice", ["1"]) == 1
    assert store.changes_since("alice", generation) == (store.generation("alice"), {"1"})
    slots = {key_slot(f"{prefix}:{{{u}}}".encode()) for u in ("alice", "bob", "erin", "frank")}
    assert len(slots) > 1  # the batch really spanned slots


def test_plain_client_on_a_cluster_node_says_to_use_the_cluster_url(
    redis_cluster: ClusterInfo, cluster_prefix: tuple[RedisCluster, str]  # noqa: F811
) -> None:
    _, prefix = cluster_prefix
    plain = connect_redis(redis_cluster.url, check=False)
    assert isinstance(plain, redis.Redis)
    store = RedisSessionStore(plain, prefix=prefix)
    try:
        # Some of these users live on another master: their write is redirected (MOVED).
        with pytest.raises(BackendUnavailable, match=r"redis\+cluster://"):
            for user in USERS:
                store.append(user, "s1", [Message(role="user", content="hi")])
    finally:
        plain.close()
