"""Load over HTTP with the Redis backend: 50 concurrent clients x 200 appends into
10 shared sessions, then every session is read back: no message lost, none
duplicated, and each client's messages in the order it sent them.

Compaction is off so every message stays in the buffer and the count is exact
(compaction's own no-loss guarantees are tested with the compactor). Timing lives
in ``bench/bench_server.py``, not here.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from redis_helpers import REDIS_URL, delete_prefix, new_prefix
from server_fixtures import ADMIN_KEY, fast_settings, live_server

from hmem.backends.redis.client import connect_redis

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLIENTS, REQUESTS, SESSIONS = 50, 200, 10
USER = "load-user"


@pytest.fixture
def prefix() -> Iterator[str]:
    client = connect_redis(REDIS_URL)
    name = new_prefix()
    try:
        yield name
    finally:
        delete_prefix(client, name)
        client.close()


async def _client(http: httpx.AsyncClient, n: int, failures: list[str]) -> None:
    for i in range(REQUESTS):
        session = f"s{(n + i) % SESSIONS}"
        msg = {"role": "user" if i % 2 == 0 else "assistant", "content": f"client {n} message {i}", "id": f"c{n}-{i}"}
        for _attempt in range(3):
            try:
                r = await http.post(f"/v1/users/{USER}/sessions/{session}/messages", json={"messages": [msg]})
            except httpx.TransportError as exc:  # a retry is safe: it lands once or answers duplicate_id
                failures.append(f"transport {exc!r}")
                continue
            if r.status_code == 201 or (r.status_code == 409 and r.json()["error"]["type"] == "duplicate_id"):
                break
            failures.append(f"{r.status_code} {r.text[:200]}")
        else:
            failures.append(f"gave up on {msg['id']}")


async def _run(url: str) -> list[str]:
    failures: list[str] = []
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=120.0,
                                 limits=limits) as http:
        await asyncio.gather(*(_client(http, n, failures) for n in range(CLIENTS)))
    return failures


def test_concurrent_appends_lose_and_duplicate_nothing(tmp_path: Path, prefix: str) -> None:
    settings = fast_settings(
        tmp_path, sessions=REDIS_URL, summaries=REDIS_URL, profile=REDIS_URL, redis_prefix=prefix,
        compaction="off", extract_profile=False, extract_facts=False,
    )
    with live_server(settings) as (url, _):
        failures = asyncio.run(_run(url))
        assert not [f for f in failures if f.startswith("gave up")], failures[:5]
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60) as http:
            sessions = http.get(f"/v1/users/{USER}/sessions").json()["sessions"]
            assert sorted(s["session_id"] for s in sessions) == sorted(f"s{k}" for k in range(SESSIONS))
            seen: Counter[str] = Counter()
            for k in range(SESSIONS):
                ids = [m["id"] for m in http.get(f"/v1/users/{USER}/sessions/s{k}/messages").json()["messages"]]
                expected = {f"c{n}-{i}" for n in range(CLIENTS) for i in range(REQUESTS) if (n + i) % SESSIONS == k}
                assert len(ids) == len(expected) == len(set(ids)), f"s{k}: {len(ids)} stored, {len(expected)} sent"
                assert set(ids) == expected
                for n in range(CLIENTS):  # each client's own messages keep their send order
                    mine = [int(x.split("-")[1]) for x in ids if x.startswith(f"c{n}-")]
                    assert mine == sorted(mine)
                seen.update(ids)
    assert sum(seen.values()) == CLIENTS * REQUESTS and max(seen.values()) == 1
