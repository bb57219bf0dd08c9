"""hmem as an MCP server (``hmem mcp``), built on the official ``mcp`` SDK.

Owns the MCP shell: the tools and resources (:mod:`hmem.mcp.server`), what they do
over the public :class:`~hmem.memory.Memory` API (:mod:`hmem.mcp._tools`), and whose
memory a request touches (:mod:`hmem.mcp._user`). May import everything below the
shells and :mod:`hmem.server.auth` (the key rules are those of ``hmem serve``).
Importing this package does not import ``mcp``; :mod:`hmem.mcp.server` does
(``pip install 'hmem[mcp]'``).
"""

from __future__ import annotations

__all__: list[str] = []
