"""Starting, signalling and watching node processes by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from odradek.cli.cluster.layout import Node


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is parenthesised and may hold spaces
    return text[text.rindex(")") + 2 :].split()


def start_time(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[19]) if fields else 0


def alive(node: Node) -> bool:
    """The recorded process exists, is not a zombie and is the one recorded (a stopped
    process, state T, is alive)."""
    if node.pid <= 0:
        return False
    fields = _stat(node.pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return not node.start_time or int(fields[19]) == node.start_time


def spawn(node: Node) -> None:
    """Start the node in its own session, detached; its output goes to its log."""
    with open(node.log, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "odradek.cli", node.role, "--config", node.config],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    node.pid = process.pid
    node.start_time = start_time(process.pid)


def signal_node(node: Node, sig: signal.Signals) -> bool:
    if not alive(node):
        return False
    try:
        os.kill(node.pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_dead(nodes: list[Node], timeout: float) -> list[Node]:
    """Wait for the nodes to exit; returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    remaining = [n for n in nodes if alive(n)]
    while remaining and time.monotonic() < deadline:
        time.sleep(0.05)
        _reap()
        remaining = [n for n in remaining if alive(n)]
    return remaining


def _reap() -> None:
    """Collect exited children of this process (nodes started by this very command)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
