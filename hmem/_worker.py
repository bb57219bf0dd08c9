"""A serial background worker: jobs run one at a time, in submission order.

Used by :class:`~hmem.memory.Memory` to take the slow part of ``add()`` (archiving
and embedding turns, profile and fact extraction — an LLM call when one is
configured) off the caller's thread. Errors are logged and kept, never raised into
the caller; :meth:`SerialWorker.flush` waits until every submitted job has run.

Example::

    >>> worker = SerialWorker(name="example")
    >>> done = []
    >>> worker.submit(lambda: done.append(1))
    >>> worker.flush(5.0), done
    (True, [1])
    >>> worker.close()
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable

from hmem.errors import InvalidInput

__all__ = ["SerialWorker"]

log = logging.getLogger("hmem._worker")

Job = Callable[[], object]


class SerialWorker:
    """One daemon thread that runs jobs in order; started on the first :meth:`submit`."""

    def __init__(self, *, name: str = "hmem-worker") -> None:
        self.name = name
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._pending = 0
        self._idle = threading.Condition()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        #: The latest job failures (bounded, newest last).
        self.errors: deque[BaseException] = deque(maxlen=1000)

    def submit(self, job: Job) -> None:
        """Queue ``job``; it runs after every job submitted before it."""
        if self._closed:
            raise InvalidInput(f"worker {self.name!r} is closed", field="worker")
        with self._idle:
            self._pending += 1
        self._ensure_started()
        self._queue.put(job)

    def _ensure_started(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                job()
            except Exception as exc:  # a failed job must not stop the ones after it
                log.exception("background job failed in %s", self.name)
                self.errors.append(exc)
            finally:
                with self._idle:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.notify_all()

    @property
    def pending(self) -> int:
        """Jobs submitted and not yet finished."""
        with self._idle:
            return self._pending

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every submitted job has run; False if ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._pending:
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
