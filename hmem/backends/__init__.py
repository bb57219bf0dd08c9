"""Backends: I/O only. Each implements ports of :mod:`hmem.protocols`.

- :mod:`~hmem.backends.memory` — in-process reference implementations (tests, throw-away use)
- :mod:`~hmem.backends.sqlite` — the embedded default (one SQLite file, WAL)
- :mod:`~hmem.backends.redis` — production and scale-out (needs ``hmem[redis]``)
- :mod:`~hmem.backends.chroma` — vectors in Chroma, embedded or a ``chroma run`` server
- :mod:`~hmem.backends.folder_lock` — one process per embedded data folder (an OS lock)

Backends persist what the tier packages decide (versioning, dedup keys, BM25 math are
pure functions there); they may import the tier packages, never the facade, the
composition root or a shell. Every backend passes its port's contract suite in
:mod:`hmem.testing.contracts`.
"""
