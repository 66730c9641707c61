"""Kafka's own kafka-configs.sh (ConfigCommand) on group configs against `odradek dev`: set on a
group that has no members, described, a bad value refused with Kafka's message, the broker
killed and restarted, then described again (the configs are in the metadata log) and deleted.
Two batches of tool runs, one JVM each."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.jvm.kafka_tools import CONFIGS, Outcome, Step, run_tools

GROUP = "queue-workers"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp("kafka-configs-groups")
    broker = BrokerProcess(root / "data", root / "broker.log")
    broker.start()
    yield broker
    if broker.alive():
        broker.stop()


def configs(name: str, broker: BrokerProcess, *args: str) -> Step:
    return Step(name, CONFIGS, ["--bootstrap-server", broker.bootstrap, "--entity-type",
                                "groups", "--entity-name", GROUP, *args])


@pytest.fixture(scope="module")
def runs(broker: BrokerProcess) -> dict[str, Outcome]:
    before = run_tools([
        configs("set", broker, "--alter", "--add-config",
                "share.auto.offset.reset=earliest,share.record.lock.duration.ms=45000"),
        configs("describe", broker, "--describe"),
        configs("too-short", broker, "--alter", "--add-config",
                "share.record.lock.duration.ms=1000"),
        configs("not-a-number", broker, "--alter", "--add-config",
                "share.delivery.count.limit=many"),
    ])
    broker.restart(hard=True)
    after = run_tools([
        configs("describe-after-restart", broker, "--describe"),
        # every group, those with configs and no members too (ListConfigResources, KIP-1142)
        Step("describe-every-group", CONFIGS, ["--bootstrap-server", broker.bootstrap,
                                               "--describe", "--entity-type", "groups"]),
        configs("delete", broker, "--alter", "--delete-config", "share.record.lock.duration.ms"),
        configs("describe-all", broker, "--describe", "--all"),
    ])
    return {**before, **after}


SET_LINES = [
    f"Dynamic configs for group {GROUP} are:",
    "  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
    "share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}",
    "  share.record.lock.duration.ms=45000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
    "share.record.lock.duration.ms=45000, DEFAULT_CONFIG:"
    "group.share.record.lock.duration.ms=30000}",
]


def test_set_and_described(runs: dict[str, Outcome]) -> None:
    assert runs["set"].ok().lines == [f"Completed updating config for group {GROUP}."]
    assert runs["describe"].ok().lines == SET_LINES


def test_bad_values_are_refused_with_kafkas_message(runs: dict[str, Outcome]) -> None:
    short = runs["too-short"]
    assert short.exit != 0
    assert ("org.apache.kafka.common.errors.InvalidConfigurationException: "
            "share.record.lock.duration.ms must be greater than or equal to "
            "group.share.min.record.lock.duration.ms") in short.stdout + short.stderr
    word = runs["not-a-number"]
    assert word.exit != 0
    assert ("Invalid value many for configuration share.delivery.count.limit: "
            "Not a number of type INT") in word.stdout + word.stderr


def test_configs_survive_a_restart_and_are_deleted(runs: dict[str, Outcome]) -> None:
    assert runs["describe-after-restart"].ok().lines == SET_LINES
    assert runs["describe-every-group"].ok().lines == SET_LINES
    runs["delete"].ok()
    every = {line.split("=", 1)[0].strip(): line for line in runs["describe-all"].ok().lines[1:]}
    assert runs["describe-all"].lines[0] == f"All configs for group {GROUP} are:"
    assert len(every) == 17
    assert every["share.record.lock.duration.ms"] == (
        "  share.record.lock.duration.ms=30000 sensitive=false synonyms={DEFAULT_CONFIG:"
        "group.share.record.lock.duration.ms=30000}")
    assert every["share.auto.offset.reset"] == SET_LINES[1]
