"""The short fault campaign (tests/campaign, docs/reliability.md): a 3-controller, 5-broker
cluster, every node in its own network namespace, under at least 50 faults from a fixed seed
while idempotent, transactional and consume-transform-produce clients write and consumers of
both group protocols and both isolation levels read; the checker must find nothing. About six
minutes; needs root (`ip`, `nft`, `mount`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaign.run import run_campaign

pytestmark = [pytest.mark.campaign, pytest.mark.timeout(1500)]

SEED = 20261127
DURATION_S = 240
MINIMUM_FAULTS = 50


def test_the_short_campaign_finds_no_anomaly(tmp_path: Path) -> None:
    result = run_campaign(SEED, DURATION_S, MINIMUM_FAULTS, tmp_path)
    report = result.report
    summary = {key: report[key] for key in ("faults", "operations", "records_checked",
                                            "client_crashes", "final_read_incomplete",
                                            "client_errors")}
    assert result.anomalies == dict.fromkeys(result.anomalies, 0), \
        f"anomalies: {report['anomalies']}\n{summary}"
    assert result.faults >= MINIMUM_FAULTS, summary
    assert len(report["faults"]["by_kind"]) >= 10, summary
    assert report["client_crashes"] == {}, summary
    assert report["final_read_incomplete"] == {"read_committed": [], "read_uncommitted": []}
    assert report["operations"]["acks"] > 1000, summary
    assert report["operations"]["transactions"].get("committed", 0) > 50, summary
    assert report["operations"]["transactions"].get("aborted", 0) > 10, summary
    assert report["records_checked"] > 1000, summary
