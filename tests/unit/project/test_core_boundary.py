"""The cores do no IO of their own (docs/architecture.md, "Cores without IO"): no core module,
nor any odradek module a core imports, imports an event loop, threads, processes, sockets,
gRPC, a clock or global randomness, lazily or not. The storage layer `log/` does file IO but
reads no clock and uses no event loop or network; its rule modules do no file IO either. `log/`
and the cores read no environment. Imports under `if TYPE_CHECKING:` never run, so they are
allowed (the injected `random.Random` is typed that way)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CORE_PACKAGES = ("protocol", "raft", "metadata", "group", "txn", "share", "replication",
                 "security")
LOG_RULE_MODULES = ("odradek.log.compaction", "odradek.log.cleaning_plan", "odradek.log.config",
                    "odradek.log.leader_validation")
"""The modules of `log/` that are pure rules; the rest of `log/` is the storage layer."""
MIRROR_CORE_MODULES = ("odradek.mirror.config", "odradek.mirror.policy",
                       "odradek.mirror.formats", "odradek.mirror.translation")
"""The mirror's cores; its shell (service, topic sync, replicator) sits beside them."""
NO_IO = frozenset({
    "asyncio", "concurrent", "grpc", "multiprocessing", "random", "secrets", "selectors",
    "signal", "socket", "ssl", "subprocess", "threading", "time", "uvloop",
})
STORAGE_NO_IO = frozenset({
    "asyncio", "grpc", "random", "secrets", "selectors", "socket", "ssl", "subprocess", "time",
    "uvloop",
})
"""What the storage layer `log/` does without: it does file IO, but reads no clock, runs no
event loop and speaks to no network."""
FILE_IO = frozenset({"io", "mmap", "os", "pathlib", "shutil", "tempfile"})
RANDOM_CALLS = frozenset({("uuid", "uuid1"), ("uuid", "uuid4"), ("os", "urandom")})
ENVIRONMENT = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})


def module_paths() -> dict[str, Path]:
    paths = {}
    for path in (ROOT / "odradek").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return paths


MODULES = module_paths()


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes inside `if TYPE_CHECKING:` blocks."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
                "TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped |= {id(inner) for child in node.body for inner in ast.walk(child)}
    return skipped


def run_time_nodes(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of `tree` that can run: all but the TYPE_CHECKING blocks."""
    skipped = _type_checking_only(tree)
    return (node for node in ast.walk(tree) if id(node) not in skipped)


def parse(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(), str(MODULES[module]))


def imports_in(tree: ast.Module, package: str) -> Iterator[tuple[str, int]]:
    """The absolute names a module of `package` imports at run time (lazy imports too), with
    their lines; `from a import b` yields `a.b` as well as `a`."""
    for node in run_time_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            yield base, node.lineno
            for alias in node.names:
                yield f"{base}.{alias.name}", node.lineno


def imports(module: str) -> Iterator[tuple[str, int]]:
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(parse(module), package)


def closure(roots: list[str]) -> set[str]:
    """The odradek modules `roots` import at run time, transitively, with the roots. (What
    the `__init__` of a package a module sits in imports is not followed: it is not what the
    module uses.)"""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo += [name for name, _ in imports(module) if name in MODULES]
    return seen


def core_modules() -> list[str]:
    cores = [name for name in MODULES
             if any(name == f"odradek.{p}" or name.startswith(f"odradek.{p}.")
                    for p in CORE_PACKAGES)]
    return sorted([*cores, *LOG_RULE_MODULES, *MIRROR_CORE_MODULES])


def log_modules() -> list[str]:
    return sorted(name for name in MODULES
                  if name == "odradek.log" or name.startswith("odradek.log."))


def forbidden_imports(modules: set[str], forbidden: frozenset[str]) -> list[str]:
    return sorted(f"{module}:{line} imports {name}" for module in modules
                  for name, line in imports(module) if name.partition(".")[0] in forbidden)


def attribute_uses(module: str, pairs: frozenset[tuple[str, str]]) -> list[str]:
    """Where `module` uses `owner.name` for one of `pairs`, or imports that name from owner."""
    return [f"{module}:{use}" for use in attribute_uses_in(parse(module), pairs)]


def attribute_uses_in(tree: ast.Module, pairs: frozenset[tuple[str, str]]) -> list[str]:
    found = []
    for node in run_time_nodes(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in pairs):
            found.append(f"{node.lineno} uses {node.value.id}.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [f"{node.lineno} imports {node.module}.{alias.name}"
                      for alias in node.names if (node.module, alias.name) in pairs]
    return found


def test_the_cores_and_what_they_import_do_no_io() -> None:
    reached = closure(core_modules())
    assert "odradek.protocol.codec" in reached and "odradek.config.kafka_configs" in reached
    assert not forbidden_imports(reached, NO_IO)
    assert not [use for module in sorted(reached)
                for use in attribute_uses(module, RANDOM_CALLS)]


def test_the_rule_modules_of_log_do_no_file_io() -> None:
    assert not forbidden_imports(set(LOG_RULE_MODULES), FILE_IO)
    assert not [f"{module}:{node.lineno} calls open" for module in LOG_RULE_MODULES
                for node in run_time_nodes(parse(module))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "open"]


def test_the_storage_layer_reads_no_clock_and_uses_no_loop_or_network() -> None:
    assert not forbidden_imports(set(log_modules()), STORAGE_NO_IO)


def test_log_and_the_cores_read_no_environment() -> None:
    modules = log_modules() + core_modules()
    pairs = frozenset(("os", name) for name in ENVIRONMENT)
    assert not [use for module in sorted(set(modules)) for use in attribute_uses(module, pairs)]


WALKED = """
import asyncio.subprocess
from os import environ
from . import sibling
from ..other import thing
if TYPE_CHECKING:
    import socket
    from os import getenv

def later():
    import time
    return os.getenv("X"), uuid.uuid4()
"""


def test_the_walk_sees_lazy_and_relative_imports_but_not_type_checking_ones() -> None:
    tree = ast.parse(WALKED)
    assert sorted(imports_in(tree, "odradek.log")) == [
        ("asyncio.subprocess", 2), ("odradek.log", 4), ("odradek.log.sibling", 4),
        ("odradek.other", 5), ("odradek.other.thing", 5), ("os", 3), ("os.environ", 3),
        ("time", 11)]
    pairs = frozenset(("os", name) for name in ENVIRONMENT) | RANDOM_CALLS
    assert attribute_uses_in(tree, pairs) == [
        "3 imports os.environ", "12 uses os.getenv", "12 uses uuid.uuid4"]
