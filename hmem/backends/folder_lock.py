"""One process per embedded data folder: an exclusive lock on ``<folder>/hmem.lock``.

Embedded Chroma (``PersistentClient``) keeps each collection's index in the memory of the
process that opened it: a second process on the same folder recalls from a stale index,
and both race for the folder's files (refused writes, a 503 for a write that was
stored). So whoever opens embedded Chroma in a folder takes this lock first, and a
second opener — another process, or a second ``Memory`` in the same process — is
refused with what to do instead.

The lock is the operating system's (``flock``, through the ``filelock`` package, with no
fallback to a marker file): ``release()`` frees it, and so does the end of the process,
however it ends (a crash or ``kill -9`` leaves no stale lock behind). The file itself
stays; it holds the pid of the last holder, shown in the refusal.

Example::

    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> held = FolderLock(folder)
    >>> FolderLock(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hmem.errors.BackendUnavailable: the data folder ... is already open in this process ...
    >>> held.release()
    >>> FolderLock(folder).release()  # free again
"""

from __future__ import annotations

import os
from pathlib import Path

from hmem.errors import BackendUnavailable

__all__ = ["LOCK_FILE", "FolderLock"]

LOCK_FILE = "hmem.lock"

#: What to do instead of a second opener, said in every refusal.
_INSTEAD = ("an embedded store (SQLite + Chroma in that folder) serves one process at a time. Use the running "
            "process instead (its HTTP API or /ui for a server), stop it first, or give this one its own folder "
            "(--data / HMEM_DATA_DIR); for several processes on one store, use Redis and a Chroma server "
            "(HMEM_REDIS_URL=redis://… and HMEM_VECTORS=chroma://host:port, started with `chroma run`)")


class FolderLock:
    """The exclusive lock of ``folder`` (created if missing), taken now or refused at once
    with :class:`~hmem.errors.BackendUnavailable`; free it with :meth:`release`."""

    def __init__(self, folder: Path) -> None:
        from filelock import FileLock, Timeout

        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / LOCK_FILE
        # thread_local=False: Memory.close() may run on another thread than the one that
        # opened it (a server's shutdown). No soft fallback: a marker file would outlive a crash.
        self._lock = FileLock(self.path, thread_local=False, fallback_to_soft=False)
        try:
            self._lock.acquire(blocking=False)
        except Timeout:
            raise BackendUnavailable(self._refusal(folder)) from None
        # Beside the OS lock, not part of it: who holds the folder, for the next refusal.
        self.path.write_text(f"{os.getpid()}\n", encoding="ascii")

    def _refusal(self, folder: Path) -> str:
        shown = folder.absolute()
        holder = _holder_pid(self.path)
        if holder == os.getpid():
            return (f"the data folder {shown} is already open in this process (another Memory holds it): close "
                    f"that one first, or share it; {_INSTEAD}")
        who = f"another process (pid {holder})" if holder is not None else "another process"
        return f"the data folder {shown} is in use by {who}: {_INSTEAD}"

    def release(self) -> None:
        """Free the folder for the next opener (idempotent)."""
        self._lock.release()


def _holder_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
