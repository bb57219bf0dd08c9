"""Guards and collection rules for everything pytest runs here: ``tests/`` and hmem's doctests.

Every test and every doctest runs with outbound network blocked: a connection to
anything but loopback or a Unix socket raises. This is how the suite proves hmem is
offline by default (tokenizer files, embedding model, Chroma) — not by hoping. The
guards live in this root conftest so they cover ``hmem/`` as well as ``tests/``.

The ``>>>`` examples in the docstrings of every module of ``hmem/`` are collected as
doctests (issue #16), so an example that stops being true fails ``make test``.
``--doctest-modules`` would also import every helper module under ``tests/`` as a
doctest module (and trip over the two ``conftest.py`` files there), hence the
collection hook below, limited to the package.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

import pytest
from _pytest.doctest import DoctestItem, DoctestModule

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

_PACKAGE = Path(__file__).resolve().parent / "hmem"
# Doctests that load the real embedding model (torch import + model, several seconds).
_SLOW_DOCTESTS = frozenset({"hmem.providers.embed", "hmem.longterm.store"})

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


class NetworkBlocked(RuntimeError):
    pass


def _is_local(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX path
        return True
    host = address[0]
    if isinstance(host, bytes):
        host = host.decode()
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guarded_connect(self: socket.socket, address: Any) -> None:
    if not _is_local(address):
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    if not _is_local(address):
        raise NetworkBlocked(f"test tried to reach the network: {address!r}")
    return _real_connect_ex(self, address)


def pytest_configure(config: pytest.Config) -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign,assignment]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    # With an explicit --doctest-modules pytest collects these itself; don't do it twice.
    if parent.config.option.doctestmodules or file_path.suffix != ".py":
        return None
    # Importing __main__ would run the CLI (and sys.exit).
    if _PACKAGE not in file_path.resolve().parents or file_path.name == "__main__.py":
        return None
    return DoctestModule.from_parent(parent, path=file_path)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, DoctestItem) and item.name in _SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)
