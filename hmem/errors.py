"""hmem's one error hierarchy.

Every error hmem raises on purpose is an :class:`HmemError`; catch that to catch
them all. Messages say what went wrong *and what to do*.

::

    HmemError
    ├── ConfigError            settings are missing, contradictory or malformed
    │   └── EmbedderMismatch   a user's vectors were made by another embedding model
    ├── InvalidInput           a caller passed bad data; nothing was changed
    │   └── DuplicateId        a message/item id already exists in its scope
    ├── NotFound               the addressed record does not exist
    ├── BudgetError            the mandatory prompt parts cannot fit the token budget
    ├── ConflictError          a compare-and-set lost a race (version moved on)
    ├── CapacityError          a configured per-user cap would be exceeded
    ├── BackendUnavailable     a store/server cannot be reached (Redis, Chroma …)
    └── ProviderError          an embedding model or LLM failed
        └── LLMError           an LLM call failed after its retries
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailable",
    "BudgetError",
    "CapacityError",
    "ConfigError",
    "ConflictError",
    "DuplicateId",
    "EmbedderMismatch",
    "HmemError",
    "InvalidInput",
    "LLMError",
    "NotFound",
    "ProviderError",
]


class HmemError(Exception):
    """Base of every error hmem raises on purpose."""


class ConfigError(HmemError):
    """Settings are missing, contradictory or malformed."""


class EmbedderMismatch(ConfigError):
    """A user's vectors were made by another embedding model than the configured one;
    vectors of two models never mix, so recall and writes of that user are refused.

    ``indexed_with`` names the model that made them (None: vectors stored before models
    were recorded), ``configured`` the model in use, and ``command`` the ``hmem reindex``
    line that re-embeds the user's vectors from the stored text with the configured model.
    """

    def __init__(self, message: str, *, user_id: str, indexed_with: str | None, configured: str,
                 command: str) -> None:
        super().__init__(message)
        self.user_id = user_id
        self.indexed_with = indexed_with
        self.configured = configured
        self.command = command


class InvalidInput(HmemError, ValueError):
    """The caller passed bad data. Nothing was changed.

    ``field`` names the offending field (``"role"``, ``"messages[3].content"`` …)
    so HTTP layers can report it.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class DuplicateId(InvalidInput):
    """An id that must be unique in its scope (session, user) already exists."""


class NotFound(HmemError, KeyError):
    """The addressed record (session, item, profile key …) does not exist."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "not found"


class BudgetError(HmemError):
    """The parts that must be in the prompt do not fit the token budget.

    Carries the numbers so a caller (or an HTTP 409/422) can show them.
    """

    def __init__(self, message: str, *, required: int, budget: int) -> None:
        super().__init__(message)
        self.required = required
        self.budget = budget


class ConflictError(HmemError):
    """A compare-and-set write lost a race: the stored version moved on.

    Reload, re-plan and retry.
    """

    def __init__(self, message: str, *, expected: int | None = None, actual: int | None = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.actual = actual


class CapacityError(HmemError):
    """A configured per-user cap (profile keys, items …) would be exceeded."""


class BackendUnavailable(HmemError):
    """A backend (Redis, Chroma server, SQLite file …) cannot be reached or used."""


class ProviderError(HmemError):
    """An embedding model or LLM provider failed."""


class LLMError(ProviderError):
    """An LLM call failed after all its attempts."""
