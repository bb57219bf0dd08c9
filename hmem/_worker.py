"""A background worker: jobs of one lane run one at a time, in submission order;
different lanes run side by side, each on its own daemon thread.

:class:`~hmem.memory.Memory` has exactly one: it takes the slow part of ``add()``
(archiving and embedding turns, profile and fact extraction — an LLM call when one is
configured — and compaction) off the caller's thread, one lane per user, so one user's
work keeps its order while other users' runs beside it (and their embedding calls can
share a model batch). Errors are logged and kept, never raised into the caller;
:meth:`SerialWorker.flush` waits until every submitted job has run. A job submitted with
a ``key`` is coalesced with a waiting job of the same key (one queued compaction per
session however many appends asked for it).

Example::

    >>> import threading
    >>> worker = SerialWorker(name="example")
    >>> done, gate = [], threading.Event()
    >>> worker.submit(gate.wait)  # holds the worker, so the next two wait in the queue
    True
    >>> worker.submit(lambda: done.append(1), key="s1"), worker.submit(lambda: done.append(2), key="s1")
    (True, False)
    >>> gate.set(); worker.flush(5.0), done
    (True, [1])
    >>> worker.close()
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

from hmem.errors import InvalidInput

__all__ = ["SerialWorker"]

log = logging.getLogger("hmem._worker")

Job = Callable[[], object]


class SerialWorker:
    """``lanes`` daemon threads (each started on its lane's first job); a job's ``lane``
    picks its thread, so jobs of one lane run in submission order."""

    def __init__(self, *, name: str = "hmem-worker", lanes: int = 1) -> None:
        if lanes < 1:
            raise InvalidInput(f"a worker needs at least one lane, got {lanes}", field="lanes")
        self.name = name
        self._queues: list[queue.Queue[tuple[Job, Hashable | None] | None]] = [queue.Queue() for _ in range(lanes)]
        self._threads: list[threading.Thread | None] = [None] * lanes
        self._pending = 0
        self._waiting: set[Hashable] = set()  # keys of queued jobs that have not started
        self._idle = threading.Condition()
        self._start_lock = threading.Lock()
        self._closed = False
        #: The latest job failures (bounded, newest last).
        self.errors: deque[BaseException] = deque(maxlen=1000)

    def submit(self, job: Job, *, key: Hashable | None = None, lane: Hashable | None = None) -> bool:
        """Queue ``job``; it runs after every job submitted before it to the same
        ``lane`` (None: the first lane). True if queued.

        With a ``key``, a job whose key is already waiting (queued, not started) makes
        this one redundant: it is dropped and False returned. The key is released when
        its job starts, so a request made while that job runs queues a fresh run. A key
        belongs to one lane: submit it with the same ``lane`` every time.
        """
        if self._closed:
            raise InvalidInput(f"worker {self.name!r} is closed; build a new one", field="worker")
        with self._idle:
            if key is not None:
                if key in self._waiting:
                    return False
                self._waiting.add(key)
            self._pending += 1
        index = 0 if lane is None else hash(lane) % len(self._queues)
        self._ensure_started(index)
        self._queues[index].put((job, key))
        return True

    def _ensure_started(self, index: int) -> None:
        with self._start_lock:
            if self._threads[index] is None:
                name = self.name if len(self._threads) == 1 else f"{self.name}-{index}"
                thread = threading.Thread(target=self._run, args=(self._queues[index],), name=name, daemon=True)
                self._threads[index] = thread
                thread.start()

    def _run(self, jobs: queue.Queue[tuple[Job, Hashable | None] | None]) -> None:
        while True:
            entry = jobs.get()
            if entry is None:
                return
            job, key = entry
            if key is not None:
                with self._idle:
                    self._waiting.discard(key)
            try:
                job()
            except Exception as exc:  # a failed job must not stop the ones after it
                log.exception("background job failed in %s", self.name)
                self.errors.append(exc)
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()  # flush() and wait_below() waiters check their own limit

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet finished."""
        with self._idle:
            return self._pending

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job has run; False if ``timeout`` passed first."""
        return self.wait_below(1, timeout)

    def wait_below(self, limit: int, timeout: float | None = None) -> bool:
        """Wait until fewer than ``limit`` jobs are pending (a producer's back-pressure);
        False if ``timeout`` passed first. Returns at once on one of the worker's own
        threads, whose waiting could never end."""
        if threading.current_thread() in self._threads:
            return self.pending < limit
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._pending >= limit:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float | None = 60.0) -> None:
        """Run what is queued, then stop the threads (idempotent)."""
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        started = [(jobs, t) for jobs, t in zip(self._queues, self._threads, strict=True) if t is not None]
        for jobs, _ in started:
            jobs.put(None)
        for _, thread in started:
            thread.join(timeout)
