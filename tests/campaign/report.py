"""A campaign's report: `report.json` (figures and every anomaly's evidence),
`history.json.gz` (the whole history, for the checker by hand) and `timeline.png`
(throughput, latency and the faults over time)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

from tests.campaign.checker import CATEGORIES, NOT_PROMISED, Anomaly
from tests.campaign.history import History

EVIDENCE_PER_CATEGORY = 100


def figures(history: History) -> dict[str, Any]:
    return {
        "faults": {"total": len(history.faults),
                   "by_kind": dict(Counter(f.kind for f in history.faults))},
        "operations": {
            "sends": len(history.sends), "acks": len(history.acks),
            "failed_sends": len(history.failures),
            "transactions": dict(Counter(t.outcome for t in history.txns)),
            "reads": len(history.reads), "commits": len(history.commits),
        },
        "records_checked": len(history.final),
        "client_errors": dict(Counter(f"{f.process}: {f.error}" for f in history.failures
                                      if not f.value)),
    }


def write_report(history: History, anomalies: dict[str, list[Anomaly]], out: Path,
                 extra: dict[str, Any]) -> dict[str, Any]:
    report = {
        **extra, **figures(history),
        "anomaly_counts": {category: len(anomalies[category]) for category in CATEGORIES},
        "anomalies": {category: anomalies[category][:EVIDENCE_PER_CATEGORY]
                      for category in CATEGORIES},
        "not_promised": {category: anomalies[category][:EVIDENCE_PER_CATEGORY]
                         for category in NOT_PROMISED},
        "not_promised_counts": {category: len(anomalies[category])
                                for category in NOT_PROMISED},
        "faults_injected": [vars(f) for f in history.faults],
    }
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    with gzip.open(out / "history.json.gz", "wt") as file:
        json.dump(history.to_json(), file)
    timeline(history, out / "timeline.png")
    return report


def timeline(history: History, path: Path) -> None:
    """Acks and reads per second, ack latency (median and max per second), and each
    fault as a bar on its kind's row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    origin = min([f.start for f in history.faults] + [s.time for s in history.sends[:1]]
                 + [r.time for r in history.reads[:1]], default=0.0)
    acks = Counter(int(a.time - origin) for a in history.acks)
    reads = Counter(int(r.time - origin) for r in history.reads)
    latencies: dict[int, list[float]] = {}
    for ack in history.acks:
        latencies.setdefault(int(ack.time - origin), []).append(ack.latency)
    figure, (throughput, latency, faults) = plt.subplots(
        3, 1, figsize=(14, 9), sharex=True, gridspec_kw={"height_ratios": [2, 2, 2]})
    seconds = sorted(set(acks) | set(reads))
    throughput.plot(seconds, [acks.get(s, 0) for s in seconds], label="acks/s", lw=0.8)
    throughput.plot(seconds, [reads.get(s, 0) for s in seconds], label="reads/s", lw=0.8)
    throughput.set_ylabel("records/s")
    throughput.legend(loc="upper right")
    marks = sorted(latencies)
    latency.plot(marks, [sorted(latencies[s])[len(latencies[s]) // 2] for s in marks],
                 label="median", lw=0.8)
    latency.plot(marks, [max(latencies[s]) for s in marks], label="max", lw=0.8)
    latency.set_yscale("log")
    latency.set_ylabel("ack latency (s)")
    latency.legend(loc="upper right")
    kinds = sorted({f.kind for f in history.faults})
    for fault in history.faults:
        row = kinds.index(fault.kind)
        faults.broken_barh([(fault.start - origin, max(fault.end - fault.start, 0.3))],
                           (row - 0.4, 0.8))
        for axis in (throughput, latency):
            axis.axvspan(fault.start - origin, fault.end - origin, color="red", alpha=0.08)
    faults.set_yticks(range(len(kinds)), kinds, fontsize=7)
    faults.set_xlabel("seconds since the first operation")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
