"""Which process copies which partition: every process of a flow joins one consumer group on
the target cluster (`mirror-<source>-><target>`), subscribed to the flow's target topics.
The group coordinator's assignment is the ownership, one owner per partition; a process
that dies leaves the group after `session.timeout.ms` and its partitions go to the others.
The consumer itself never fetches: each assignment is paused at once. Its poll loop runs in
a thread and hands assignments and revocations to the event loop, waiting for a revocation
to finish (the copier's transaction in flight is committed first). Exactly-once across a
rebalance rests on the per-partition transactional ids, not on the group: a new owner's
InitProducerId fences the old one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition

log = logging.getLogger("odradek.mirror.ownership")

SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 3_000
"""Kafka Connect's worker group defaults (DistributedConfig)."""
_CLIENT_KEYS = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
                "sasl.username", "sasl.password", "client.id", "session.timeout.ms",
                "heartbeat.interval.ms")

Partitions = list[tuple[str, int]]
Handler = Callable[[Partitions], Coroutine[Any, Any, None]]


def group_id(source: str, target: str) -> str:
    return f"mirror-{source}->{target}"


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
        self._call(self._assigned, partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._call(self._revoked, partitions)
