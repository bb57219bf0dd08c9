"""Shared pieces of the HTTP server tests: a real uvicorn on a free loopback port
serving a real :class:`~hmem.memory.Memory` (SQLite + in-process vectors by default),
and the real embedding model loaded once per test process."""

from __future__ import annotations

import functools
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from hmem.config import Settings
from hmem.memory import Memory
from hmem.providers.embed import SentenceTransformerEmbedder
from hmem.server import ServerOptions, create_app
from hmem.server.live import serve_in_thread

ADMIN_KEY = "admin-" + secrets.token_hex(8)
ALICE_KEY = "alice-" + secrets.token_hex(8)
BOB_KEY = "bob-" + secrets.token_hex(8)
KEYS = (ADMIN_KEY, f"{ALICE_KEY}:alice", f"{BOB_KEY}:bob")


@functools.cache
def embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


def fast_settings(tmp: Path, **overrides: Any) -> Settings:
    """SQLite tiers + in-process vectors in ``tmp``; the API keys above unless overridden."""
    values: dict[str, Any] = {"data_dir": str(tmp), "vectors": "memory", "api_keys": KEYS}
    values.update(overrides)
    return Settings.from_env({}, **values)


@contextmanager
def live_server(
    settings: Settings, memory: Memory | None = None, options: ServerOptions | None = None
) -> Iterator[tuple[str, Memory]]:
    """``(base_url, memory)`` of a real uvicorn serving ``create_app(memory, settings)``."""
    mem = memory or Memory.from_settings(settings, embedder=embedder())
    try:
        with serve_in_thread(create_app(mem, settings, options)) as url:
            yield url, mem
    finally:
        mem.close()


def client(base_url: str, key: str | None = ADMIN_KEY, **kw: Any) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=60.0, **kw)


def new_user() -> str:
    return "u-" + secrets.token_hex(4)
