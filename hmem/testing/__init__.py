"""Test helpers shipped with hmem (no test framework needed to import them).

:class:`hmem.testing.llm_server.ScriptedLLMServer` is a real OpenAI-compatible
HTTP server on loopback whose replies a test scripts in order (and whose
``/v1/embeddings`` answers with deterministic vectors, :func:`fake_embedding`).
:class:`~hmem.testing.embedders.CountingEmbedder` wraps an embedder and counts the
model calls hmem makes through it.

The contract suites, one per port, live in :mod:`hmem.testing.contracts`; they need
pytest and hypothesis, so this package does not import them.
"""

from __future__ import annotations

from hmem.testing.embedders import CountingEmbedder
from hmem.testing.llm_server import RecordedRequest, ScriptedLLMServer, ScriptedReply, fake_embedding

__all__ = ["CountingEmbedder", "RecordedRequest", "ScriptedLLMServer", "ScriptedReply", "fake_embedding"]
