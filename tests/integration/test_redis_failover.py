"""A Redis Cluster master killed mid-load (issue #17): what a ``Memory`` caller sees, and
what survives.

Each test starts its own six-node cluster (tests/cluster_helpers.py), so the kill cannot
disturb other tests. A writer thread appends one acknowledged message per ``Memory.add``
(sessions, archived turns into items, extraction: every Redis tier writes) for one user,
through one ``Memory`` on the cluster. Meanwhile the test makes the replica of the
master serving that user's slot fall behind (``lag_replicas``: it sleeps and loses its
link, so the master's last writes exist on the master only, as under replication lag;
loopback replication is otherwise too fast to ever lose a write), SIGKILLs that master
0.3 s later, waits until its replica is promoted, restarts the
killed node (it rejoins as the new master's replica) and waits until the writer has had
20 more writes acknowledged. Then it counts:

- acknowledged: ``add`` returned; refused: ``add`` raised ``BackendUnavailable``;
- present: acknowledged ids found in the session; lost: acknowledged ids missing;
  archive_lost: acknowledged ids whose archived turn (an item) is missing;
- in doubt: refused ids that are present anyway (the write landed, the reply did not);
- duplicated: message ids stored twice in the session, or archived twice as turns.

Asserted: the caller saw no error but ``BackendUnavailable`` (no raw redis-py exception),
the same ``Memory`` recovered, present + lost == acknowledged, nothing duplicated; with
``HMEM_REDIS_WAIT_REPLICAS=1`` nothing acknowledged was lost. Without ``WAIT`` the loss
is printed, not asserted (it depends on how many writes fit in the lag window).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cluster_helpers import (
    HashEmbedder,
    delete_prefix,
    kill_node,
    lag_replicas,
    master_port_of,
    restart_node,
    running_cluster,
    wait_for_failover,
)

from hmem.backends.redis.client import connect_redis
from hmem.config import Settings
from hmem.errors import BackendUnavailable
from hmem.memory import Memory

pytestmark = [pytest.mark.integration, pytest.mark.slow]

USER, SESSION = "failover-user", "s1"
_BEFORE_KILL = 40  # acknowledged writes before the master dies
_AFTER_PROMOTION = 20  # acknowledged writes after the promotion that prove recovery
_DEADLINE_S = 45.0


@dataclass
class Writer:
    """Appends one message per ``add`` until told to stop; records every outcome."""

    memory: Memory
    acknowledged: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    unexpected: list[BaseException] = field(default_factory=list)
    after_promotion: list[str] = field(default_factory=list)
    first_refused_at: float | None = None
    first_ack_after_refusal_at: float | None = None
    promoted: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            mid = f"m{i:05d}"
            i += 1
            try:
                self.memory.add(USER, SESSION, [{"role": "user", "content": f"note {i}: code word w{i}", "id": mid}])
            except BackendUnavailable:
                self.refused.append(mid)
                self.first_refused_at = self.first_refused_at or time.monotonic()
                time.sleep(0.02)  # a caller's retry pause
                continue
            except Exception as exc:  # what the test forbids: recorded, asserted on below
                self.unexpected.append(exc)
                time.sleep(0.02)
                continue
            self.acknowledged.append(mid)
            if self.first_refused_at is not None and self.first_ack_after_refusal_at is None:
                self.first_ack_after_refusal_at = time.monotonic()
            if self.promoted.is_set():
                self.after_promotion.append(mid)


def _until(what: str, ready: object) -> None:
    assert callable(ready)
    deadline = time.monotonic() + _DEADLINE_S
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _failover_run(tmp_path: Path, wait_replicas: int) -> dict[str, int | float]:
    with running_cluster() as cluster:
        prefix = f"hmemtest-{secrets.token_hex(4)}"
        env = {
            "HMEM_REDIS_URL": cluster.url,
            "HMEM_REDIS_PREFIX": prefix,
            "HMEM_DATA_DIR": str(tmp_path),
            "HMEM_VECTORS": "memory",
            "HMEM_COMPACTION": "off",  # the session keeps every message: presence is read from it
            "HMEM_REDIS_WAIT_REPLICAS": str(wait_replicas),
        }
        victim = master_port_of(cluster, f"{prefix}:{{{USER}}}:x")
        settings = Settings.from_env(env, redis_wait_timeout_ms=1000)  # a tuning setting: not from the env
        with Memory.from_settings(settings, embedder=HashEmbedder()) as memory:
            writer = Writer(memory)
            thread = threading.Thread(target=writer.run, daemon=True)
            thread.start()
            try:
                _until(f"{_BEFORE_KILL} writes", lambda: len(writer.acknowledged) >= _BEFORE_KILL)
                sleepers = lag_replicas(victim, 0.8)
                lagged_from = len(writer.acknowledged)
                time.sleep(0.3)  # writes acknowledged now live on the master only (without WAIT)
                acked_in_lag = len(writer.acknowledged) - lagged_from
                killed_at = time.monotonic()
                kill_node(cluster, victim)
                for sleeper in sleepers:
                    sleeper.wait(timeout=10)
                promotion_s = wait_for_failover(cluster, victim)
                writer.promoted.set()
                restart_node(cluster, victim)  # the new master gets a replica again (WAIT=1 needs one)
                _until(f"{_AFTER_PROMOTION} writes after the promotion (recovery)",
                       lambda: len(writer.after_promotion) >= _AFTER_PROMOTION or writer.unexpected)
            finally:
                writer.stop.set()
                thread.join(timeout=30)
            stored = Counter(m.id for m in memory.history(USER, SESSION))
            archived = Counter(it.source_message_id for it in memory.items(USER, kinds="turn"))
        client = connect_redis(cluster.url)
        delete_prefix(client, prefix)  # type: ignore[arg-type]
        client.close()

    acknowledged = writer.acknowledged
    present = [mid for mid in acknowledged if mid in stored]
    lost = [mid for mid in acknowledged if mid not in stored]
    counts: dict[str, int | float] = {
        "acknowledged": len(acknowledged),
        "present": len(present),
        "lost": len(lost),
        "archive_lost": sum(1 for mid in acknowledged if archived[mid] == 0),  # its archived turn is missing
        "refused": len(writer.refused),
        "acknowledged_while_lagging": acked_in_lag,
        "in_doubt_present": sum(1 for mid in writer.refused if mid in stored),
        "duplicated": sum(1 for n in stored.values() if n > 1) + sum(1 for n in archived.values() if n > 1),
        "promotion_s": round(promotion_s, 2),
        "unavailable_s": round((writer.first_ack_after_refusal_at or killed_at) - killed_at, 2),
    }
    print(f"\nfailover with HMEM_REDIS_WAIT_REPLICAS={wait_replicas}: {counts}")
    assert not writer.unexpected, f"callers saw other errors than BackendUnavailable: {writer.unexpected[:3]!r}"
    assert writer.refused, "no write was refused: the kill did not hit the user's master, so nothing was tested"
    assert len(writer.after_promotion) >= _AFTER_PROMOTION, "the same Memory did not recover after the promotion"
    assert counts["present"] + counts["lost"] == counts["acknowledged"]
    assert counts["duplicated"] == 0, (stored.most_common(3), archived.most_common(3))
    return counts


def test_failover_without_wait_recovers_and_duplicates_nothing(tmp_path: Path) -> None:
    _failover_run(tmp_path, wait_replicas=0)


def test_failover_with_wait_loses_no_acknowledged_write(tmp_path: Path) -> None:
    counts = _failover_run(tmp_path, wait_replicas=1)
    # Each acknowledged add() waited for the replica: its message and its archived turn
    # (archive_turns="on_add") survive the promotion.
    assert counts["lost"] == 0 and counts["archive_lost"] == 0, counts
