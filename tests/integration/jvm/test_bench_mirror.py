"""The side-by-side harness's mirror scenario on a tiny workload: `odradek mirror` and
MirrorMaker 2 (Apache Kafka's, dedicated mode) each copy records between two brokers of their
own system with exactly-once on; every record arrives once and unchanged (the harness checks
each one), and both report throughput and replication latency. It never asserts a speed."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_bench_harness import harness


def test_the_mirror_scenario_runs_odradek_mirror_and_mirrormaker_2(tmp_path: Path) -> None:
    done, report = harness(tmp_path, "--a", "odradek", "--b", "kafka", "--scenario",
                           "mirror-100-eos", "--pairs", "1", "--messages", "2000",
                           "--start-timeout", "600")  # JVMs beside the other layer
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["system"], r["ok"], r["error"]) for r in report["runs"]] == [
        ("odradek", True, None), ("kafka", True, None)]
    for run in report["runs"]:
        figures = run["figures"]
        assert figures["mirror_msgs"] > 0, run
        assert 0 < figures["repl_p50"] <= figures["repl_p99"], run
    assert [row["figure"] for row in report["ratios"]][:4] == [
        "mirror msg/s", "mirror MB/s", "replication p50 ms", "replication p99 ms"]
