"""How an evaluation run opens its Memory: the embedded default in the run's folder, with
the settings the caller chose (``run_eval(settings=…)``, ``hmem eval --set``) checked before
anything is written. The environment is never read, so a run means the same on every machine.

Example::

    >>> check_settings({"question_weight": "1"})
    {'question_weight': 1.0}
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hmem.errors import InvalidInput

if TYPE_CHECKING:
    from hmem.memory import Memory
    from hmem.protocols import Embedder

__all__ = ["check_settings", "default_opener"]


def default_opener(embedder: Embedder | None, settings: Mapping[str, Any]) -> Callable[[Path], Memory]:
    """``open_memory(path)`` for :func:`~hmem.eval.runner.run_eval`: the embedded default in
    ``path`` (``Memory.open``), with ``embedder`` and the checked ``settings``."""

    def open_memory(path: Path) -> Memory:
        from hmem.memory import Memory

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return Memory.open(path, embedder=embedder, **settings)

    return open_memory


def check_settings(settings: Mapping[str, Any] | None, *, open_memory: object = None) -> dict[str, Any]:
    """The settings a run opens its Memory with, checked as :class:`~hmem.config.Settings`
    checks them, and returned as a report may show them (secrets hidden). Raises
    :class:`~hmem.errors.ConfigError` for an unknown name or a bad value, and
    :class:`InvalidInput` for ``data_dir`` (the run owns its folder: pass ``workdir``) or
    settings beside a caller's own ``open_memory`` (which opens the Memory as it likes).

    >>> check_settings({"session_weight": "0", "sentence_keys": "false"})
    {'session_weight': 0.0, 'sentence_keys': False}
    >>> check_settings({"sesion_weight": "0"})
    Traceback (most recent call last):
    ...
    hmem.errors.ConfigError: unknown setting(s): ['sesion_weight']; see hmem.config.Settings for the list
    """
    from hmem.build import longterm_config
    from hmem.config import Settings

    if not settings:
        return {}
    if not isinstance(settings, Mapping) or not all(isinstance(name, str) for name in settings):
        raise InvalidInput(f"settings must be a mapping of Settings field names to values, got {settings!r:.80}",
                           field="settings")
    if "data_dir" in settings:
        raise InvalidInput("settings cannot name data_dir: the run stores in its own folder "
                           "(to keep it: workdir=, or hmem eval --workdir)", field="settings")
    if open_memory is not None:
        raise InvalidInput("settings apply to the Memory run_eval opens; with your own open_memory, open it with "
                           "those settings yourself", field="settings")
    chosen = Settings.from_env({}, data_dir=".", **settings)
    longterm_config(chosen)  # the recall knobs' own ranges (a build checks them too, later)
    return chosen.shown(settings)
