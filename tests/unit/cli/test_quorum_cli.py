"""`odradek quorum describe`: kafka-metadata-quorum's status fields and replication rows
(lags, the most lagging voter, ages) and its argument errors."""

from __future__ import annotations

import pytest

from odradek.cli.main import main
from odradek.cli.tools.common import ToolError, table
from odradek.cli.tools.quorum import (
    REPLICATION_HEADER,
    QuorumInfo,
    Replica,
    replication_rows,
    status,
    status_text,
)

NOW = 1_700_000_010_000
QUORUM = QuorumInfo(
    leader_id=2, leader_epoch=5, high_watermark=118,
    voters=(Replica(1, 115, NOW - 400, NOW - 900), Replica(2, 120, NOW, NOW),
            Replica(3, 120, NOW - 10, NOW - 10)),
    observers=(Replica(4, 118, NOW - 1500, NOW - 1500), Replica(5, -1, -1, -1)),
)


def test_status_names_the_leader_and_the_most_lagging_voter() -> None:
    fields = status("abc", QUORUM)
    assert fields == {
        "ClusterId": "abc", "LeaderId": 2, "LeaderEpoch": 5, "HighWatermark": 118,
        "MaxFollowerLag": 5, "MaxFollowerLagTimeMs": 900,
        "CurrentVoters": [1, 2, 3], "CurrentObservers": [4, 5],
    }


def test_status_prints_kafkas_lines() -> None:
    assert status_text(status("abc", QUORUM)).splitlines() == [
        "ClusterId:              abc",
        "LeaderId:               2",
        "LeaderEpoch:            5",
        "HighWatermark:          118",
        "MaxFollowerLag:         5",
        "MaxFollowerLagTimeMs:   900",
        "CurrentVoters:          [1,2,3]",
        "CurrentObservers:       [4,5]",
    ]


def test_a_leader_no_voter_is_behind_has_no_lag_time() -> None:
    quorum = QuorumInfo(1, 1, 9, (Replica(1, 9, NOW, NOW), Replica(2, 9, NOW - 5, NOW - 5)),
                        ())
    assert (status("c", quorum)["MaxFollowerLag"], status("c", quorum)["MaxFollowerLagTimeMs"]
            ) == (0, 0)


def test_the_lag_time_is_unknown_when_the_laggard_was_never_caught_up() -> None:
    quorum = QuorumInfo(1, 1, 9, (Replica(1, 9, NOW, NOW), Replica(2, -1, -1, -1)), ())
    assert status("c", quorum)["MaxFollowerLag"] == 10
    assert status("c", quorum)["MaxFollowerLagTimeMs"] == -1


def test_replication_lists_the_leader_then_followers_then_observers() -> None:
    rows = replication_rows(QUORUM, human_readable=False, now_ms=NOW)
    assert rows == [
        (2, 120, 0, NOW, NOW, "Leader"),
        (1, 115, 5, NOW - 400, NOW - 900, "Follower"),
        (3, 120, 0, NOW - 10, NOW - 10, "Follower"),
        (4, 118, 2, NOW - 1500, NOW - 1500, "Observer"),
        (5, -1, 121, -1, -1, "Observer"),
    ]
    assert table(REPLICATION_HEADER, rows).splitlines()[0].split() == list(REPLICATION_HEADER)


def test_human_readable_timestamps_are_ages_and_unknown_stays_minus_one() -> None:
    rows = replication_rows(QUORUM, human_readable=True, now_ms=NOW + 5)
    assert [row[3:5] for row in rows] == [
        ("5 ms ago", "5 ms ago"), ("405 ms ago", "905 ms ago"), ("15 ms ago", "15 ms ago"),
        ("1505 ms ago", "1505 ms ago"), (-1, -1)]


def test_a_timestamp_from_the_future_is_clock_drift() -> None:
    with pytest.raises(ToolError, match="possible drift in system clock"):
        replication_rows(QUORUM, human_readable=True, now_ms=NOW - 1)


def test_a_leader_missing_from_the_voters_is_an_error() -> None:
    with pytest.raises(ToolError, match="leader 7 is not among its voters"):
        status("c", QuorumInfo(7, 1, 0, (Replica(1, 0, -1, -1),), ()))


@pytest.mark.parametrize(("arguments", "message"), [
    (["describe"], "One of --status or --replication must be specified"),
    (["describe", "--status", "--replication"], "Only one of --status or --replication"),
    (["describe", "--status", "--human-readable"],
     "--human-readable is only supported along with --replication"),
    (["--bootstrap-controller", "127.0.0.1:9093", "describe", "--status"],
     "--bootstrap-controller is not supported"),
])
def test_argument_errors_are_one_line(arguments: list[str], message: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["quorum", "--bootstrap-server", "127.0.0.1:1", *arguments]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err and captured.err.count("\n") == 1
    assert captured.err.startswith("odradek quorum: ")
