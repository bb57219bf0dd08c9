"""hmem — hierarchical long-term memory for LLM assistants.

Example::

    >>> import hmem
    >>> hmem.count_tokens("hello world", model="gpt-4o-mini")
    2
"""

from __future__ import annotations

from hmem._version import __version__
from hmem.aio import AsyncMemory
from hmem.assembly.assemble import UNCAPPED, TierCaps, assemble, budget_for
from hmem.assembly.render import DEFAULT_TEMPLATE, ContextTemplate
from hmem.config import Settings
from hmem.errors import (
    BackendUnavailable,
    BudgetError,
    CapacityError,
    ConfigError,
    ConflictError,
    DuplicateId,
    EmbedderMismatch,
    HmemError,
    InvalidInput,
    LLMError,
    NotFound,
    ProviderError,
)
from hmem.longterm.options import RecallOptions
from hmem.memory import AddResult, Memory, MemoryOptions
from hmem.session.window import WindowResult, hybrid_window, message_window, token_window
from hmem.tokens import count_tokens, get_tokenizer
from hmem.tokens.models import ModelInfo, context_window, resolve_model
from hmem.types import (
    AssembledContext,
    AssemblyReport,
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

__all__ = [
    "DEFAULT_TEMPLATE",
    "UNCAPPED",
    "AddResult",
    "AssembledContext",
    "AssemblyReport",
    "AsyncMemory",
    "BackendUnavailable",
    "BudgetError",
    "CapacityError",
    "ConfigError",
    "ConflictError",
    "ContextTemplate",
    "DuplicateId",
    "EmbedderMismatch",
    "Hit",
    "HmemError",
    "InvalidInput",
    "LLMError",
    "Memory",
    "MemoryItem",
    "MemoryOptions",
    "Message",
    "ModelInfo",
    "NotFound",
    "ProfileEntry",
    "Provenance",
    "ProviderError",
    "RecallOptions",
    "SessionInfo",
    "SessionState",
    "SessionSummary",
    "Settings",
    "TierCaps",
    "ToolCall",
    "Usage",
    "WindowResult",
    "__version__",
    "assemble",
    "budget_for",
    "context_window",
    "count_tokens",
    "get_tokenizer",
    "hybrid_window",
    "message_window",
    "resolve_model",
    "token_window",
]
