"""No import cycles inside `odradek/`: every import counts, module-level or lazy, including
those under `if TYPE_CHECKING:` (which is where cycles hide)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import odradek

ROOT = Path(odradek.__file__).parent
PACKAGE = ROOT.name


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Every module `module` names in an import statement, at any depth of its AST."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + is_package]
                prefix = ".".join(base)
                source = f"{prefix}.{node.module}" if node.module else prefix
            else:
                assert node.module is not None
                source = node.module
            yield source
            for alias in node.names:  # `from odradek.broker import app` imports a module
                yield f"{source}.{alias.name}"


def import_graph() -> dict[str, set[str]]:
    """Module -> the odradek modules it imports (edges to packages' `__init__` included)."""
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        graph[module] = {
            name for name in _imported(tree, module, is_package)
            if name in paths and name != module
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    done: set[str] = set()
    for start in sorted(graph):
        if start in done:
            continue
        path = [start]
        on_path = {start}
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            module, edges = stack[-1]
            following = next(edges, None)
            if following is None:
                stack.pop()
                path.pop()
                on_path.discard(module)
                done.add(module)
            elif following in on_path:
                return path[path.index(following):] + [following]
            elif following not in done:
                path.append(following)
                on_path.add(following)
                stack.append((following, iter(sorted(graph[following]))))
    return None


def test_graph_sees_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "odradek.broker.app" in graph["odradek.cli.main"]  # imported inside a function
    assert len(graph) > 100


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
