"""Checks shared by the operator tools' tests, which run `odradek <tool>` as a subprocess."""

from __future__ import annotations

import subprocess

CONSUMER_COUNT = "Processed a total of"
"""The console consumer's closing line on stderr, printed on failure too, as Kafka's is."""


def one_line_failure(result: subprocess.CompletedProcess[str] | subprocess.CompletedProcess[bytes],
                     tool: str | None = None, *expected: str) -> str:
    """The one line a failed tool printed on stderr, after checking that it failed, printed
    no traceback and, but for the console consumer's count, nothing else on stderr; it must
    start `odradek <tool>: ` when `tool` is given, and hold each of `expected`."""
    stderr = (result.stderr.decode(errors="replace") if isinstance(result.stderr, bytes)
              else result.stderr)
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if not line.startswith(CONSUMER_COUNT)]
    assert len(lines) == 1, stderr
    (line,) = lines
    if tool is not None:
        assert line.startswith(f"odradek {tool}: "), line
    for text in expected:
        assert text in line, line
    return line


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    """The standard output of a tool that must have succeeded."""
    assert result.returncode == 0, result.stderr
    return result.stdout
