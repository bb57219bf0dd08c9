"""A serial background worker: jobs run one at a time, in submission order.

:class:`~hmem.memory.Memory` has exactly one: it takes the slow part of ``add()``
(archiving and embedding turns, profile and fact extraction — an LLM call when one is
configured — and compaction) off the caller's thread. Errors are logged and kept,
never raised into the caller; :meth:`SerialWorker.flush` waits until every submitted
job has run. A job submitted with a ``key`` is coalesced with a waiting job of the
same key (one queued compaction per session however many appends asked for it).

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
    """One daemon thread that runs jobs in order; started on the first :meth:`submit`."""

    def __init__(self, *, name: str = "hmem-worker") -> None:
        self.name = name
        self._queue: queue.Queue[tuple[Job, Hashable | None] | None] = queue.Queue()
        self._pending = 0
        self._waiting: set[Hashable] = set()  # keys of queued jobs that have not started
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        #: The latest job failures (bounded, newest last).
        self.errors: deque[BaseException] = deque(maxlen=1000)

    def submit(self, job: Job, *, key: Hashable | None = None) -> bool:
        """Queue ``job``; it runs after every job submitted before it. True if queued.

        With a ``key``, a job whose key is already waiting (queued, not started) makes
        this one redundant: it is dropped and False returned. The key is released when
        its job starts, so a request made while that job runs queues a fresh run.
        """
        if self._closed:
            raise InvalidInput(f"worker {self.name!r} is closed; build a new one", field="worker")
        with self._idle:
            if key is not None:
                if key in self._waiting:
                    return False
                self._waiting.add(key)
            self._pending += 1
        self._ensure_started()
        self._queue.put((job, key))
        return True

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            entry = self._queue.get()
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
        False if ``timeout`` passed first. Returns at once on the worker's own thread,
        whose waiting would never end."""
        if threading.current_thread() is self._thread:
            return self._pending < limit
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._pending >= limit:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float | None = 60.0) -> None:
        """Run what is queued, then stop the thread (idempotent)."""
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
