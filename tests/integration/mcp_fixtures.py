"""Shared pieces of the MCP tests: the SDK's own client over streamable HTTP with an
API key (and optionally the user header), and readers of a tool result.

Import it after ``pytest.importorskip("mcp")``: it imports the SDK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx2  # the SDK's HTTP client, installed with mcp
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_http_client(url: str, key: str | None, *, headers: Mapping[str, str] | None = None,
                          event_hooks: Mapping[str, list[Any]] | None = None,
                          mode: ConnectMode = "auto") -> AsyncIterator[Client]:
    """An initialised SDK ``Client`` on ``url`` sending ``Authorization: Bearer key``;
    ``mode="legacy"`` speaks the pre-2026 protocol, whose connections are sessions
    (``Mcp-Session-Id``)."""
    sent = {"Authorization": f"Bearer {key}"} if key is not None else {}
    sent.update(headers or {})
    async with (
        httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(60.0), event_hooks=dict(event_hooks or {})) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120, mode=mode) as client,
    ):
        yield client


def structured(result: Any) -> dict[str, Any]:
    """The structured content of a successful tool call (fails the test on a tool error)."""
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


def error_text(result: Any) -> str:
    """The text of a tool error (fails the test if the call succeeded)."""
    assert result.is_error, result.structured_content
    return " ".join(getattr(c, "text", "") for c in result.content)
