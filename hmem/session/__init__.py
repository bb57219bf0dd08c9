"""The short-term tier: one session's buffer and what happens when it overflows.

Owns: the window policies (:mod:`~hmem.session.window`, pure: which messages stay and
which are folded), the extractive summary (:mod:`~hmem.session.extractive`, pure), the
rolling :class:`~hmem.session.summarizer.Summarizer` (LLM → extractive → raw) and the
:class:`~hmem.session.compaction.Compactor` that folds the oldest block into the summary
and hands it to the archive.
May import: :mod:`hmem.types`, :mod:`hmem.errors`, :mod:`hmem.protocols`, :mod:`hmem.tokens`
and the private helpers at the package root. Never a backend: stores come in as ports.
"""
