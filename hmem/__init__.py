"""hmem — hierarchical long-term memory for LLM assistants.

Example::

    >>> import hmem
    >>> hmem.count_tokens("hello world", model="gpt-4o-mini")
    2
"""

from __future__ import annotations

from hmem.errors import (
    BackendUnavailable,
    BudgetError,
    CapacityError,
    ConfigError,
    ConflictError,
    DuplicateId,
    HmemError,
    InvalidInput,
    LLMError,
    NotFound,
    ProviderError,
)
from hmem.types import (
    Hit,
    MemoryItem,
    Message,
    ProfileEntry,
    Provenance,
    SessionInfo,
    SessionState,
    SessionSummary,
    ToolCall,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "BackendUnavailable",
    "BudgetError",
    "CapacityError",
    "ConfigError",
    "ConflictError",
    "DuplicateId",
    "Hit",
    "HmemError",
    "InvalidInput",
    "LLMError",
    "MemoryItem",
    "Message",
    "NotFound",
    "ProfileEntry",
    "Provenance",
    "ProviderError",
    "SessionInfo",
    "SessionState",
    "SessionSummary",
    "ToolCall",
    "Usage",
    "__version__",
]
