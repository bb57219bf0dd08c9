"""The write-behind vector front (:mod:`hmem.backends.write_behind`) with an engine of its
own, for the tests that build one by hand: ``behind(inner, db, **kw)`` returns the front,
its ``vectors`` jobs run by a :class:`~hmem.jobs.JobEngine` on the SQLite queue of ``db``
with a fast back-off, and ``behind.close(front)`` (or the fixture's end) closes the engine,
then the front, as :mod:`hmem.build` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hmem.backends._outbox import SearchableIndex
from hmem.backends.sqlite.db import SqliteDatabase
from hmem.backends.sqlite.jobs import SqliteJobQueue
from hmem.backends.write_behind import WriteBehindVectorIndex
from hmem.jobs import JobEngine, RetryPolicy

#: Retried after 10 ms, doubling to 100 ms: an index that comes back is written at once.
FAST = RetryPolicy(first_s=0.01, max_s=0.1)


def engine_for(db: SqliteDatabase) -> JobEngine:
    """A background engine on ``db``'s job queue, this process its only user."""
    return JobEngine(SqliteJobQueue(db), exclusive=True, policy=FAST)


class Behind:
    """Makes fronts (each with its engine) and closes them."""

    def __init__(self) -> None:
        self.engines: dict[int, JobEngine] = {}  # id(front) -> its engine
        self._open: list[WriteBehindVectorIndex] = []

    def __call__(self, inner: SearchableIndex, db: SqliteDatabase, **kw: Any) -> WriteBehindVectorIndex:
        engine = engine_for(db)
        try:
            front = WriteBehindVectorIndex(inner, db, engine, **kw)
        except BaseException:
            engine.close()
            raise
        self.engines[id(front)] = engine
        self._open.append(front)
        return front

    def engine(self, front: WriteBehindVectorIndex) -> JobEngine:
        return self.engines[id(front)]

    def close(self, front: WriteBehindVectorIndex, timeout: float | None = 10.0) -> None:
        """Close ``front``'s engine (it runs what waits unless jobs fail), then ``front``."""
        self.engine(front).close(timeout)
        front.close()

    def close_all(self) -> None:
        while self._open:
            self.close(self._open.pop(), timeout=1.0)


@pytest.fixture(name="behind")
def behind_fixture() -> Iterator[Behind]:
    """``behind``: fronts closed (engines first) at the end of the test. Import
    ``behind_fixture`` into a test module to use it (its name does not shadow the argument)."""
    made = Behind()
    yield made
    made.close_all()
