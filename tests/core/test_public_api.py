"""Keeps ``hmem.__all__`` honest: every name exists, nothing public is left out."""

from __future__ import annotations

import importlib
import subprocess
import sys

import hmem


def test_every_name_in_all_exists() -> None:
    for name in hmem.__all__:
        assert hasattr(hmem, name), f"hmem.__all__ lists {name!r} but hmem has no such attribute"


def test_no_duplicates_and_sorted_groups() -> None:
    assert len(hmem.__all__) == len(set(hmem.__all__))


def test_every_public_class_and_function_is_exported() -> None:
    public = {
        name
        for name, value in vars(hmem).items()
        if not name.startswith("_") and (callable(value)) and getattr(value, "__module__", "").startswith("hmem")
    }
    missing = public - set(hmem.__all__)
    assert not missing, f"public names not in __all__: {sorted(missing)}"


def test_errors_module_all_is_complete() -> None:
    errors = importlib.import_module("hmem.errors")
    classes = {n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, Exception)}
    assert classes == set(errors.__all__)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.HmemError)


def test_import_has_no_heavy_side_effects() -> None:
    """Importing hmem must not load torch, chromadb, redis or openai (lazy by design)."""
    code = (
        "import sys, hmem; heavy = [m for m in ('torch', 'chromadb', 'sentence_transformers', 'openai', 'redis') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


#: The public API as it stood before the package was reshaped along its tiers (#16): a
#: name may be added on purpose (extend this list), never dropped or renamed by a move.
PUBLIC_API_BEFORE_RESHAPE = {
    "DEFAULT_TEMPLATE", "UNCAPPED", "AddResult", "AssembledContext", "AssemblyReport", "AsyncMemory",
    "BackendUnavailable", "BudgetError", "CapacityError", "ConfigError", "ConflictError", "ContextTemplate",
    "DuplicateId", "Hit", "HmemError", "InvalidInput", "LLMError", "Memory", "MemoryItem", "MemoryOptions",
    "Message", "ModelInfo", "NotFound", "ProfileEntry", "Provenance", "ProviderError", "SessionInfo",
    "SessionState", "SessionSummary", "Settings", "TierCaps", "ToolCall", "Usage", "WindowResult", "__version__",
    "assemble", "budget_for", "context_window", "count_tokens", "get_tokenizer", "hybrid_window",
    "message_window", "resolve_model", "token_window",
}


def test_no_public_name_was_lost() -> None:
    missing = PUBLIC_API_BEFORE_RESHAPE - set(hmem.__all__)
    assert not missing, f"public names dropped from hmem.__all__: {sorted(missing)}"
