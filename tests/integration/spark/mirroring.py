"""What fills the audit's target cluster: the real mirror service, `odradek mirror` east->west
with MM2's DefaultReplicationPolicy (`orders` on east is `east.orders` on west)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Protocol

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from odradek.spark.audit_rules import target_topic
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import Rec, read_confluent
from tests.integration.mirror_process import MirrorProcess, properties
from tests.integration.test_compaction import FAST_CLEANER
from tests.waiting import wait_until

ALIAS = "east"
TARGET_ALIAS = "west"
MIRRORED_WITHIN_S = 120


def dev_cluster(factory: pytest.TempPathFactory, name: str,
                overrides: Mapping[str, str] = FAST_CLEANER) -> Iterator[BrokerProcess]:
    """An `odradek dev` cluster, by default with its cleaner running every 100 ms."""
    root = factory.mktemp(name)
    process = BrokerProcess(root / "data", root / "broker.log", overrides=dict(overrides))
    process.start()
    yield process
    process.stop()


class Mirror(Protocol):
    def replicate(self, topic: str) -> str:
        """Returns the target topic once it holds every record the source topic holds."""
        ...


class ServiceMirror:
    """`odradek mirror` copying every topic of the source to the target, for a test module."""

    def __init__(self, directory: Path, source: str, target: str) -> None:
        self.source, self.target = source, target
        flow = f"{ALIAS}->{TARGET_ALIAS}"
        self.process = MirrorProcess(directory, properties(
            {ALIAS: source, TARGET_ALIAS: target},
            **{f"{flow}.enabled": "true", f"{flow}.topics": ".*"}))

    def start(self) -> ServiceMirror:
        self.process.start()
        return self

    def stop(self) -> None:
        self.process.stop()

    def replicate(self, topic: str) -> str:
        admin = AdminClient({"bootstrap.servers": self.source})
        partitions = range(len(admin.list_topics(topic, timeout=20).topics[topic].partitions))
        name = target_topic(topic, ALIAS, "default")

        def mirrored() -> bool:
            """Every record the source holds now is on the target (a compacted source may
            have dropped records the mirror copied before the cleaner ran)."""
            topics = AdminClient({"bootstrap.servers": self.target}).list_topics(timeout=20)
            if name not in topics.topics:
                return False
            copied = Counter(_content(r) for r in read_confluent(self.target, name, partitions))
            held = Counter(_content(r) for r in read_confluent(self.source, topic, partitions))
            return not held - copied

        wait_until(mirrored, MIRRORED_WITHIN_S,  # a just-created topic may lack a leader
                   lambda: f"{topic} mirrored to {name}\n{self.process.logs()[-3000:]}",
                   ignoring=KafkaException)
        return name


def _content(record: Rec) -> tuple[object, ...]:
    return (record.partition, record.key, record.value, record.timestamp, record.headers)
