"""One proposed profile change, validated against the schema on construction. Pure.

Both extraction paths (the offline rules and an LLM) produce :class:`ProfileUpdate`,
so both meet the same checks: the key made canonical (aliases, ``favorite_x`` →
``likes``), the value coerced (lists → tuples) and checked against the canonical key's
type in :data:`hmem.profile.schema.KEYS` (``age`` a whole number of years, ``birthday``
``YYYY-MM-DD`` or ``MM-DD``, a one-value key no list, a list key strings only). A
free-form key takes any profile value.

Example::

    >>> u = ProfileUpdate("City", "Paris")
    >>> (u.key, u.value)
    ('location', 'Paris')
    >>> ProfileUpdate("age", "thirty")
    Traceback (most recent call last):
    hmem.errors.InvalidInput: age must be a whole number of years (0-150), got 'thirty'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

from hmem.errors import InvalidInput
from hmem.profile.model import check_confidence, coerce_value
from hmem.profile.schema import KEYS, canonical_key, is_list_key
from hmem.types import ProfileValue

__all__ = ["Operation", "ProfileUpdate", "check_schema_value"]

Operation = Literal["set", "delete", "remove"]

_MAX_AGE = 150
_BIRTHDAY = re.compile(r"^(?:(\d{4})-)?(\d{2})-(\d{2})$")


def check_schema_value(key: str, value: ProfileValue) -> ProfileValue:
    """``value`` as the canonical ``key``'s type wants it, or :class:`InvalidInput`
    saying what that type is. A numeric string is read as an age (models often quote
    numbers); nothing else is converted.

    >>> check_schema_value("age", "34"), check_schema_value("birthday", "05-04"), check_schema_value("car", 3)
    (34, '05-04', 3)
    """
    spec = KEYS.get(key)
    if spec is None:
        return value
    if spec.type == "integer":
        number = int(value) if isinstance(value, str) and value.strip().isdigit() else value
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= _MAX_AGE:
            raise InvalidInput(f"{key} must be a whole number of years (0-{_MAX_AGE}), got {value!r}", field=key)
        return number
    if spec.type == "date":
        m = _BIRTHDAY.match(value) if isinstance(value, str) else None
        try:
            if m is None:
                raise ValueError
            date(int(m.group(1) or 2000), int(m.group(2)), int(m.group(3)))  # 2000: Feb 29 is a birthday
        except ValueError:
            raise InvalidInput(f"{key} must be a date YYYY-MM-DD, or MM-DD without a year, got {value!r}",
                               field=key) from None
        return value
    if spec.type == "string" and not isinstance(value, str):
        raise InvalidInput(f"{key} holds one text value, got {value!r}", field=key)
    if spec.type == "list" and not isinstance(value, str | tuple):
        raise InvalidInput(f"{key} holds a list of strings, got {value!r}", field=key)
    return value


@dataclass(frozen=True, slots=True)
class ProfileUpdate:
    """One change an extractor proposes. Validated on construction: the key is made
    canonical (``"City"`` → ``location``, see :mod:`hmem.profile.schema`), a ``set``
    value coerced (lists → tuples) and checked against the key's type
    (:func:`check_schema_value`), a ``delete`` has no value, a ``remove`` names the
    list items the user took back ("I no longer like jazz").

    ``merge`` (lists only): add the items to the key's current list instead of
    replacing it ("I love tea" then "I love chess" → likes: tea, chess).
    """

    key: str
    value: ProfileValue | None
    confidence: float = 1.0
    operation: Operation = "set"
    evidence: str = ""
    merge: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", canonical_key(self.key))
        if self.operation == "set":
            value = check_schema_value(self.key, coerce_value(self.value))
            if isinstance(value, str) and is_list_key(self.key):  # one item of a list key: add it
                value = (value,)
                object.__setattr__(self, "merge", True)
            object.__setattr__(self, "value", value)
        elif self.operation == "delete":
            if self.value is not None:
                raise InvalidInput("a delete update must not carry a value", field="value")
        elif self.operation == "remove":
            value = coerce_value([self.value] if isinstance(self.value, str) else self.value)
            if not isinstance(value, tuple):
                raise InvalidInput("a remove update names list items (strings) to take out", field="value")
            object.__setattr__(self, "value", value)
        else:
            raise InvalidInput(
                f"operation must be 'set', 'delete' or 'remove', got {self.operation!r}", field="operation"
            )
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        if not isinstance(self.evidence, str):
            raise InvalidInput("evidence must be a string", field="evidence")
