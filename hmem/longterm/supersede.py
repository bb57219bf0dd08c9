"""Supersession: the newest version of a claim wins, the older ones are kept and linked.

A fact may carry a **claim key** in ``metadata["claim_key"]``: facts of one user with the
same kind and claim key are versions of one claim ("where Maya lives" — the profile
statements of :mod:`hmem.profile.statements` key it ``profile:user:location``; a list key
gets one claim per item, so "I no longer like jazz" supersedes "Maya likes jazz"). When a
new version is stored, the current one is marked superseded, not deleted:

* the old item gets ``metadata["superseded_by"]`` (the new item's id) and
  ``metadata["superseded_at"]`` (ISO time);
* the new item gets ``metadata["supersedes"]`` (the old item's id);
* recall multiplies a superseded item's score by ``LongTermConfig.superseded_weight``
  (``Hit.boosts["superseded"]``), so the newer version ranks first while the history
  stays findable; ``hmem inspect`` and the inspector show both, linked.

A restatement (same claim, same value, later) supersedes too: the newest statement carries
the latest date. Pure functions: :class:`~hmem.longterm.store.LongTermStore` reads and writes.

Example::

    >>> from datetime import UTC, datetime
    >>> t = datetime(2024, 1, 1, tzinfo=UTC)
    >>> old = MemoryItem("a", "u", "Maya lives in Leeds.", "profile", metadata={CLAIM_KEY: "location"})
    >>> new = MemoryItem("b", "u", "Maya lives in York.", "profile", metadata={CLAIM_KEY: "location"})
    >>> news, olds = plan_supersession([new], [old], t)
    >>> news[0].metadata[SUPERSEDES], olds[0].metadata[SUPERSEDED_BY], is_superseded(olds[0])
    ('a', 'b', True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from hmem.errors import InvalidInput
from hmem.types import JSONScalar, MemoryItem

__all__ = ["CLAIM_KEY", "MAX_CLAIM_KEY_CHARS", "RESERVED_KEYS", "SUPERSEDED_AT", "SUPERSEDED_BY", "SUPERSEDES",
           "check_claim_metadata", "is_superseded", "plan_supersession"]

CLAIM_KEY = "claim_key"
SUPERSEDED_BY = "superseded_by"
SUPERSEDED_AT = "superseded_at"
SUPERSEDES = "supersedes"
#: Metadata keys the store writes itself: an entry may not set them.
RESERVED_KEYS = frozenset({SUPERSEDED_BY, SUPERSEDED_AT, SUPERSEDES})
MAX_CLAIM_KEY_CHARS = 500


def check_claim_metadata(metadata: Mapping[str, JSONScalar], field: str) -> None:
    """Refuse an entry's metadata that sets a store-written key or a bad claim key.

    >>> check_claim_metadata({"superseded_by": "x"}, "metadata")
    Traceback (most recent call last):
    hmem.errors.InvalidInput: metadata['superseded_by'] is written by the store (supersession); leave it out
    """
    for key in sorted(RESERVED_KEYS & set(metadata)):
        raise InvalidInput(f"{field}[{key!r}] is written by the store (supersession); leave it out", field=field)
    if CLAIM_KEY in metadata:
        value = metadata[CLAIM_KEY]
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_CLAIM_KEY_CHARS:
            raise InvalidInput(f"{field}[{CLAIM_KEY!r}] must be a non-empty string of at most "
                               f"{MAX_CLAIM_KEY_CHARS} characters, got {value!r}", field=field)


def claim_of(item: MemoryItem) -> tuple[str, str] | None:
    """``(kind, claim key)`` of an item, or None when it has no claim key."""
    key = item.metadata.get(CLAIM_KEY)
    return (item.kind, key) if isinstance(key, str) and key else None


def is_superseded(item: MemoryItem) -> bool:
    """True when a newer version of the item's claim was stored."""
    return bool(item.metadata.get(SUPERSEDED_BY))


def plan_supersession(
    new: Sequence[MemoryItem], active: Iterable[MemoryItem], now: datetime
) -> tuple[list[MemoryItem], list[MemoryItem]]:
    """``(new items linked to what they supersede, older items marked superseded)``.

    ``new``: items just stored, in write order (a later one supersedes an earlier one of
    the same claim); ``active``: stored items not superseded yet. Items without a claim
    key pass through unchanged."""
    current: dict[tuple[str, str], list[MemoryItem]] = {}
    for item in active:
        claim = claim_of(item)
        if claim is not None and not is_superseded(item):
            current.setdefault(claim, []).append(item)
    out_new: dict[str, MemoryItem] = {}
    out_old: dict[str, MemoryItem] = {}
    for item in new:
        claim = claim_of(item)
        if claim is None:
            out_new[item.id] = item
            continue
        previous = sorted(current.get(claim, []), key=lambda it: (it.created_at, it.id))
        for old in previous:
            marked = replace(old, metadata={**old.metadata, SUPERSEDED_BY: item.id, SUPERSEDED_AT: now.isoformat()})
            if old.id in out_new:  # superseded within the same batch
                out_new[old.id] = marked
            else:
                out_old[old.id] = marked
        linked = replace(item, metadata={**item.metadata, SUPERSEDES: previous[-1].id}) if previous else item
        out_new[item.id] = linked
        current[claim] = [linked]
    return list(out_new.values()), list(out_old.values())
