"""The jobs' --master and --conf flags, as spark-submit spells them (no Spark started)."""

from __future__ import annotations

import argparse

import pytest

from odradek.spark import audit, compaction


@pytest.mark.parametrize("module", [audit, compaction])
def test_conf_pairs_last_one_wins_and_a_value_may_hold_an_equals_sign(module: object) -> None:
    parser = argparse.ArgumentParser(exit_on_error=False)
    module.add_arguments(parser)  # type: ignore[attr-defined]
    required = (["--source-bootstrap", "a:1", "--target-bootstrap", "b:1", "--source-alias",
                 "east"] if module is audit else ["--bootstrap", "a:1", "--topics", "t"])
    args = parser.parse_args([*required, "--output", "out", "--master", "spark://m:7077",
                              "--conf", "spark.cores.max=2", "--conf", "spark.cores.max=4",
                              "--conf", "spark.driver.extraJavaOptions=-Da=b"])
    assert args.master == "spark://m:7077"
    assert dict(args.conf) == {"spark.cores.max": "4",
                               "spark.driver.extraJavaOptions": "-Da=b"}


@pytest.mark.parametrize("text", ["spark.cores.max", "=4"])
def test_a_conf_without_a_key_and_value_is_refused(text: str) -> None:
    parser = argparse.ArgumentParser(exit_on_error=False)
    audit.add_arguments(parser)
    with pytest.raises(argparse.ArgumentError, match="is not KEY=VALUE"):
        parser.parse_args(["--conf", text])
