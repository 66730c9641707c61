"""The audit's --window (the Helm chart's spark.audit.window): --from defaults to --to minus
it, and a bad one is refused before Spark starts."""

from __future__ import annotations

import pytest

from odradek.spark.audit import main

COMMON = ["--source-bootstrap", "e:9092", "--target-bootstrap", "w:9092",
          "--source-alias", "east", "--output", "/tmp/unused", "--to", "86400000"]


def test_a_window_that_is_not_a_duration_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*COMMON, "--window", "soon"]) == 2
    assert "not a duration: 'soon'" in capsys.readouterr().err


def test_the_window_sets_from(capsys: pytest.CaptureFixture[str]) -> None:
    """An empty window puts --from at --to, which the audit refuses."""
    assert main([*COMMON, "--window", "0"]) == 2
    assert "--from before --to" in capsys.readouterr().err
