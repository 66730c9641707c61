"""ClusterHealth: each change of a cluster's state is logged once, and an outcome that a
later one overtook changes nothing."""

import logging
import time

import pytest

from odradek.mirror.clients import ClusterHealth


def changes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage().split(",")[0] for record in caplog.records
            if record.name == "odradek.mirror"]


def test_a_lost_cluster_is_logged_once_until_it_answers_again(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "odradek.mirror")
    health = ClusterHealth()
    health.ok("west", time.monotonic())
    health.failed("west", "refused")
    health.failed("west", "refused again")
    assert health.down() == {"west": "refused again"}
    health.ok("west", time.monotonic())
    assert health.down() == {}
    assert changes(caplog) == ["cluster west is unreachable", "cluster west is reachable again"]


def test_an_answer_to_a_call_begun_before_the_loss_is_not_a_return(
        caplog: pytest.LogCaptureFixture) -> None:
    """The answer arrived before the cluster went away, and was read after."""
    caplog.set_level(logging.INFO, "odradek.mirror")
    health = ClusterHealth()
    begun = time.monotonic()
    health.failed("west", "connection refused")
    health.ok("west", begun)
    assert health.down() == {"west": "connection refused"}
    assert not health.reached("west")
    assert changes(caplog) == ["cluster west is unreachable"]


def test_a_failure_of_a_call_begun_before_an_answer_is_not_a_loss(
        caplog: pytest.LogCaptureFixture) -> None:
    """A flush that timed out while the cluster came back."""
    caplog.set_level(logging.INFO, "odradek.mirror")
    health = ClusterHealth()
    begun = time.monotonic()
    health.ok("west", time.monotonic())
    health.failed("west", "timed out", begun)
    assert health.down() == {}
    assert changes(caplog) == []
