"""Evaluation datasets: one in-memory shape, three loaders.

- :func:`load_sample` — hmem's own sample set in ``data/`` (schema: ``data/SCHEMA.md``).
- :func:`load_locomo` — the LoCoMo benchmark format, with evidence normalisation and
  optional audit corrections.
- :func:`load_longmemeval` — the LongMemEval format (one haystack per question).

Every loader validates and raises :class:`hmem.errors.InvalidInput` whose message
starts with the file and whose ``field`` is the JSON path of the bad value.

Example::

    >>> from hmem.eval.datasets import load_sample
    >>> ds = load_sample()
    >>> sorted(set(ds.categories)) == sorted(CATEGORIES)
    True
"""

from __future__ import annotations

from hmem.eval.locomo import (
    LOCOMO_CATEGORIES,
    default_locomo_dir,
    load_locomo,
    normalise_evidence,
    parse_locomo_date,
)
from hmem.eval.longmemeval import load_longmemeval, parse_longmemeval_date
from hmem.eval.model import (
    CATEGORIES,
    LANGUAGES,
    EvalConversation,
    EvalDataset,
    EvalQuestion,
    EvalSession,
    EvalToolCall,
    EvalTurn,
)
from hmem.eval.sample import default_sample_dir, load_sample, load_sample_file

__all__ = [
    "CATEGORIES",
    "LANGUAGES",
    "LOCOMO_CATEGORIES",
    "EvalConversation",
    "EvalDataset",
    "EvalQuestion",
    "EvalSession",
    "EvalToolCall",
    "EvalTurn",
    "default_locomo_dir",
    "default_sample_dir",
    "load_locomo",
    "load_longmemeval",
    "load_sample",
    "load_sample_file",
    "normalise_evidence",
    "parse_locomo_date",
    "parse_longmemeval_date",
]
