"""Retrieval-quality evaluation: datasets (:mod:`hmem.eval.datasets`) and pure
metrics (:mod:`hmem.eval.metrics`). Nothing here touches a backend; the runner that
replays conversations through :class:`hmem.Memory` builds on these.
"""
