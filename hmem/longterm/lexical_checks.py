"""Argument checks shared by every :class:`~hmem.protocols.LexicalIndex` backend, so a
bad argument gets the same :class:`~hmem.errors.InvalidInput` (naming the field) from
the memory, SQLite and Redis-backed indexes, before anything is touched.

Example::

    >>> check_doc("u1", "m1", "We booked a flight")
    ('u1', 'm1', 'We booked a flight')
    >>> check_search("u1", "flights", 3, None)
    ('u1', 'flights', 3, None)
    >>> check_texts("u1", ["We booked a flight", ""])
    ('u1', ['We booked a flight', ''])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet

from hmem.errors import ConfigError, InvalidInput
from hmem.longterm.bm25 import check_bm25_params
from hmem.types import check_id, check_text

__all__ = ["check_doc", "check_docs", "check_index_settings", "check_search", "check_texts"]


def check_index_settings(k1: float, b: float, epsilon: float, *, max_cached_users: int | None = None) -> None:
    """:class:`~hmem.errors.ConfigError` unless the BM25 parameters (and, for an index
    that caches users, ``max_cached_users``) are usable."""
    try:
        check_bm25_params(k1, b, epsilon)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if max_cached_users is not None and (
        isinstance(max_cached_users, bool) or not isinstance(max_cached_users, int) or max_cached_users < 1
    ):
        raise ConfigError(f"max_cached_users must be a positive integer, got {max_cached_users!r}")


def check_doc(user_id: object, doc_id: object, text: object) -> tuple[str, str, str]:
    """Validate one document of ``LexicalIndex.add``; raise InvalidInput naming the field."""
    return check_id(user_id, "user_id"), check_id(doc_id, "doc_id"), check_text(text, "text")


def check_docs(user_id: object, docs: object) -> tuple[str, list[tuple[str, str]]]:
    """Validate a batch of (doc_id, text) pairs; a doc_id may appear only once."""
    uid = check_id(user_id, "user_id")
    if isinstance(docs, str | bytes | Mapping) or not isinstance(docs, Iterable):
        raise InvalidInput("docs must be a list of (doc_id, text) pairs", field="docs")
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, pair in enumerate(docs):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise InvalidInput(f"docs[{i}] must be a (doc_id, text) pair", field=f"docs[{i}]")
        doc_id = check_id(pair[0], f"docs[{i}].doc_id")
        text = check_text(pair[1], f"docs[{i}].text")
        if doc_id in seen:
            raise InvalidInput(f"docs contains doc_id {doc_id!r} twice", field=f"docs[{i}].doc_id")
        seen.add(doc_id)
        out.append((doc_id, text))
    return uid, out


def check_search(
    user_id: object, query: object, k: object, allowed_ids: object
) -> tuple[str, str, int, set[str] | None]:
    """Validate the arguments of ``LexicalIndex.search``."""
    uid = check_id(user_id, "user_id")
    q = check_text(query, "query")
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInput(f"k must be an integer, got {type(k).__name__}", field="k")
    if k <= 0:
        raise InvalidInput(f"k must be at least 1, got {k}", field="k")
    if allowed_ids is None:
        return uid, q, k, None
    if isinstance(allowed_ids, str | bytes | Mapping) or not isinstance(allowed_ids, AbstractSet | list | tuple):
        raise InvalidInput("allowed_ids must be a set of document ids (or None for no filter)", field="allowed_ids")
    allowed = set(allowed_ids)
    if not all(isinstance(d, str) for d in allowed):
        raise InvalidInput("allowed_ids must contain only string ids", field="allowed_ids")
    return uid, q, k, allowed


def check_texts(user_id: object, texts: object) -> tuple[str, list[str]]:
    """Validate the arguments of ``LexicalIndex.term_stats``: a list of strings (empty
    ones allowed: they have no terms)."""
    uid = check_id(user_id, "user_id")
    if isinstance(texts, str | bytes | Mapping) or not isinstance(texts, Iterable):
        raise InvalidInput("texts must be a list of strings", field="texts")
    return uid, [check_text(t, f"texts[{i}]") for i, t in enumerate(texts)]
