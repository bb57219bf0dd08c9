"""Test helpers shipped with hmem (no test framework needed to import them).

:class:`hmem.testing.llm_server.ScriptedLLMServer` is a real OpenAI-compatible
HTTP server on loopback whose replies a test scripts in order.
"""

from __future__ import annotations

from hmem.testing.llm_server import RecordedRequest, ScriptedLLMServer, ScriptedReply

__all__ = ["RecordedRequest", "ScriptedLLMServer", "ScriptedReply"]
