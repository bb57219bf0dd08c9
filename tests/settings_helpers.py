"""Tuning settings for a test's app instance, in the file ``HMEM_CONFIG`` names.

Only the deployment settings of ``hmem.config.ENV_SETTINGS`` are read from ``HMEM_*``
variables; a tuning knob (``buffer_tokens``, ``items``, ``session_weight`` …) set as one
is refused. A test that configures hmem through its environment (a subprocess, a
server, ``Settings.from_env(env)``) writes the knobs to a TOML file instead:

>>> import tempfile
>>> from hmem.config import Settings
>>> path = settings_file(Path(tempfile.mkdtemp()) / "hmem.toml", buffer_tokens=300, items="memory")
>>> s = Settings.from_env({"HMEM_CONFIG": str(path)})
>>> s.buffer_tokens, s.items
(300, 'memory')
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["settings_file"]


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for plain text
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def settings_file(path: Path, **values: object) -> Path:
    """Write ``values`` as the ``[hmem]`` table of the TOML file ``path`` (its folder made
    if missing) and return ``path``, for ``HMEM_CONFIG``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["[hmem]", *(f"{name} = {_toml_value(value)}" for name, value in values.items())]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
