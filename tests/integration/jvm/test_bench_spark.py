"""The side-by-side harness's `spark` scenario end to end on a tiny workload: Odradek against
Odradek, each broker's topic read in Spark with `odradek-kafka` and with Spark's own Kafka
connector, both reads checked and reported as ratios. It never asserts a speed."""

from __future__ import annotations

from pathlib import Path

from bench.sidebyside.report import BROKER_FIGURES
from bench.sidebyside.scenarios import SCENARIOS
from tests.integration.test_bench_harness import harness


def test_the_spark_scenario_reads_with_both_readers(tmp_path: Path) -> None:
    done, report = harness(tmp_path, "--a", "odradek", "--b", "odradek", "--scenario",
                           "spark", "--pairs", "1", "--messages", "3000")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["system"], r["ok"], r["error"]) for r in report["runs"]] == [
        ("odradek-A", True, None), ("odradek-B", True, None)]
    for run in report["runs"]:
        assert set(run["figures"]) >= {"odradek_kafka_msgs", "spark_kafka_msgs"}
    figures = [*SCENARIOS["spark"].figures, *BROKER_FIGURES]
    assert [row["figure"] for row in report["ratios"]] == [f.label for f in figures]
    assert "Spark kafka connector read msg/s" in done.stdout
