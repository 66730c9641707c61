"""Running kafkajs through `kafkajs/client.js` (see its header for the command format)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

NODE, NPM = shutil.which("node"), shutil.which("npm")
CLIENT_DIR = Path(__file__).parent / "kafkajs"
INSTALLED = CLIENT_DIR / "node_modules" / "kafkajs" / "package.json"


def run_kafkajs(bootstrap: str, *steps: dict[str, Any],
                security: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], str]:
    """Every step's {"ok": ...} or {"error": ...}, and kafkajs' log (stderr); `security`
    holds kafkajs' `ssl` and `sasl` options."""
    assert NODE is not None, "node not found"
    command = json.dumps({"brokers": bootstrap.split(","), "steps": list(steps),
                          **(security or {})})
    done = subprocess.run([NODE, "client.js"], cwd=CLIENT_DIR, input=command,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["results"], done.stderr
