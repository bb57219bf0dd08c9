"""Argument checks shared by the pure core (window policies, assembler, long-term
arguments): each returns the checked value or raises :class:`~hmem.errors.InvalidInput`
naming the field, so a bad argument is refused before anything happens; and the
ranges of the recall weights, which both ``Settings`` (``HMEM_*``) and
``LongTermConfig`` check (:func:`check_weight`, a :class:`~hmem.errors.ConfigError`).

Example::

    >>> check_int_at_least(3, "budget", 0)
    3
    >>> is_finite(10**400), is_finite(float("nan")), is_finite(1.5)
    (False, False, True)
    >>> check_weight("question_weight", 2, RECALL_WEIGHTS["question_weight"], off=" (0 = off)")
    Traceback (most recent call last):
    ...
    hmem.errors.ConfigError: question_weight must be a number in [0, 1] (0 = off), got 2
"""

from __future__ import annotations

import math

from hmem.errors import ConfigError, InvalidInput
from hmem.protocols import Tokenizer

__all__ = ["RECALL_WEIGHTS", "check_int_at_least", "check_tokenizer", "check_weight", "is_finite"]

#: The recall weights that a setting can turn off (0) and their highest value. One table
#: for ``LongTermConfig`` and for the ``HMEM_*`` settings that feed it, so they cannot drift.
RECALL_WEIGHTS: dict[str, float] = {
    "time_weight": 10.0, "session_weight": 10.0, "question_weight": 1.0, "speaker_weight": 1.0,
    "current_weight": 10.0, "specific_weight": 10.0,
}


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


def check_weight(name: str, value: object, high: float, *, zero: bool = True, off: str = "") -> None:
    """``value`` is a number from 0 (included when ``zero``) to ``high``; else a
    :class:`~hmem.errors.ConfigError` naming ``name``, the range and what turns the knob ``off``."""
    ok = not isinstance(value, bool) and isinstance(value, int | float) and (
        0.0 <= value <= high if zero else 0.0 < value <= high)
    if not ok:
        raise ConfigError(f"{name} must be a number in {'[' if zero else '('}0, {high:g}]{off}, got {value!r}")
