"""Consumer-group drivers for the integration tests: several real consumers of one client
library, polled side by side, each remembering what it was assigned and what it read."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka import TopicPartition as KTopicPartition

from tests.integration.clients import TIMEOUT, Out, kafka_python_subscriber, produce_confluent

OPEN: list[GroupDriver] = []
"""Every group driver made, so that a failed test's consumers are closed (conftest.py)."""

Read = tuple[int, int]
"""(partition, offset) of a record a consumer received."""


@dataclass
class Member:
    """One consumer: what it owns now and everything it received."""

    name: str
    client: Any
    owned: set[int] = field(default_factory=set)
    reads: list[Read] = field(default_factory=list)
    revocations: int = 0


def fill(bootstrap: str, topic: str, partitions: int, per_partition: int,
         start: int = 0) -> None:
    outs = [Out(None, f"{p}:{start + i}".encode(), int(time.time() * 1000), partition=p)
            for p in range(partitions) for i in range(per_partition)]
    produce_confluent(bootstrap, topic, outs)


def split_evenly(members: Sequence[Member], partitions: int) -> bool:
    owned = [m.owned for m in members]
    union = set().union(*owned)
    return union == set(range(partitions)) and sum(len(o) for o in owned) == partitions and (
        max(len(o) for o in owned) - min(len(o) for o in owned) <= 1
    )


class GroupDriver:
    """Consumers of one client library in one group, on one topic; each driver polls,
    commits, reads commits and closes its members its own way."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config: Any) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.config = config
        self.members: list[Member] = []
        OPEN.append(self)

    def add(self, name: str) -> Member:
        raise NotImplementedError

    def poll(self) -> None:
        raise NotImplementedError

    def commit(self, member: Member) -> None:
        raise NotImplementedError

    def committed(self, member: Member, partitions: int) -> dict[int, int]:
        raise NotImplementedError

    def close(self, member: Member) -> None:
        raise NotImplementedError

    def close_all(self) -> None:
        for member in list(self.members):
            self.close(member)


# --- confluent-kafka (librdkafka) ----------------------------------------------------------------


class ConfluentGroup(GroupDriver):
    def add(self, name: str, **extra: Any) -> Member:
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            **self.config, **extra,
        })
        member = Member(name, consumer)
        incremental = (
            "cooperative" in str(self.config.get("partition.assignment.strategy", ""))
            or self.config.get("group.protocol") == "consumer"
        )

        def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
            if incremental:
                member.owned |= {tp.partition for tp in partitions}
            else:
                member.owned = {tp.partition for tp in partitions}

        def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
            if partitions:
                member.revocations += 1
            member.owned -= {tp.partition for tp in partitions}

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke,
                           on_lost=on_revoke)
        self.members.append(member)
        return member

    def poll(self) -> None:
        for member in self.members:
            message = member.client.poll(0.05)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            member.reads.append((message.partition(), message.offset()))

    def commit(self, member: Member) -> None:
        member.client.commit(asynchronous=False)

    def committed(self, member: Member, partitions: int) -> dict[int, int]:
        wanted = [TopicPartition(self.topic, p) for p in range(partitions)]
        return {tp.partition: tp.offset for tp in member.client.committed(wanted, TIMEOUT)}

    def close(self, member: Member) -> None:
        member.client.close()
        self.members.remove(member)


# --- kafka-python --------------------------------------------------------------------------------


class KafkaPythonGroup(GroupDriver):
    """kafka-python consumers, each polled by a thread of its own as applications do (its
    poll joins the group synchronously: one thread polling three would starve two)."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config: Any) -> None:
        super().__init__(bootstrap, group, topic, **config)
        self._pollers: dict[str, tuple[threading.Thread, threading.Event]] = {}
        self._poller_errors: list[Exception] = []

    def add(self, name: str) -> Member:
        consumer = kafka_python_subscriber(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            enable_auto_commit=False, auto_offset_reset="earliest", **self.config,
        )
        member = Member(name, consumer)
        self.members.append(member)
        stop = threading.Event()
        poller = threading.Thread(target=self._poll_until, args=(member, stop), daemon=True)
        self._pollers[name] = (poller, stop)
        poller.start()
        return member

    def _poll_until(self, member: Member, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                batches = member.client.poll(timeout_ms=100)
                member.owned = {tp.partition for tp in member.client.assignment()}
                for records in batches.values():
                    member.reads += [(r.partition, r.offset) for r in records]
        except Exception as error:  # noqa: BLE001 - raised in the test's thread by poll()
            self._poller_errors.append(error)

    def _stop(self, member: Member) -> None:
        """Hand the consumer back to the calling thread (kafka-python is not thread-safe)."""
        poller, stop = self._pollers[member.name]
        stop.set()
        poller.join(TIMEOUT)

    def poll(self) -> None:
        """The pollers read; the test's thread only paces its checks, and fails with a
        poller that failed."""
        if self._poller_errors:
            raise self._poller_errors[0]
        time.sleep(0.05)

    def commit(self, member: Member) -> None:
        self._stop(member)
        member.client.commit()

    def committed(self, member: Member, partitions: int) -> dict[int, int]:
        return {p: member.client.committed(KTopicPartition(self.topic, p)) or -1
                for p in range(partitions)}

    def close(self, member: Member) -> None:
        self._stop(member)
        member.client.close()
        self.members.remove(member)


# --- aiokafka ------------------------------------------------------------------------------------


class AiokafkaGroup(GroupDriver):
    """aiokafka consumers on a private event loop, driven synchronously like the others."""

    def __init__(self, bootstrap: str, group: str, topic: str, **config: Any) -> None:
        super().__init__(bootstrap, group, topic, **config)
        self.loop = asyncio.new_event_loop()

    def add(self, name: str) -> Member:
        async def start() -> AIOKafkaConsumer:
            consumer = AIOKafkaConsumer(
                self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                enable_auto_commit=False, auto_offset_reset="earliest", **self.config,
            )
            await consumer.start()
            return consumer

        member = Member(name, self.loop.run_until_complete(start()))
        self.members.append(member)
        return member

    def poll(self) -> None:
        async def poll_all() -> None:
            for member in self.members:
                batches = await member.client.getmany(timeout_ms=50)
                member.owned = {tp.partition for tp in member.client.assignment()}
                for records in batches.values():
                    member.reads += [(r.partition, r.offset) for r in records]

        self.loop.run_until_complete(poll_all())

    def commit(self, member: Member) -> None:
        self.loop.run_until_complete(member.client.commit())

    def committed(self, member: Member, partitions: int) -> dict[int, int]:
        from aiokafka.structs import TopicPartition as ATopicPartition

        async def read() -> dict[int, int]:
            return {p: await member.client.committed(ATopicPartition(self.topic, p)) or -1
                    for p in range(partitions)}

        return self.loop.run_until_complete(read())

    def close(self, member: Member) -> None:
        self.loop.run_until_complete(member.client.stop())
        self.members.remove(member)

    def close_all(self) -> None:
        super().close_all()
        self.loop.close()
