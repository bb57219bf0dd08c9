"""The root conftest's network guard is on for every test and doctest (issue #16 moved it
there from tests/conftest.py so hmem's doctests and the docs' examples run under it too)."""

from __future__ import annotations

import socket

import pytest


@pytest.mark.parametrize("address", [("192.0.2.1", 80), ("2001:db8::1", 443)])  # documentation-only ranges
@pytest.mark.parametrize("method", ["connect", "connect_ex"])
def test_a_connection_beyond_loopback_is_refused_before_any_packet(address: tuple[str, int], method: str) -> None:
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)  # without the guard this fails as a timeout/unreachable, not as below
        with pytest.raises(RuntimeError, match="reach the network"):
            getattr(sock, method)(address)


def test_loopback_still_connects() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.create_connection(server.getsockname(), timeout=2):
            conn, _ = server.accept()
            conn.close()
