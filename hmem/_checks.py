"""Argument checks shared by the pure core (window policies, assembler, long-term
arguments): each returns the checked value or raises :class:`~hmem.errors.InvalidInput`
naming the field, so a bad argument is refused before anything happens.

Example::

    >>> check_int_at_least(3, "budget", 0)
    3
    >>> is_finite(10**400), is_finite(float("nan")), is_finite(1.5)
    (False, False, True)
"""

from __future__ import annotations

import math

from hmem.errors import InvalidInput
from hmem.protocols import Tokenizer

__all__ = ["check_int_at_least", "check_tokenizer", "is_finite"]


def is_finite(value: float) -> bool:
    """math.isfinite that says False for an int too large for a float (it would raise)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_tokenizer(tokenizer: object) -> Tokenizer:
    """``tokenizer`` if it implements :class:`~hmem.protocols.Tokenizer`."""
    if not isinstance(tokenizer, Tokenizer):
        raise InvalidInput(
            "tokenizer must implement hmem.protocols.Tokenizer (e.g. hmem.tokens.get_tokenizer())",
            field="tokenizer",
        )
    return tokenizer


def check_int_at_least(value: object, field_name: str, minimum: int) -> int:
    """``value`` if it is an int (not a bool) and at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field_name} must be an integer, got {type(value).__name__}", field=field_name)
    if value < minimum:
        raise InvalidInput(f"{field_name} must be >= {minimum}, got {value}", field=field_name)
    return value
