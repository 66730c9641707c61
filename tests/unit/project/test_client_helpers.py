"""The integration tests create, name and read topics through one set of helpers,
`tests/integration/clients.py` (docs/testing.md, "The client helpers"): no module writes its
own again."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
INTEGRATION = ROOT / "tests" / "integration"
SHARED = {"create_topic", "new_topic", "make_topic", "unique", "read_all", "produce_values"}
"""Names of the shared helpers, and the names modules gave their own copies."""
OWN_KIND = {
    # builds a CreateTopics request for the conformance scenarios, not a topic
    INTEGRATION / "jvm" / "conformance" / "scenario.py": {"create_topic"},
    # the mirror's readers: read_committed rows, and no records for a topic not yet created
    INTEGRATION / "mirroring.py": {"read_all"},
    INTEGRATION / "test_mirror_mm2.py": {"read_all"},
}


def module_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_no_module_defines_its_own_topic_helpers() -> None:
    copies = {
        str(path.relative_to(ROOT)): sorted(own)
        for path in sorted(INTEGRATION.rglob("*.py")) if path.name != "clients.py"
        if (own := module_functions(path) & SHARED - OWN_KIND.get(path, set()))
    }
    assert not copies, f"use tests/integration/clients.py instead: {copies}"


def test_the_shared_helpers_exist() -> None:
    assert {"create_topic", "unique", "produce_values"} <= module_functions(
        INTEGRATION / "clients.py")
