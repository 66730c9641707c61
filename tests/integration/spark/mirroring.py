"""What fills the audit's target cluster. Until the mirror service exists, a copy loop does:
a confluent-kafka consumer reads each source partition to its end and a producer writes every
record to the same partition of `<alias>.<topic>` on the target, with its key, value, headers
and CreateTime timestamp, as MM2's DefaultReplicationPolicy names it. The `mirror` fixture of
the audit tests is the one place to swap it for `odradek mirror`: anything with the same
`replicate` method will do."""

from __future__ import annotations

from typing import Protocol

from confluent_kafka.admin import AdminClient

from odradek.spark.audit_rules import target_topic
from tests.integration.clients import Out, create_topic, produce_confluent, read_confluent

ALIAS = "east"


class Mirror(Protocol):
    def replicate(self, topic: str) -> str:
        """Returns the target topic once it holds every record the source topic holds."""
        ...


class CopyLoop:
    def __init__(self, source: str, target: str) -> None:
        self.source, self.target = source, target

    def replicate(self, topic: str) -> str:
        admin = AdminClient({"bootstrap.servers": self.source})
        partitions = len(admin.list_topics(topic, timeout=20).topics[topic].partitions)
        name = target_topic(topic, ALIAS, "default")
        create_topic(self.target, name, partitions)
        records = read_confluent(self.source, topic, partitions=range(partitions))
        produce_confluent(self.target, name, [
            Out(r.key, r.value, r.timestamp, r.headers, r.partition) for r in records],
            {"linger.ms": 5})
        return name
