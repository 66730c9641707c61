"""The side-by-side harness against Apache Kafka's three-broker cluster
(`bench/sidebyside/kafka_cluster.py`) on a tiny `rf3` workload: both clusters start, take an
RF 3 topic with acks=all, give every record back once, and stop cleanly. It never asserts a
speed."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_bench_harness import harness


def test_the_rf3_scenario_runs_on_kafkas_three_brokers(tmp_path: Path) -> None:
    done, report = harness(tmp_path, "--a", "odradek", "--b", "kafka", "--scenario", "rf3",
                           "--pairs", "1", "--messages", "2000",
                           "--start-timeout", "600")  # four JVMs beside the other layer
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["system"], r["ok"], r["error"]) for r in report["runs"]] == [
        ("odradek", True, None), ("kafka", True, None)]
    for run in report["runs"]:
        assert run["figures"]["stop_s"] is not None, run  # stopped, not killed
        kept = sorted(p.name for p in Path(run["log"]).parent.glob(f"{run['system']}-rf3-1.*.log"))
        assert len(kept) == 4, kept  # the controller's and the brokers' logs outlive the run
