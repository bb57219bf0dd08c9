"""What a CLI test gets back from the ``hmem`` fixture (tests/cli/conftest.py).

A module of its own, not the conftest: every test folder's ``conftest`` is imported under
the one name ``conftest``, so ``from conftest import …`` would depend on which ran last.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


Runner = Callable[..., CliResult]
