"""docs/architecture.md is the map of the code: it names every package of `odradek/` and, for
every Kafka request a broker serves, the module that answers it, as the code has them."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from odradek.broker.apis import API_TABLE

ROOT = Path(__file__).resolve().parents[3]
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def section(heading: str) -> str:
    start = PAGE.index(f"## {heading}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start:end if end >= 0 else None]


def test_the_top_level_holds_packages_only() -> None:
    loose = sorted(p.name for p in (ROOT / "odradek").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules outside any package: {loose}"


def test_the_package_map_names_every_package() -> None:
    odradek_tree = section("The package map").split("\ntests/unit/")[0]
    mapped = set(re.findall(r"(?m)^  (\w+)/ ", odradek_tree))
    packages = {p.parent.name for p in (ROOT / "odradek").glob("*/__init__.py")}
    assert packages - mapped == set(), "packages missing from docs/architecture.md"
    assert mapped - packages == set(), "docs/architecture.md maps packages that do not exist"


def test_the_request_table_names_each_request_s_module() -> None:
    documented: dict[str, str] = {}
    for module, names in re.findall(r"(?m)^\| `([\w/]+)\.py` \| ([\w, ]+) \|$",
                                    section("Which file answers a request")):
        for name in names.split(", "):
            assert name not in documented, f"{name} is listed twice"
            documented[name] = module
    served = {}
    for api in API_TABLE:
        handler = api.handler
        while isinstance(handler, functools.partial):
            handler = handler.func
        served[api.name] = handler.__module__.removeprefix("odradek.").replace(".", "/")
    assert documented == served
