"""Micro-batching of concurrent embedding calls: :class:`BatchingEmbedder`.

Threads (HTTP requests of ``hmem serve``, an app's workers) that call ``embed`` at the
same time share one model call instead of queueing for the model one call each: a
forward pass over 20 short texts costs far less than 20 passes of one.

How: no thread of its own. The first caller to find the model idle becomes the
*leader*: it takes the waiting requests (up to ``max_batch`` texts, one kind: ``embed``
or ``embed_query``), runs the model once, hands every caller its own vectors, and
leaves. Callers arriving meanwhile wait for the next leader, which is one of them.
A leader waits up to ``max_wait_s`` for more callers only when others were seen
recently (someone arrived while the model ran): a lone caller never waits.

Errors go to the caller whose texts caused them: when a shared call fails, each of
its requests is retried alone, so one caller's failure is not another's. Texts are
validated before they join a batch (a bad text is its own caller's
:class:`~hmem.errors.InvalidInput`).

Example::

    >>> class Tiny:
    ...     model_name, dimension, symmetric = "tiny", 2, True
    ...     def embed(self, texts): return [[1.0, 0.0] for _ in texts]
    ...     def embed_query(self, texts): return self.embed(texts)
    >>> emb = BatchingEmbedder(Tiny(), max_wait_s=0.002, max_batch=32)
    >>> emb.embed(["a", "b"])
    [[1.0, 0.0], [1.0, 0.0]]
    >>> emb.close()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hmem.config import check_batching
from hmem.errors import InvalidInput, ProviderError
from hmem.providers.embed import WrappedEmbedder, _check_texts

__all__ = ["BatchingEmbedder"]

Kind = Literal["embed", "embed_query"]


@dataclass(eq=False)
class _Request:
    kind: Kind
    texts: list[str]
    result: list[list[float]] | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class BatchingEmbedder(WrappedEmbedder):
    """An :class:`~hmem.protocols.Embedder` that coalesces concurrent calls to ``inner``
    (see the module doc). ``calls`` counts the model calls made, ``requests`` the calls
    received; :meth:`close` waits for a running batch and refuses new calls."""

    def __init__(self, inner: Any, *, max_wait_s: float = 0.003, max_batch: int = 64) -> None:
        check_batching(max_wait_s, max_batch)
        super().__init__(inner)
        self._max_wait_s = float(max_wait_s)
        self._max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[_Request] = []
        self._running = False
        self._contended = False  # a caller arrived while the model ran: worth waiting for company
        self._closed = False
        self.calls = 0
        self.requests = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._submit("embed", texts)

    def embed_query(self, texts: Sequence[str]) -> list[list[float]]:
        return self._submit("embed_query", texts)

    def close(self) -> None:
        """Refuse new calls and wait until the running batch has answered (idempotent)."""
        with self._cond:
            self._closed = True
            while self._running or self._queue:
                self._cond.wait()

    # -- the leader/follower loop --------------------------------------------------------

    def _submit(self, kind: Kind, texts: Sequence[str]) -> list[list[float]]:
        checked = _check_texts(texts)
        if not checked:
            return []
        req = _Request(kind, checked)
        with self._cond:
            if self._closed:
                raise InvalidInput("this embedder is closed (its Memory was closed); open a new Memory",
                                   field="embedder")
            self.requests += 1
            self._queue.append(req)
            if self._running:
                self._contended = True
            self._cond.notify_all()  # a waiting leader may now have a full batch
            while not req.done:
                if self._running:
                    self._cond.wait()
                    continue
                self._lead()
        if req.error is not None:
            raise req.error
        assert req.result is not None
        return req.result

    def _lead(self) -> None:
        """Take a batch, run it with the lock released, answer it (called with the lock held)."""
        self._running = True
        batch: list[_Request] = []
        try:
            batch = self._gather()
            self._cond.release()
            try:
                self._run(batch)
            finally:
                self._cond.acquire()
        finally:
            for req in batch:  # interrupted (KeyboardInterrupt …): nobody may wait forever
                if not req.done:
                    req.error, req.done = ProviderError("the embedding batch was interrupted; retry"), True
            self._running = False
            self._cond.notify_all()

    def _gather(self) -> list[_Request]:
        """Take the next batch off the queue (the lock is held); may wait for company."""
        if self._contended and self._max_wait_s > 0:
            deadline = time.monotonic() + self._max_wait_s
            while self._size(self._queue[0].kind) < self._max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        self._contended = False
        kind = self._queue[0].kind
        batch: list[_Request] = []
        size = 0
        for req in list(self._queue):
            if req.kind != kind:
                continue
            if batch and size + len(req.texts) > self._max_batch:
                break
            batch.append(req)
            size += len(req.texts)
            self._queue.remove(req)
        return batch

    def _size(self, kind: Kind) -> int:
        return sum(len(r.texts) for r in self._queue if r.kind == kind)

    def _run(self, batch: list[_Request]) -> None:
        """Run the model once for ``batch`` (lock not held) and answer every request."""
        try:
            unique = list(dict.fromkeys(t for req in batch for t in req.texts))
            self.calls += 1
            vectors = dict(zip(unique, getattr(self._inner, batch[0].kind)(unique), strict=True))
            for req in batch:
                req.result = [list(vectors[t]) for t in req.texts]
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
            else:  # whose texts failed? each request alone says
                for req in batch:
                    self._run([req])
                return
        finally:
            for req in batch:
                req.done = req.result is not None or req.error is not None
