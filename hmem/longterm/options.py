"""How one recall filters and ranks: :class:`RecallOptions`, one frozen value that
:meth:`Memory.recall <hmem.memory.Memory.recall>`, :meth:`Memory.context
<hmem.memory.Memory.context>`, the HTTP API, MCP and the CLI all build and hand down.

Example::

    >>> opts = RecallOptions(kinds="preference", since="2024-05-01")
    >>> sorted(opts.item_filter.kinds), opts.item_filter.since.isoformat()
    (['preference'], '2024-05-01T00:00:00+00:00')
    >>> RecallOptions(mmr_lambda=2)
    Traceback (most recent call last):
    ...
    hmem.errors.InvalidInput: mmr_lambda must be a number in [0, 1] or None
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from hmem._checks import is_finite
from hmem.errors import ConfigError, InvalidInput
from hmem.item_filter import ItemFilter
from hmem.longterm._args import check_kinds, check_metadata, half_life
from hmem.longterm.stages import check_stage_names
from hmem.types import JSONScalar, as_datetime, check_id

__all__ = ["FUSIONS", "RecallOptions"]

#: How recall combines its retrievers: two fusions, or one retriever alone.
FUSIONS = ("weighted", "rrf", "lexical", "dense")


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """Filters and ranking of one recall (every field optional; checked and normalised
    when built, so a bad value is an :class:`~hmem.errors.InvalidInput` before anything runs).

    Filters (ANDed): ``kinds`` (one kind or several), ``session_id``, ``since`` /
    ``until`` (created; a datetime, ISO text or epoch seconds), ``metadata`` (equal
    values). Ranking: ``fusion`` (``"weighted"`` or ``"rrf"``; None: the store's; or one
    retriever alone, ``"lexical"`` (BM25 of the query as written) or ``"dense"`` (embedding
    similarity), unfused and without ranking stages: the baselines of an ablation),
    ``recency_half_life`` (a timedelta or seconds: newer items score more),
    ``importance_weight``, ``mmr_lambda`` (diversity, 0 to 1), ``stages`` (run only
    these ranking stages of :mod:`hmem.longterm.stages`, e.g. ``("session",)``; None:
    the store's).
    """

    kinds: frozenset[str] | Iterable[str] | str | None = None
    session_id: str | None = None
    since: datetime | str | float | None = None
    until: datetime | str | float | None = None
    metadata: Mapping[str, JSONScalar] | None = None
    fusion: Literal["rrf", "weighted", "lexical", "dense"] | None = None
    recency_half_life: timedelta | float | None = None
    importance_weight: float = 0.0
    mmr_lambda: float | None = None
    stages: tuple[str, ...] | Iterable[str] | str | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "kinds", check_kinds(self.kinds))
        if self.session_id is not None:
            check_id(self.session_id, "session_id")
        lo = None if self.since is None else as_datetime(self.since, "since")
        hi = None if self.until is None else as_datetime(self.until, "until")
        if lo is not None and hi is not None and lo > hi:
            raise InvalidInput("since must not be after until", field="since")
        put(self, "since", lo)
        put(self, "until", hi)
        if self.metadata is not None:
            put(self, "metadata", check_metadata(self.metadata) or None)
        if self.fusion is not None and self.fusion not in FUSIONS:
            raise InvalidInput(f"fusion must be one of {list(FUSIONS)}, got {self.fusion!r}", field="fusion")
        if self.recency_half_life is not None:
            put(self, "recency_half_life", half_life(self.recency_half_life))
        weight = self.importance_weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not (is_finite(weight) and weight >= 0):
            raise InvalidInput("importance_weight must be a finite number >= 0", field="importance_weight")
        put(self, "importance_weight", float(weight))
        lam = self.mmr_lambda
        if lam is not None and (isinstance(lam, bool) or not isinstance(lam, int | float) or not 0.0 <= lam <= 1.0):
            raise InvalidInput("mmr_lambda must be a number in [0, 1] or None", field="mmr_lambda")
        if self.stages is not None:
            try:
                names = self.stages
                if isinstance(names, Iterable) and not isinstance(names, str | Mapping):
                    names = tuple(names)
                put(self, "stages", check_stage_names(names, "stages"))
            except ConfigError as exc:
                raise InvalidInput(str(exc), field="stages") from None

    @property
    def item_filter(self) -> ItemFilter:
        """The filter both retrievers and the item store apply."""
        return ItemFilter(kinds=self.kinds, session_id=self.session_id, since=self.since,  # type: ignore[arg-type]
                          until=self.until, metadata=self.metadata)  # type: ignore[arg-type]

    @property
    def half_life(self) -> timedelta | None:
        """``recency_half_life`` as a timedelta (None: no recency boost)."""
        return self.recency_half_life  # type: ignore[return-value]  # normalised in __post_init__

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready values (what a report or the inspector shows)."""
        return {
            "kinds": sorted(self.kinds) if self.kinds else None, "session_id": self.session_id,  # type: ignore[arg-type]
            "since": self.since.isoformat() if isinstance(self.since, datetime) else None,
            "until": self.until.isoformat() if isinstance(self.until, datetime) else None,
            "metadata": dict(self.metadata) if self.metadata else None, "fusion": self.fusion,
            "recency_half_life_s": self.half_life.total_seconds() if self.half_life else None,
            "importance_weight": self.importance_weight, "mmr_lambda": self.mmr_lambda,
            "stages": list(self.stages) if self.stages is not None else None,  # type: ignore[arg-type]
        }
