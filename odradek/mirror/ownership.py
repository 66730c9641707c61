"""Which process copies which partition: every process of a flow joins one consumer group on
the target cluster (`mirror-<source>-><target>`), subscribed to the flow's target topics.
The group coordinator's assignment is the ownership, one owner per partition; a process
that dies leaves the group after `session.timeout.ms` and its partitions go to the others.
The consumer itself never fetches: each assignment is paused at once. Its poll loop runs in
a thread and hands assignments and revocations to the event loop, waiting for a revocation
to finish (the copier's transaction in flight is committed first). Exactly-once across a
rebalance rests on the per-partition transactional ids, not on the group: a new owner's
InitProducerId fences the old one. So a copier starts a session (InitProducerId) only after
the coordinator confirms this member still owns the partition (`verdict`): a process resumed
after a pause past its session timeout learns that it was removed before it could fence the
partition's rightful owner, as a Connect task only initialises its producer when assigned.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupState, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

log = logging.getLogger("odradek.mirror.ownership")

SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 3_000
"""Kafka Connect's worker group defaults (DistributedConfig)."""
DESCRIBE_TIMEOUT_S = 30.0
_CONSUMER_ONLY_KEYS = ("session.timeout.ms", "heartbeat.interval.ms", "group.id",
                       "enable.auto.commit", "auto.offset.reset")
_CLIENT_KEYS = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
                "sasl.username", "sasl.password", "client.id", "session.timeout.ms",
                "heartbeat.interval.ms")

TP = tuple[str, int]
Partitions = list[TP]
Handler = Callable[[Partitions], Coroutine[Any, Any, None]]


def group_id(source: str, target: str) -> str:
    return f"mirror-{source}->{target}"


class Ownership(Enum):
    OWNER = "owner"
    """The coordinator's stable generation assigns the partition to this member."""
    NOT_OWNER = "not owner"
    """This member is out of the group, or the partition is another member's."""
    UNKNOWN = "unknown"
    """A rebalance is under way, or the coordinator did not answer: ask again later."""


def verdict(state: ConsumerGroupState | None, assignments: Mapping[str, Iterable[TP]],
            member_id: str, partition: TP) -> Ownership:
    """Whether `member_id` owns `partition`, from the group's state and its members'
    assignments as DescribeGroups reports them (state None: no answer)."""
    if state is None or state in (ConsumerGroupState.PREPARING_REBALANCING,
                                  ConsumerGroupState.COMPLETING_REBALANCING,
                                  ConsumerGroupState.UNKNOWN):
        return Ownership.UNKNOWN
    if state != ConsumerGroupState.STABLE or not member_id:
        return Ownership.NOT_OWNER
    owned = assignments.get(member_id)
    return Ownership.OWNER if owned is not None and partition in set(owned) else \
        Ownership.NOT_OWNER


class GroupOwnership:
    def __init__(self, group: str, client: Mapping[str, str], assigned: Handler,
                 revoked: Handler) -> None:
        self.group = group
        self._config: dict[str, Any] = {
            "client.id": f"odradek-mirror-{socket.gethostname()}-{os.getpid()}",
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            **{k: v for k, v in client.items() if k in _CLIENT_KEYS or k.startswith("ssl.")},
            "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "latest",
        }
        self._assigned = assigned
        self._revoked = revoked
        self._topics: list[str] = []
        self._subscribed: list[str] = []
        self._running = False
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.member_id = ""
        self._assigned_member = ""
        """The member id the latest assignment went to."""
        self._admin: AdminClient | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._running = True
        self._thread = threading.Thread(target=self._poll, name=f"ownership-{self.group}",
                                        daemon=True)
        self._thread.start()

    def subscribe(self, topics: Sequence[str]) -> None:
        """The target topics to share (picked up by the poll thread)."""
        self._topics = sorted(topics)

    async def stop(self) -> None:
        """Leave the group: every owned partition is revoked (and its copy stopped) first."""
        self._running = False
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    async def confirm(self, partition: TP) -> Ownership:
        """Ask the group coordinator whether this process still owns `partition` (a target
        topic partition) in the group's current generation."""
        return await asyncio.to_thread(self._describe, partition)

    def _describe(self, partition: TP) -> Ownership:
        if self._admin is None:
            self._admin = AdminClient({k: v for k, v in self._config.items()
                                       if k not in _CONSUMER_ONLY_KEYS})
        try:
            (future,) = self._admin.describe_consumer_groups(
                [self.group], request_timeout=DESCRIBE_TIMEOUT_S).values()
            group = future.result()
        except KafkaException as error:
            log.info("group %s: cannot describe: %s", self.group, error)
            return verdict(None, {}, self._assigned_member, partition)
        assignments = {member.member_id: [(p.topic, p.partition)
                                          for p in member.assignment.topic_partitions]
                       for member in group.members}
        return verdict(group.state, assignments, self._assigned_member, partition)

    def _poll(self) -> None:
        consumer = Consumer(self._config)
        try:
            while self._running:
                if self._topics != self._subscribed and self._topics:
                    self._subscribed = list(self._topics)
                    consumer.subscribe(self._subscribed, on_assign=self._on_assign,
                                       on_revoke=self._on_revoke, on_lost=self._on_revoke)
                message = consumer.poll(0.2)
                if message is not None and message.error() is not None:
                    log.info("group %s: %s", self.group, message.error())
                self.member_id = consumer.memberid() or ""
        finally:
            consumer.close()

    def _call(self, handler: Handler, partitions: list[TopicPartition]) -> None:
        assert self._loop is not None
        owned = [(p.topic, p.partition) for p in partitions]
        asyncio.run_coroutine_threadsafe(handler(owned), self._loop).result()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.assign(partitions)
        consumer.pause(partitions)
        self._assigned_member = consumer.memberid() or ""
        self._call(self._assigned, partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._call(self._revoked, partitions)
