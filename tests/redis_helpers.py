"""Shared helpers for tests that use the real Redis on 127.0.0.1:6379.

Every test gets its own random key prefix and its keys are deleted afterwards, so
tests (and parallel workers) never see each other's data. Import the fixture into
a test module (``from redis_helpers import redis_prefix``) to use it; pytest puts
``tests/`` on ``sys.path`` because ``tests/conftest.py`` lives there.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from hmem.backends.redis.client import connect_redis

REDIS_URL = os.environ.get("HMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def new_prefix() -> str:
    return f"hmemtest-{secrets.token_hex(6)}"


def delete_prefix(client: redis.Redis, prefix: str) -> int:
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    for i in range(0, len(keys), 500):
        client.delete(*keys[i : i + 500])
    return len(keys)


@pytest.fixture
def redis_prefix() -> Iterator[tuple[redis.Redis, str]]:
    """``(client, prefix)`` on the real Redis; the prefix's keys are removed after the test."""
    with redis_client_prefix() as pair:
        yield pair


@contextmanager
def redis_client_prefix() -> Iterator[tuple[redis.Redis, str]]:
    """Context-manager form of :func:`redis_prefix` for backend factories."""
    client = connect_redis(REDIS_URL, socket_timeout=5.0)
    prefix = new_prefix()
    try:
        yield client, prefix
    finally:
        delete_prefix(client, prefix)
        client.close()
