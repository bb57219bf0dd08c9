"""Write-time dedup keys: the "same text" relation of the long-term store.

Two texts are exact duplicates when their normalized forms are equal: Unicode NFKC,
case-folded, whitespace collapsed, and trailing sentence punctuation dropped (so
"I like tea." and "i like  tea" are one fact). Pure functions, no I/O.

Example::

    >>> dedup_key("I like tea.") == dedup_key("  i LIKE   tea ")
    True
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["dedup_key", "normalize_text"]

_WS = re.compile(r"\s+")
_TRAILING = ".!?。！？…;；,，:： \t\n"


def normalize_text(text: str) -> str:
    """The canonical form used for exact-duplicate detection."""
    out = unicodedata.normalize("NFKC", text).casefold()
    out = _WS.sub(" ", out).strip()
    return out.rstrip(_TRAILING).strip()


def dedup_key(text: str) -> str:
    """sha256 (hex) of :func:`normalize_text` — what item stores index for dedup."""
    return hashlib.sha256(normalize_text(text).encode("utf-8")).hexdigest()
