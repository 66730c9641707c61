"""Types the group coordinator's cores share: its settings, the topics it can see, its
timers and the errors its handlers answer with. Nothing here does IO or reads a clock."""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, Protocol, Self, TypeVar

from kio.schema.errors import ErrorCode

from odradek.config.kafka_configs import BrokerConfig
from odradek.group.records import Record, RecordKey, RecordValue

if TYPE_CHECKING:
    import random

    from odradek.config.group import EffectiveGroupConfig


class GroupError(Exception):
    """A request a group refuses, with the Kafka error code to answer."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code
        self.message = message or None


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker configs the coordinator reads, under Kafka's names (see config.py)."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_size: int = 2147483647
    offsets_retention_ms: int = 10080 * 60_000
    offset_metadata_max_bytes: int = 4096
    consumer_session_timeout_ms: int = 45000
    consumer_heartbeat_interval_ms: int = 5000
    consumer_max_size: int = 2147483647
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    share_session_timeout_ms: int = 45000
    share_heartbeat_interval_ms: int = 5000
    share_max_size: int = 200
    share_assignors: tuple[str, ...] = ("simple",)

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> GroupConfig:
        assignors = config["group.consumer.assignors"]
        share_assignors = config["group.share.assignors"]
        assert isinstance(assignors, list) and isinstance(share_assignors, list)
        return cls(
            initial_rebalance_delay_ms=config.integer("group.initial.rebalance.delay.ms"),
            min_session_timeout_ms=config.integer("group.min.session.timeout.ms"),
            max_session_timeout_ms=config.integer("group.max.session.timeout.ms"),
            max_size=config.integer("group.max.size"),
            offsets_retention_ms=config.integer("offsets.retention.minutes") * 60_000,
            offset_metadata_max_bytes=config.integer("offset.metadata.max.bytes"),
            consumer_session_timeout_ms=config.integer("group.consumer.session.timeout.ms"),
            consumer_heartbeat_interval_ms=config.integer(
                "group.consumer.heartbeat.interval.ms"
            ),
            consumer_max_size=config.integer("group.consumer.max.size"),
            consumer_assignors=tuple(str(name) for name in assignors),
            share_session_timeout_ms=config.integer("group.share.session.timeout.ms"),
            share_heartbeat_interval_ms=config.integer("group.share.heartbeat.interval.ms"),
            share_max_size=config.integer("group.share.max.size"),
            share_assignors=tuple(str(name) for name in share_assignors),
        )


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: str
    name: str
    partitions: int


class TopicsView(Protocol):
    """The topics the coordinator can see, as the broker's metadata image has them."""

    def by_name(self, name: str) -> TopicInfo | None: ...

    def by_id(self, topic_id: str) -> TopicInfo | None: ...

    def names(self) -> Iterable[str]: ...


@dataclass(slots=True)
class StaticTopics:
    """A fixed TopicsView, for tests and tools."""

    topics: Mapping[str, TopicInfo] = field(default_factory=dict)

    def by_name(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def by_id(self, topic_id: str) -> TopicInfo | None:
        return next((t for t in self.topics.values() if t.topic_id == topic_id), None)

    def names(self) -> Iterable[str]:
        return self.topics.keys()


TimerKey = tuple[str, ...]
"""(kind, group id, member id...): the shard routes an expired timer by its kind."""


class Timers:
    """Deadlines by key, in milliseconds of the caller's clock; setting a key replaces it.

    A heap orders them; replaced and cancelled entries stay in it until they surface, and
    the heap is rebuilt when they outnumber the live ones (heartbeats replace often)."""

    def __init__(self) -> None:
        self._deadlines: dict[TimerKey, int] = {}
        self._heap: list[tuple[int, TimerKey]] = []

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        self._deadlines[key] = deadline_ms
        heapq.heappush(self._heap, (deadline_ms, key))
        if len(self._heap) > 2 * len(self._deadlines) + 64:
            self._heap = [(d, k) for k, d in self._deadlines.items()]
            heapq.heapify(self._heap)

    def cancel(self, key: TimerKey) -> None:
        self._deadlines.pop(key, None)

    def deadline(self, key: TimerKey) -> int | None:
        return self._deadlines.get(key)

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap and self._deadlines.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)

    def pop_expired(self, now_ms: int) -> list[TimerKey]:
        """Remove and return the keys due at now_ms, earliest first."""
        due = []
        self._drop_stale()
        while self._heap and self._heap[0][0] <= now_ms:
            _, key = heapq.heappop(self._heap)
            del self._deadlines[key]
            due.append(key)
            self._drop_stale()
        return due

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def __contains__(self, key: TimerKey) -> bool:
        return key in self._deadlines


class GroupConfigs(Protocol):
    """Each group's own configs by group id (the broker's `Broker.group_config`)."""

    def __call__(self, group_id: str) -> EffectiveGroupConfig: ...


@dataclass(slots=True)
class GroupContext:
    """What a handler may read besides group state: the time, the topics, the settings, the
    timers, and the source of new member ids."""

    now_ms: int
    topics: TopicsView
    config: GroupConfig
    timers: Timers
    rng: random.Random
    group_configs: GroupConfigs | None = None
    """Each group's own configs (odradek/config/group.py); None: the broker's for all."""

    def consumer_session_timeout_ms(self, group_id: str) -> int:
        """The group's consumer.session.timeout.ms, else group.consumer.session.timeout.ms
        (GroupMetadataManager.consumerGroupSessionTimeoutMs)."""
        if self.group_configs is None:
            return self.config.consumer_session_timeout_ms
        return self.group_configs(group_id).consumer_session_timeout_ms

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's consumer.heartbeat.interval.ms, else the broker's
        group.consumer.heartbeat.interval.ms."""
        if self.group_configs is None:
            return self.config.consumer_heartbeat_interval_ms
        return self.group_configs(group_id).consumer_heartbeat_interval_ms

    def new_member_id(self, prefix: str = "") -> str:
        """Kafka's form: the client id, a dash and a random UUID."""
        member_uuid = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        return f"{prefix}-{member_uuid}" if prefix else str(member_uuid)



class Replayable(Protocol):
    """A group that records change: a KIP-848 consumer group or a share group."""

    def copy(self) -> Self: ...

    def replay(self, key: RecordKey, value: RecordValue | None) -> None: ...


G = TypeVar("G", bound=Replayable)


class Changes(Generic[G]):
    """The records a handler emits, replayed as they come into a draft of the group."""

    def __init__(self, group: G) -> None:
        self.draft: G = group.copy()
        self.records: list[Record] = []

    def add(self, key: RecordKey, value: RecordValue | None) -> None:
        self.records.append((key, value))
        self.draft.replay(key, value)
