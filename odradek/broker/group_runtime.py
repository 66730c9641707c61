"""The group coordinator's runtime: a shard per partition of `__consumer_offsets`, in the
shell every internal-topic coordinator shares (coordinator_runtime.py).

What the share-partition side (ShareFetch, ShareAcknowledge) hears of share groups:

- `on_share_member_departed(listener)`: `listener(group_id, member_id)` is called once the
  records removing a member are committed, whether it left (ShareGroupHeartbeat with epoch
  -1) or was fenced (no heartbeat within `group.share.session.timeout.ms`); the records it
  acquired must then be released. It is called on the event loop and must not block.

What share groups ask of the share coordinator: once a heartbeat's records holding new
initializing partitions are committed, `initialize_share_partitions_with(initialize)`'s
`initialize` (the persister's InitializeShareGroupState) creates their state with start
offset -1, and the answer is recorded in the group (GroupCoordinatorShard.
share_partitions_initialized), whose next heartbeat assigns them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Iterator

from odradek.broker.broker import Broker
from odradek.broker.coordinator_runtime import (
    CoordinatorRuntime,
    CoordinatorUnavailable,
    NotCoordinator,
)
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.replica_manager import ReplicaManager
from odradek.group.classic import Output
from odradek.group.coordinator import (
    GroupCoordinatorShard,
    group_type,
)
from odradek.group.model import GroupConfig, TopicInfo
from odradek.group.record_codec import decode_record, encode_record
from odradek.group.records import Record
from odradek.group.share_group import ShareInitialization
from odradek.metadata.image import OFFSETS_TOPIC
from odradek.runtime.clock import now_ms
from odradek.share.partition import UNINITIALIZED_START_OFFSET

__all__ = ["CoordinatorUnavailable", "GroupCoordinatorRuntime", "NotCoordinator"]

log = logging.getLogger(__name__)

ShareDepartureListener = Callable[[str, str], None]
"""(group id, member id) of a share group member that left or was fenced."""
ShareInitializer = Callable[[str, str, int, int, int], Awaitable[None]]
"""(group id, topic id, partition, state epoch, start offset): InitializeShareGroupState."""


class BrokerTopics:
    """The broker's metadata image as the coordinator's TopicsView."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker  # read through: a snapshot replaces the broker's image

    def by_name(self, name: str) -> TopicInfo | None:
        state = self._broker.metadata.topics.get(name)
        return None if state is None else TopicInfo(state.topic_id, name, len(state.partitions))

    def by_id(self, topic_id: str) -> TopicInfo | None:
        name = self._broker.metadata.topic_names_by_id.get(topic_id)
        return None if name is None else self.by_name(name)

    def names(self) -> Iterable[str]:
        return list(self._broker.metadata.topics)


class GroupCoordinatorRuntime(CoordinatorRuntime[GroupCoordinatorShard, Output]):
    topic = OFFSETS_TOPIC
    name = "group"

    def __init__(self, broker: Broker, replicas: ReplicaManager, writer: MetadataWriter) -> None:
        super().__init__(broker, replicas, writer)
        self.config = GroupConfig.from_broker_config(broker.config)
        self.topics = BrokerTopics(broker)
        self.rng = random.Random()
        self._share_departure_listeners: list[ShareDepartureListener] = []
        self._share_initializer: ShareInitializer | None = None
        self._share_initializations: set[asyncio.Task[None]] = set()
        broker.metrics.register_groups(self._group_states, self._offset_count)

    def on_share_member_departed(self, listener: ShareDepartureListener) -> None:
        """Call `listener(group_id, member_id)` whenever a share group member leaves or is
        fenced, once the records removing it are committed."""
        self._share_departure_listeners.append(listener)

    def initialize_share_partitions_with(self, initializer: ShareInitializer) -> None:
        self._share_initializer = initializer

    def new_shard(self, partition: int) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(self.config, self.topics, self.rng,
                                     self.broker.group_config)

    def replay(self, shard: GroupCoordinatorShard, key: bytes, value: bytes | None,
               producer_id: int) -> None:
        if producer_id >= 0:
            shard.replay_transactional(producer_id, *decode_record(key, value))
        else:
            shard.replay(*decode_record(key, value))

    def replay_marker(self, shard: GroupCoordinatorShard, producer_id: int,
                      commit: bool) -> None:
        shard.complete_transaction(producer_id, commit)

    def transaction_of(self, out: Output) -> tuple[int, int] | None:
        return out.transaction

    def encode(self, record: Record) -> tuple[bytes, bytes | None]:
        return encode_record(*record)

    def loaded(self, partition: int, shard: GroupCoordinatorShard) -> Output | None:
        shard.loaded(now_ms())
        return None

    def topic_settings(self) -> tuple[int, int, dict[str, str]]:
        config = self.broker.config
        return (config.integer("offsets.topic.num.partitions"),
                config.integer("offsets.topic.replication.factor"),
                {"cleanup.policy": "compact", "compression.type": "producer",
                 "segment.bytes": str(config.integer("offsets.topic.segment.bytes"))})

    def acts_on_release(self, out: Output) -> bool:
        return bool(out.share_initializations)

    def released(self, partition: int, out: Output) -> None:
        for initialization in out.share_initializations:
            task = asyncio.get_running_loop().create_task(
                self._initialize_share_partitions(initialization))
            self._share_initializations.add(task)
            task.add_done_callback(self._share_initializations.discard)
        for protocol, duration_ms in out.rebalances:
            self.broker.metrics.count_rebalance(protocol, duration_ms)
        for group_id, member_id in out.departed:
            for listener in self._share_departure_listeners:
                try:
                    listener(group_id, member_id)
                except Exception:
                    log.exception("share group %s: the departure of %s was not handled",
                                  group_id, member_id)

    async def _initialize_share_partitions(self, initialization: ShareInitialization) -> None:
        """Ask the share coordinator for the state, then record what it answered; if this
        broker is no longer the group's coordinator, the next one asks again."""
        assert self._share_initializer is not None, "initialize_share_partitions_with first"
        group_id = initialization.group_id
        work = sorted(initialization.keys())
        answers = await asyncio.gather(*(
            self._share_initializer(group_id, topic_id, partition, initialization.state_epoch,
                                    UNINITIALIZED_START_OFFSET)
            for topic_id, partition in work), return_exceptions=True)
        failed = []
        for (topic_id, partition), answer in zip(work, answers, strict=True):
            if isinstance(answer, BaseException):
                failed.append((topic_id, partition))
                log.warning("share group %s: initializing the state of %s-%d failed: %r",
                            group_id, topic_id, partition, answer)
        try:
            await self.run(group_id, lambda shard, now: (
                shard.share_partitions_initialized(initialization, failed)))
        except (CoordinatorUnavailable, NotCoordinator) as error:
            log.info("share group %s: the initialized state was not recorded (%r); the "
                     "group's coordinator asks again", group_id, error)
            return
        if failed:
            log.info("share group %s: left initializing: %s; a later heartbeat asks again",
                     group_id, ", ".join(f"{topic}-{partition}" for topic, partition in failed))

    def topics_changed(self, partition: int, shard: GroupCoordinatorShard) -> Output:
        return shard.refresh_topics(now_ms())

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker was appended to a partition this broker leads: apply or drop the
        transaction's offsets."""
        shard = self.shards.get(partition)
        if shard is not None:
            shard.complete_transaction(producer_id, commit)

    def close(self) -> None:
        for task in self._share_initializations:
            task.cancel()
        super().close()

    async def expire_offsets(self) -> None:
        for partition, shard in list(self.shards.items()):
            self.write_if_led(partition, shard.expire_offsets(now_ms()))

    def _group_states(self) -> Iterator[tuple[str, str, str, int]]:
        for shard in list(self.shards.values()):
            for group in list(shard.groups.values()):
                yield group.group_id, group_type(group), group.state, len(group.members)

    def _offset_count(self) -> int:
        return sum(len(committed) for shard in list(self.shards.values())
                   for committed in list(shard.offsets.values()))
