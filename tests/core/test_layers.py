"""The package shape: imports point one way, down the layer list of DESIGN.md §2.

Every module of ``hmem/`` is read with :mod:`ast` (nothing is imported). A module may
import modules of its own layer or of a lower one; an import of a higher layer, or any
import circle between modules, fails with the offending edge named. Imports under
``if TYPE_CHECKING:`` are annotations only and are not counted. Lazy imports inside
functions *are* counted: a lazy upward import is still an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hmem"

#: Lowest first. A module belongs to the first entry that is a prefix of its name.
LAYERS: list[tuple[str, ...]] = [
    ("hmem._version", "hmem.errors"),
    ("hmem.types", "hmem.item_filter"),
    ("hmem.protocols", "hmem._checks", "hmem._groups", "hmem._time", "hmem._secrets"),
    ("hmem.tokens", "hmem.config", "hmem.jobs"),
    ("hmem.session",),
    ("hmem.profile",),
    ("hmem.longterm",),
    ("hmem.assembly",),
    ("hmem.backends",),
    ("hmem.providers",),
    ("hmem.transfer", "hmem.build", "hmem._options", "hmem._reads", "hmem._readiness"),
    ("hmem.memory", "hmem._facade", "hmem._pipeline", "hmem.aio", "hmem.views"),
    ("hmem.testing",),
    ("hmem.eval",),
    ("hmem.cli", "hmem.server", "hmem.mcp", "hmem.integrations", "hmem.__main__"),
]
#: The package root re-exports the public API from every layer.
TOP = "hmem"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(name: str) -> int:
    for index, prefixes in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return index
    if name == TOP:
        return len(LAYERS)
    raise AssertionError(f"{name} is in no layer: add it to LAYERS in {__file__}")


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            node.body = []
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        for target in targets:
            # "import hmem.backends.redis.client" names the module; keep the longest known prefix
            module = target
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module and module != name:
                found.add(module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def test_every_module_has_a_layer() -> None:
    for name in _modules():
        _layer(name)


def test_no_upward_import() -> None:
    graph = _graph()
    upward = sorted(
        f"{src} (layer {_layer(src)}) imports {dst} (layer {_layer(dst)})"
        for src, targets in graph.items()
        for dst in targets
        # a package's __init__ may re-export its own modules
        if _layer(dst) > _layer(src) and not dst.startswith(src + ".")
    )
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_nothing_builds_on_the_cli() -> None:
    """The CLI is the outermost shell: the server, MCP and the rest share JSON shapes
    through the types' ``to_dict()`` and :mod:`hmem.views`, never through ``hmem.cli``."""
    reaching = sorted(f"{src} imports {dst}" for src, targets in _graph().items() for dst in targets
                      if (dst == "hmem.cli" or dst.startswith("hmem.cli."))
                      and not (src.startswith("hmem.cli") or src == "hmem.__main__"))
    assert not reaching, "modules that build on the CLI:\n" + "\n".join(reaching)


def test_no_import_circle() -> None:
    graph = _graph()
    # a package __init__ importing its own submodules is re-export, not a dependency cycle
    edges = {src: {d for d in dsts if not d.startswith(src + ".")} for src, dsts in graph.items()}
    circles = _strongly_connected(edges)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in circles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_checker_sees_a_circle_and_an_upward_edge() -> None:
    """The checks above must be able to fail."""
    assert _strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["b", "a"]]
    assert _layer("hmem.cli.main") > _layer("hmem.memory") > _layer("hmem.build") > _layer("hmem.backends.sqlite.db")
    assert _layer("hmem.session.window") < _layer("hmem.longterm.store")
