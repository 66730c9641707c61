"""Everything `odradek` imports at run time is a runtime dependency: a module found only in
the `dev` extra makes the first README command crash on a fresh machine (it once did, with
cramjam). The one exception is an optional extra's own package: `odradek/spark/` may import
what `odradek[spark]` installs, and nothing outside it may."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BUILD_ONLY = {"odradek/rpc/codegen.py"}
"""Run by setup.py at build time, with the build system's requirements."""


def _distribution_name(requirement: str) -> str:
    name = re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


EXTRA_PACKAGES = {"spark": ("odradek/spark/", "odradek/cli/spark.py")}
"""An optional extra, and the only code that may import what it installs (the `audit` and
`compact-snapshot` verbs check for it, to say how to install it)."""


def runtime_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {_distribution_name(r) for r in project["dependencies"]}


def imported_top_level_modules() -> dict[str, set[str]]:
    """Each third-party module imported anywhere in odradek/ (lazy imports too), and where."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "odradek").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative in BUILD_ONLY:
            continue
        for node in ast.walk(ast.parse(path.read_text(), relative)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "odradek" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(relative)
    return found


def test_every_imported_module_comes_from_a_runtime_dependency() -> None:
    distributions = importlib.metadata.packages_distributions()
    required = runtime_requirements()
    missing = {}
    for module, users in imported_top_level_modules().items():
        providers = {_distribution_name(d) for d in distributions.get(module, [module])}
        allowed = set(required)
        for extra, paths in EXTRA_PACKAGES.items():
            if all(user.startswith(paths) for user in users):
                allowed |= _with_extras(extra)
        if not providers & allowed:
            missing[module] = sorted(users)
    assert not missing, f"imported at run time but not in [project].dependencies: {missing}"


def _with_extras(extra: str) -> set[str]:
    """An optional extra's requirements and what their own extras bring, as installed
    (`pyspark[sql]` brings pyarrow)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    found = set()
    for requirement in project["optional-dependencies"][extra]:
        name = _distribution_name(requirement)
        found.add(name)
        wanted = re.findall(r"\[([^\]]*)\]", requirement)
        for own in wanted[0].split(",") if wanted else []:
            for nested in importlib.metadata.requires(name) or []:
                if re.search(rf"extra\s*==\s*['\"]{own.strip()}['\"]", nested):
                    found.add(_distribution_name(nested))
    return found


def test_the_check_sees_lazy_imports_and_names_dev_only_packages() -> None:
    modules = imported_top_level_modules()
    assert "confluent_kafka" in modules  # imported inside functions only
    assert "pytest" not in modules
    assert "cramjam" in modules and "cramjam" in runtime_requirements()
    assert "pyspark" in modules and "pyspark" not in runtime_requirements()
    assert all(user.startswith("odradek/spark/") for user in modules["pyarrow"])
