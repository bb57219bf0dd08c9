"""The profile tier: per-user ``key → value`` facts with history.

Owns: the value model, key normalisation and rendering (:mod:`~hmem.profile.model`),
the schema — canonical keys, value types, merge rules, aliases (:mod:`~hmem.profile.schema`),
how list values merge (:mod:`~hmem.profile.merge`), the versioning rule every profile
store only persists (:mod:`~hmem.profile.versioning`: pure ``plan_set`` / ``plan_delete``),
and extraction of profile updates from user turns (:mod:`~hmem.profile.extract`: offline
English, Chinese and code-switched rules in the private ``_clauses``/``_en_*``/``_zh_*``
modules, or an LLM).
May import: :mod:`hmem.types`, :mod:`hmem.errors`, :mod:`hmem.protocols`, :mod:`hmem.tokens`,
:mod:`hmem.session`. Never a backend: stores only persist what this package decides.
"""
