"""Vector-index doubles that fail on purpose, shared by the integration tests of the
components that write to an index behind the caller (vectors written behind, sentence keys)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hmem.backends.memory.vectors import MemoryVectorIndex
from hmem.errors import BackendUnavailable


class DownIndex(MemoryVectorIndex):
    """Refuses every upsert, as a Chroma that is down does, while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down = True

    def upsert(self, user_id: str, ids: Sequence[str], vectors: Sequence[Sequence[float]],
               metadatas: Sequence[Mapping[str, Any]] | None = None) -> None:
        if self.down:
            raise BackendUnavailable("Chroma call failed: ConnectionError: refused")
        super().upsert(user_id, ids, vectors, metadatas)
