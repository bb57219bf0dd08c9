"""Fixtures shared by the core tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hmem.backends.memory.profile import MemoryProfileStore
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.profile import SqliteProfileStore
from hmem.protocols import ProfileStore


@pytest.fixture(params=["memory", "sqlite"])
def profile_store(request: pytest.FixtureRequest) -> Iterator[ProfileStore]:
    """A fresh profile store: the in-memory reference, then SQLite in memory."""
    if request.param == "memory":
        yield MemoryProfileStore()
    else:
        db = SqliteDatabase(":memory:")
        yield SqliteProfileStore(db)
        db.close()
