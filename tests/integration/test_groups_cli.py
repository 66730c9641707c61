"""`odradek groups` as a subprocess against a real broker, with groups made by real
confluent-kafka consumers on both the classic and the consumer (KIP-848) protocol. Offsets are
checked independently with AdminClient.list_consumer_group_offsets."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient

from tests.integration.broker_process import ODRADEK, BrokerProcess
from tests.integration.clients import Out, create_topic, now_ms, produce_confluent, unique
from tests.waiting import wait_until

TIMEOUT = 30.0
PROTOCOLS = ("classic", "consumer")
TYPE_NAMES = {"classic": "Classic", "consumer": "Consumer"}
BROKER_OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}
"""Classic groups form without Kafka's 3 s initial rebalance delay, which nothing here is
about."""


def groups(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ODRADEK, "groups", *args, "--bootstrap-server", broker.bootstrap],
                          capture_output=True, text=True, timeout=120)


def rows(output: str, group: str) -> list[list[str]]:
    """The whitespace-split lines of a table that start with `group`."""
    return [line.split() for line in output.splitlines() if line.split()[:1] == [group]]


def committed(broker: BrokerProcess, group: str) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = futures[group].result(TIMEOUT)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or ()
            if tp.offset >= 0}


def new_consumer(broker: BrokerProcess, group: str, protocol: str) -> Consumer:
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                     "group.protocol": protocol, "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "client.id": f"cli-test-{protocol}"})


def consume_and_commit(consumer: Consumer, topic: str, count: int) -> None:
    consumer.subscribe([topic])
    received = 0

    def receive() -> None:
        nonlocal received
        message = consumer.poll(0.2)
        if message is None:
            return
        if message.error():
            raise KafkaException(message.error())
        received += 1

    wait_until(lambda: received >= count, TIMEOUT, lambda: f"received {received} of {count}",
               between=receive)
    consumer.commit(asynchronous=False)


def state_of(broker: BrokerProcess, group: str) -> str | None:
    listed = groups(broker, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return {g["group"]: g["state"] for g in json.loads(listed.stdout)}.get(group)


@contextmanager
def active_group(broker: BrokerProcess, topic: str, protocol: str,
                 count: int) -> Iterator[tuple[str, Consumer]]:
    """A group with one member that consumed and committed `count` records, Stable."""
    group = unique(f"active-{protocol}")
    consumer = new_consumer(broker, group, protocol)
    try:
        consume_and_commit(consumer, topic, count)
        wait_until(lambda: state_of(broker, group) == "Stable", TIMEOUT, f"{group} Stable",
                   between=lambda: consumer.poll(0.2))
        yield group, consumer
    finally:
        consumer.close()


def empty_group(broker: BrokerProcess, topic: str, protocol: str, count: int) -> str:
    """A group whose only member committed `count` records, then left."""
    with active_group(broker, topic, protocol, count) as (group, _):
        pass
    wait_until(lambda: state_of(broker, group) == "Empty", TIMEOUT, f"{group} Empty",
               interval=0.2)
    return group


def fill(broker: BrokerProcess, topic: str, count: int, partitions: int = 1) -> list[int]:
    """Creates `topic` and produces `count` records to each partition, a second apart and an
    hour ago; returns their timestamps."""
    create_topic(broker.bootstrap, topic, partitions)
    start = now_ms() - 3_600_000
    stamps = [start + i * 1000 for i in range(count)]
    produce_confluent(broker.bootstrap, topic, [Out(None, b"v", ts, partition=p)
                                                for p in range(partitions) for ts in stamps])
    return stamps


def iso(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).isoformat(timespec="milliseconds")


# --- list ------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_list_shows_groups_with_type_and_state(broker: BrokerProcess, protocol: str) -> None:
    topic = unique("list")
    fill(broker, topic, 3)
    idle = empty_group(broker, topic, protocol, 3)
    with active_group(broker, topic, protocol, 3) as (group, _):
        listed = groups(broker, "list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines()[0].split() == ["GROUP", "TYPE", "STATE"]
        assert rows(listed.stdout, group) == [[group, TYPE_NAMES[protocol], "Stable"]]
        assert rows(listed.stdout, idle) == [[idle, TYPE_NAMES[protocol], "Empty"]]

        stable = groups(broker, "list", "--state", "stable")
        assert rows(stable.stdout, group) and not rows(stable.stdout, idle)
        empty = groups(broker, "list", "--state", "Empty", "--type", protocol)
        assert rows(empty.stdout, idle) and not rows(empty.stdout, group)
        other = "consumer" if protocol == "classic" else "classic"
        of_other_type = groups(broker, "list", "--type", other)
        assert of_other_type.returncode == 0, of_other_type.stderr
        assert not rows(of_other_type.stdout, group) and not rows(of_other_type.stdout, idle)


# --- describe --------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_describe_shows_committed_offsets_and_lag(broker: BrokerProcess, protocol: str) -> None:
    topic = unique("describe")
    fill(broker, topic, 10, partitions=2)
    with active_group(broker, topic, protocol, 20) as (group, consumer):
        described = groups(broker, "describe", "--group", group)
        assert described.returncode == 0, described.stderr
        summary = rows(described.stdout, group)[0]
        assert summary[-3:] == ["Stable", TYPE_NAMES[protocol], "1"]
        offsets = [r for r in rows(described.stdout, group) if r[1] == topic]
        member_id = consumer.memberid()
        assert [r[1:7] for r in offsets] == [[topic, "0", "10", "10", "0", member_id],
                                            [topic, "1", "10", "10", "0", member_id]]
        assert all(r[-1] == f"cli-test-{protocol}" for r in offsets)

        produce_confluent(broker.bootstrap, topic, [Out(None, b"more", 0, partition=1)] * 5)
        described = groups(broker, "describe", "--group", group, "--members", "--json")
        assert described.returncode == 0, described.stderr
        [info] = json.loads(described.stdout)
        assert (info["state"], info["type"]) == ("Stable", TYPE_NAMES[protocol])
        assert [(o["partition"], o["current_offset"], o["log_end_offset"], o["lag"])
                for o in info["offsets"]] == [(0, 10, 10, 0), (1, 10, 15, 5)]
        [member] = info["members"]
        assert member["consumer_id"] == member_id
        assert member["assignment"] == [{"topic": topic, "partition": 0},
                                        {"topic": topic, "partition": 1}]

        members = groups(broker, "describe", "--group", group, "--members")
        assert [group, member_id] == rows(members.stdout, group)[-1][:2]
        assert f"{topic}(0,1)" in members.stdout

    wait_until(lambda: state_of(broker, group) == "Empty", TIMEOUT, "Empty", interval=0.2)
    described = groups(broker, "describe", "--group", group)
    assert described.returncode == 0, described.stderr
    offsets = [r for r in rows(described.stdout, group) if r[1] == topic]
    assert offsets == [[group, topic, "0", "10", "10", "0", "-", "-", "-"],
                       [group, topic, "1", "10", "15", "5", "-", "-", "-"]]


def test_describe_of_a_missing_group_fails(broker: BrokerProcess) -> None:
    missing = unique("missing")
    described = groups(broker, "describe", "--group", missing)
    assert described.returncode == 1
    assert f"Error: Consumer group '{missing}' does not exist." in described.stderr


def test_describe_all_groups(broker: BrokerProcess) -> None:
    topic = unique("all-groups")
    fill(broker, topic, 2)
    first = empty_group(broker, topic, "classic", 2)
    second = empty_group(broker, topic, "consumer", 2)
    described = groups(broker, "describe", "--all-groups", "--json")
    assert described.returncode == 0, described.stderr
    by_group = {g["group"]: g for g in json.loads(described.stdout)}
    for group in (first, second):
        assert by_group[group]["state"] == "Empty"
        assert [(o["topic"], o["current_offset"]) for o in by_group[group]["offsets"]] == [
            (topic, 2)]


# --- reset-offsets ---------------------------------------------------------------------------


ResetTarget = tuple[str, list[int], str]
"""A topic of two partitions with ten records each (and their timestamps), and an Empty
group that consumed them all."""


@pytest.fixture(scope="module")
def reset_target(broker: BrokerProcess) -> Callable[[str], ResetTarget]:
    """One reset target per protocol, shared by the scenarios (each starts at offset 8)."""
    made: dict[str, ResetTarget] = {}

    def of(protocol: str) -> ResetTarget:
        if protocol not in made:
            topic = unique("reset")
            stamps = fill(broker, topic, 10, partitions=2)
            made[protocol] = topic, stamps, empty_group(broker, topic, protocol, 20)
        return made[protocol]

    return of


@pytest.mark.parametrize(("protocol", "scenario", "expected"), [
    ("classic", ["--to-earliest"], {0: 0, 1: 0}),
    ("consumer", ["--to-earliest"], {0: 0, 1: 0}),
    ("classic", ["--to-offset", "4"], {0: 4, 1: 4}),
    ("classic", ["--to-offset", "99"], {0: 10, 1: 10}),
    ("consumer", ["--shift-by", "-3"], {0: 5, 1: 5}),
    ("classic", ["--shift-by", "-30"], {0: 0, 1: 0}),
    ("classic", ["--to-datetime", "RECORD-6"], {0: 6, 1: 6}),
    ("consumer", ["--to-datetime", "AFTER-LAST"], {0: 10, 1: 10}),
])
def test_reset_offsets_plans_then_executes(
    broker: BrokerProcess, reset_target: Callable[[str], ResetTarget], protocol: str,
    scenario: list[str], expected: dict[int, int],
) -> None:
    topic, stamps, group = reset_target(protocol)
    start = groups(broker, "reset-offsets", "--group", group, "--all-topics",
                   "--to-offset", "8", "--execute")
    assert start.returncode == 0, start.stderr
    assert committed(broker, group) == {(topic, 0): 8, (topic, 1): 8}
    moments = {"RECORD-6": iso(stamps[6]), "AFTER-LAST": iso(stamps[-1] + 1)}
    scenario = [moments.get(arg, arg) for arg in scenario]

    planned = groups(broker, "reset-offsets", "--group", group, "--topic", topic, *scenario)
    assert planned.returncode == 0, planned.stderr
    plan = rows(planned.stdout, group)
    assert plan == [[group, topic, str(p), str(o)] for p, o in expected.items()]
    assert committed(broker, group) == {(topic, 0): 8, (topic, 1): 8}

    dry = groups(broker, "reset-offsets", "--group", group, "--all-topics", *scenario,
                 "--dry-run")
    assert rows(dry.stdout, group) == plan
    assert committed(broker, group) == {(topic, 0): 8, (topic, 1): 8}

    executed = groups(broker, "reset-offsets", "--group", group, "--topic", topic, *scenario,
                      "--execute")
    assert executed.returncode == 0, executed.stderr
    assert rows(executed.stdout, group) == plan
    assert committed(broker, group) == {(topic, p): o for p, o in expected.items()}
    assert state_of(broker, group) == "Empty"


def test_reset_offsets_of_chosen_partitions_and_a_new_group(broker: BrokerProcess) -> None:
    topic = unique("reset-some")
    fill(broker, topic, 5, partitions=3)
    group = unique("never-joined")
    executed = groups(broker, "reset-offsets", "--group", group, "--topic", f"{topic}:0,2",
                      "--to-offset", "3", "--execute")
    assert executed.returncode == 0, executed.stderr
    assert committed(broker, group) == {(topic, 0): 3, (topic, 2): 3}
    shifted = groups(broker, "reset-offsets", "--group", group, "--all-topics", "--shift-by",
                     "1", "--execute")
    assert shifted.returncode == 0, shifted.stderr
    assert committed(broker, group) == {(topic, 0): 4, (topic, 2): 4}
    no_offset = groups(broker, "reset-offsets", "--group", group, "--topic", f"{topic}:1",
                       "--shift-by", "1", "--execute")
    assert no_offset.returncode == 1
    assert f"Cannot shift offset for partition {topic}-1" in no_offset.stderr


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reset_offsets_is_refused_while_a_consumer_is_active(broker: BrokerProcess,
                                                             protocol: str) -> None:
    topic = unique("reset-active")
    fill(broker, topic, 6)
    with active_group(broker, topic, protocol, 6) as (group, _):
        refused = groups(broker, "reset-offsets", "--group", group, "--all-topics",
                         "--to-earliest", "--execute")
        assert refused.returncode == 1
        assert (f"Error: Assignments can only be reset if the group '{group}' is inactive, "
                "but the current state is Stable.") in refused.stderr
        assert refused.stdout == ""
        assert committed(broker, group) == {(topic, 0): 6}


# --- delete ----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_delete_an_empty_group(broker: BrokerProcess, protocol: str) -> None:
    topic = unique("delete")
    fill(broker, topic, 2)
    group = empty_group(broker, topic, protocol, 2)
    deleted = groups(broker, "delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == f"Group '{group}' deleted.\n"
    assert state_of(broker, group) is None
    assert committed(broker, group) == {}
    again = groups(broker, "delete", "--group", group)
    assert again.returncode == 1
    assert "GROUP_ID_NOT_FOUND" in again.stderr


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_delete_an_active_group_fails(broker: BrokerProcess, protocol: str) -> None:
    topic = unique("delete-active")
    fill(broker, topic, 2)
    idle = empty_group(broker, topic, protocol, 2)
    with active_group(broker, topic, protocol, 2) as (group, _):
        deleted = groups(broker, "delete", "--group", group, "--group", idle)
        assert deleted.returncode == 1
        assert f"Error: Group '{group}' could not be deleted:" in deleted.stderr
        assert "NON_EMPTY_GROUP" in deleted.stderr
        assert deleted.stdout == f"Group '{idle}' deleted.\n"
        assert state_of(broker, group) == "Stable"
        assert committed(broker, group) == {(topic, 0): 2}
