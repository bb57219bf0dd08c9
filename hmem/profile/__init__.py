"""The profile tier: per-user ``key → value`` facts with history.

Owns: the value model, key normalisation, rendering and the versioning rule
(:mod:`~hmem.profile.model`: pure, shared by every profile store), and extraction of
profile updates from user turns (:mod:`~hmem.profile.extract`: offline English and
Chinese rules, or an LLM).
May import: :mod:`hmem.types`, :mod:`hmem.errors`, :mod:`hmem.protocols`, :mod:`hmem.tokens`,
:mod:`hmem.session`. Never a backend: stores only persist what this package decides.
"""
