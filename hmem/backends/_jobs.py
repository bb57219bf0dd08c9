"""What every :class:`~hmem.protocols.JobQueue` backend shares: the argument checks and
the rule :meth:`~hmem.protocols.JobQueue.take` follows, as pure functions.

Example::

    >>> from hmem.types import Job
    >>> a1, a2, b1 = (Job(str(n), n, "keys", u, {}, None) for n, u in ((1, "a"), (2, "a"), (3, "b")))
    >>> [j.id for j in job_order_ok([(a1, 0.0, True), (a2, 0.0, False), (b1, 0.0, False)], now=1.0, limit=10)]
    ['3']
    >>> [j.id for j in job_order_ok([(a1, 0.0, False), (a2, 0.0, False), (b1, 0.0, False)], now=1.0, limit=10)]
    ['1', '2', '3']
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence

from hmem.errors import InvalidInput
from hmem.types import Job, JobSpec, check_id

__all__ = ["MAX_ERROR_CHARS", "MAX_PAYLOAD_BYTES", "check_fail", "check_put", "check_take", "first_due",
           "job_order_ok"]

#: A job's payload is what the work needs after a restart (a batch of messages at most).
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024
#: The error kept with a failed job (the start of it).
MAX_ERROR_CHARS = 2000


def check_put(specs: Sequence[JobSpec]) -> list[JobSpec]:
    """The specs, checked: ids valid, payload JSON within :data:`MAX_PAYLOAD_BYTES`."""
    if isinstance(specs, JobSpec) or not isinstance(specs, Sequence):
        raise InvalidInput("put takes a sequence of JobSpec", field="specs")
    out = []
    for spec in specs:
        if not isinstance(spec, JobSpec):
            raise InvalidInput(f"put takes JobSpec values, got {type(spec).__name__}", field="specs")
        check_id(spec.kind, "kind")
        check_id(spec.user_id, "user_id")
        if spec.key is not None:
            check_id(spec.key, "key")
        try:
            size = len(json.dumps(dict(spec.payload), ensure_ascii=False).encode("utf-8"))
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"a job's payload must be JSON: {exc}", field="payload") from None
        if size > MAX_PAYLOAD_BYTES:
            raise InvalidInput(f"a job's payload is {size} bytes, over {MAX_PAYLOAD_BYTES}", field="payload")
        out.append(spec)
    return out


def check_take(kind: str, limit: int, lease_s: float) -> None:
    check_id(kind, "kind")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"limit must be an integer >= 1, got {limit!r}", field="limit")
    if isinstance(lease_s, bool) or not isinstance(lease_s, int | float) or not (math.isfinite(lease_s) and lease_s > 0):
        raise InvalidInput(f"lease_s must be a positive number of seconds, got {lease_s!r}", field="lease_s")


def check_fail(error: str, retry_at: float | None) -> str:
    """The error as kept (its start); ``retry_at`` checked."""
    if retry_at is not None and (isinstance(retry_at, bool) or not isinstance(retry_at, int | float)
                                 or not math.isfinite(retry_at)):
        raise InvalidInput(f"retry_at must be epoch seconds or None, got {retry_at!r}", field="retry_at")
    return str(error)[:MAX_ERROR_CHARS]


def job_order_ok(rows: Iterable[tuple[Job, float, bool]], now: float, limit: int) -> list[Job]:
    """The jobs :meth:`~hmem.protocols.JobQueue.take` may lease, from one kind's
    not-quarantined ``rows`` (job, due time, running) in ``seq`` order, at most ``limit``:
    users in the order of their oldest job, none who has a job running; of each, its
    jobs oldest first up to the first one not yet due (a batch of one user's jobs runs in
    order on one thread, so a model call can embed many of them at once)."""
    rows = list(rows)
    running = {job.user_id for job, _due, is_running in rows if is_running}
    by_user: dict[str, list[tuple[Job, float]]] = {}
    for job, due, is_running in rows:
        if not is_running and job.user_id not in running:
            by_user.setdefault(job.user_id, []).append((job, due))
    chosen: list[Job] = []
    for jobs in by_user.values():  # dicts keep insertion order: the users' oldest jobs first
        for job, due in jobs:
            if due > now or len(chosen) >= limit:
                break
            chosen.append(job)
    return chosen


def first_due(rows: Iterable[tuple[Job, float, bool]]) -> float | None:
    """When :func:`job_order_ok` could next return a job of these ``rows`` (as there):
    the earliest due time of the oldest job of each user with nothing running; None
    when there is none (every waiting user has a job running: its end wakes the engine)."""
    rows = list(rows)
    running = {job.user_id for job, _due, is_running in rows if is_running}
    heads: dict[str, float] = {}
    for job, due, is_running in rows:
        if not is_running and job.user_id not in running:
            heads.setdefault(job.user_id, due)
    return min(heads.values()) if heads else None
