"""Differential conformance: each scenario's requests go to Apache Kafka and to Odradek, once
per API version, and the responses must agree field by field, but for the differences in
`allowed` (each with its reason).

One pair of brokers (`pair.py`, configured alike: a PLAINTEXT listener for the super user, a
SASL_PLAINTEXT one for the PLAIN user `alice` that the authorization scenarios use) serves the
module; the terminal summary (`tally.py`) prints the counts docs/testing.md reports. Not
compared: Produce v0-v2 (kio has no schema; both brokers refuse them), acks=0 produces (no
response), and SaslHandshake/SaslAuthenticate (every SASL login exercises them; their success
is asserted)."""

from __future__ import annotations

import itertools
import time

import pytest

from odradek.protocol.codec import api_name
from tests.integration.jvm.conformance import (
    acls,
    admin,
    allowed,
    data_plane,
    groups,
    tally,
    transactions,
)
from tests.integration.jvm.conformance.compare import compare
from tests.integration.jvm.conformance.runner import Target, run
from tests.integration.jvm.conformance.scenario import Scenario
from tests.integration.jvm.conformance.steps import Context

SCENARIOS: list[Scenario] = [*data_plane.SCENARIOS, *admin.SCENARIOS, *groups.SCENARIOS,
                             *transactions.SCENARIOS, *acls.SCENARIOS]
CASES = [pytest.param(scenario, version, id=f"{scenario.name}-v{version}")
         for scenario in SCENARIOS for version in scenario.version_range()]
RUNS = itertools.count()


@pytest.mark.parametrize(("scenario", "version"), CASES)
def test_conformance(pair: tuple[Target, Target], scenario: Scenario, version: int) -> None:
    kafka, odradek = pair
    prefix, now = f"{scenario.name}.v{version}.{next(RUNS)}.", time.time_ns() // 1_000_000
    kafka_outcomes = run(list(scenario.steps), kafka, Context(prefix, now), version)
    odradek_outcomes = run(list(scenario.steps), odradek, Context(prefix, now), version)
    unexplained = []
    for theirs, ours in zip(kafka_outcomes, odradek_outcomes, strict=True):
        if not theirs.step.compare:
            continue
        comparison = compare(api_name(theirs.step.api), theirs.version, theirs.tree, ours.tree)
        tally.requests += 1
        tally.fields += comparison.fields
        for difference in comparison.differences:
            entry = allowed.explain(scenario.name, difference.path, theirs.version)
            if entry is None:
                unexplained.append(f"step {theirs.name} v{theirs.version}: {difference}")
            else:
                tally.allowed_by_entry[entry] += 1
    tally.unexplained += len(unexplained)
    assert not unexplained, "\n".join(unexplained)
