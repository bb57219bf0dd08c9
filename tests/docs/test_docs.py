"""The README's and docs/'s Python examples run, and the code paths they name exist (issue #16).

Every ```python block of ``README.md`` and of each ``docs/*.md`` page runs, in order,
in one namespace per page, inside a fresh temporary folder (so ``./hmem-data`` and
``hmem.db`` land there) with outbound network blocked by the root ``conftest.py``.
A block right after an ``<!-- skip: why -->`` comment is not run; that is for the few
blocks that need an LLM key or a server CI does not have. Shell blocks are not run.
A failing line is reported at its own line of the Markdown file.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))

# Pages whose examples load the real embedding model (torch + MiniLM, several seconds),
# and pages whose examples talk to the Redis on 127.0.0.1:6379.
SLOW_PAGES = frozenset({"README.md", "longterm.md", "integrations.md"})
SERVER_PAGES = frozenset({"redis.md"})

_BLOCK = re.compile(
    r"(?P<skip><!--\s*skip\b[^>]*-->[ \t]*\n(?:[ \t]*\n)*)?^```python[ \t]*\n(?P<code>.*?)^```", re.M | re.S
)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the first code line in the Markdown file
    code: str
    skip: bool


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, text.count("\n", 0, m.start("code")) + 1, m.group("code"), m.group("skip") is not None)
        for m in _BLOCK.finditer(text)
    ]


def run_blocks(blocks: list[Block]) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__docs_example__"}
    for block in blocks:
        if block.skip:
            continue
        # Padding keeps traceback line numbers equal to the Markdown file's.
        code = compile("\n" * (block.line - 1) + block.code, str(block.path), "exec")
        exec(code, namespace)
    return namespace


def _page_param(path: Path) -> Any:
    marks = [pytest.mark.slow] if path.name in SLOW_PAGES else []
    marks += [pytest.mark.integration] if path.name in SERVER_PAGES else []
    return pytest.param(path, id=path.name, marks=marks)


PAGES_WITH_CODE = [p for p in [README, *PAGES] if python_blocks(p)]


@pytest.mark.parametrize("page", [_page_param(p) for p in PAGES_WITH_CODE])
def test_python_blocks_of_the_page_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # The examples read HMEM_* like an application would: start from none.
    for name in [n for n in os.environ if n.startswith("HMEM_")]:
        monkeypatch.delenv(name)
    run_blocks(python_blocks(page))


def test_every_page_with_python_runs_something() -> None:
    skipped_pages = [p.name for p in PAGES_WITH_CODE if all(b.skip for b in python_blocks(p))]
    assert skipped_pages == []
    assert README in PAGES_WITH_CODE


def test_blocks_are_found_with_their_lines_and_skip_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n```python\nx = 1\n```\n\n<!-- skip: needs a key -->\n```python\nraise SystemExit\n```\n"
        "\n```bash\nrm -rf /\n```\n\n```python\ny = x + 1\n1 / 0\n```\n",
        encoding="utf-8",
    )
    blocks = python_blocks(page)
    assert [(b.line, b.skip) for b in blocks] == [(4, False), (9, True), (17, False)]
    with pytest.raises(ZeroDivisionError) as err:
        run_blocks(blocks)
    # The failure points at the Markdown line, so a broken example is easy to find.
    assert (err.traceback[-1].path, err.traceback[-1].lineno + 1) == (page, 18)


# Dotted names in the docs that are not Python objects.
_NOT_PYTHON = {"hmem.db": "a SQLite file name", "hmem.redis": "a logger name"}
_PATH = re.compile(r"(?<![\w./-])(?:hmem|tests|bench|data|docs)/[\w./*-]*\w")  # globs allowed
_NAME = re.compile(r"(?<![\w./-])hmem(?:\.\w+)+")
_LINK = re.compile(r"\]\((?![a-z]+:)([^)#\s]+)")  # a Markdown link to a file of the repository


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("page", [pytest.param(p, id=p.name) for p in [README, ROOT / "BENCHMARKS.md", *PAGES]])
def test_paths_names_and_links_the_page_mentions_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing_paths = sorted({p for p in _PATH.findall(text) if not any(ROOT.glob(p))})
    unknown_names = sorted({n for n in _NAME.findall(text) if n not in _NOT_PYTHON and not _resolves(n)})
    dead_links = sorted({link for link in _LINK.findall(text) if not (page.parent / link).exists()})
    assert (missing_paths, unknown_names, dead_links) == ([], [], [])


def test_the_reference_check_finds_stale_paths_names_and_links(tmp_path: Path) -> None:
    text = "See `hmem/core/window.py`, `hmem.core.window` and [x](nowhere.md); `hmem/session/window.py` is fine."
    assert _PATH.findall(text) == ["hmem/core/window.py", "hmem/session/window.py"]
    assert [n for n in _NAME.findall(text) if not _resolves(n)] == ["hmem.core.window"]
    assert _resolves("hmem.session.window.hybrid_window") and not _resolves("hmem.session.window.nope")
    assert _LINK.findall(text) == ["nowhere.md"]
