"""Prompt assembly: one token budget across every tier, and the report of what was cut.

Owns: :func:`~hmem.assembly.assemble.assemble` (pure: system prompt, current turn,
history, summary, profile, recalled items, in that priority order, within the budget),
the text templates of the memory blocks (:mod:`~hmem.assembly.render`) and the
:class:`~hmem.types.AssemblyReport` it returns.
May import: every tier package above it in the layer list (types, tokens, session,
profile, longterm), never a backend or a provider: it does no I/O.
"""
