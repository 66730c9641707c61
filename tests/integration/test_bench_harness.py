"""The side-by-side harness (`python -m bench.sidebyside`) end to end on a tiny workload:
Odradek against Odradek, each started afresh from its template, a real client's produce and
consume checked, every figure reported as a ratio. It never asserts a speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.sidebyside.brokers import ROOT
from bench.sidebyside.report import BROKER_FIGURES
from bench.sidebyside.scenarios import SCENARIOS

SCENARIO = "produce-100-acks1-p1"
TIMEOUT_S = 600


def harness(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "bench.sidebyside", *args, "--json",
                           str(report), "--log-dir", str(tmp_path / "logs")],
                          cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S)
    return done, json.loads(report.read_text())


def test_odradek_against_odradek_gives_a_ratio_for_every_figure(tmp_path: Path) -> None:
    done, report = harness(tmp_path, "--a", "odradek", "--b", "odradek", "--scenario",
                           SCENARIO, "--pairs", "1", "--messages", "2000")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [(r["system"], r["ok"], r["error"]) for r in report["runs"]] == [
        ("odradek-A", True, None), ("odradek-B", True, None)]
    figures = [*SCENARIOS[SCENARIO].figures, *BROKER_FIGURES]
    assert [row["figure"] for row in report["ratios"]] == [f.label for f in figures]
    for row in report["ratios"]:
        assert row["pairs"] == 1, row
        assert row["a"] > 0 and row["b"] > 0 and row["median"] == row["a"] / row["b"], row
    for run in report["runs"]:
        assert run["figures"]["startup_s"] > 0 and run["figures"]["stop_s"] >= 0
        assert "stopped cleanly" in Path(run["log"]).read_text()  # not killed mid-stop
    assert "A/B (min-max)" in done.stdout


def test_a_broker_that_does_not_start_fails_the_run(tmp_path: Path) -> None:
    done, report = harness(tmp_path, "--a", "true {port}", "--a-name", "gone", "--b",
                           "true {port}", "--b-name", "also-gone", "--scenario", "lifecycle",
                           "--pairs", "1", "--start-timeout", "30")
    assert done.returncode == 1
    assert [(r["system"], r["ok"]) for r in report["runs"]] == [("gone", False),
                                                                ("also-gone", False)]
    assert all(r["error"].startswith("start: exited with 0") for r in report["runs"])
    assert "FAILED: lifecycle pair 1 gone: start: exited with 0" in done.stdout
    assert all(row["pairs"] == 0 and row["median"] is None for row in report["ratios"])


def test_a_system_without_a_mirror_fails_the_mirror_scenario(tmp_path: Path) -> None:
    done, report = harness(tmp_path, "--a", "true {port}", "--a-name", "plain", "--b",
                           "true {port}", "--b-name", "other", "--scenario", "mirror-100-alo",
                           "--pairs", "1")
    assert done.returncode == 1
    assert [(r["system"], r["ok"], r["error"]) for r in report["runs"]] == [
        ("plain", False, "plain has no mirror"), ("other", False, "other has no mirror")]
