"""Adapters that put hmem inside agent frameworks (issue #14 §3).

- :mod:`hmem.integrations.langchain`: ``HmemChatMessageHistory`` (a LangChain
  ``BaseChatMessageHistory`` backed by an hmem session) and ``HmemRetriever`` (a
  ``BaseRetriever`` over :meth:`hmem.Memory.recall`); needs ``hmem[langchain]``.
- :mod:`hmem.integrations.llamaindex`: ``HmemMemory`` (a LlamaIndex ``BaseMemory``
  that hands a chat engine hmem's assembled context and stores its turns); needs
  ``hmem[llamaindex]``.

Each adapter is a thin shell over the public :class:`hmem.Memory` API: it converts
messages and results, and holds no memory logic. This package imports no framework:
``import hmem.integrations`` costs nothing; only importing a submodule loads its
framework. May import: every hmem layer below the shells (``hmem.memory`` and down).
"""

from __future__ import annotations

__all__: list[str] = []
