"""The Kafka side of the data source, with confluent-kafka: the planning lookups (topics,
partitions, log ends and offsets for times, with the read's isolation level), the read of
one offset range by an assigned consumer (no group membership, no commits), and the
producer the sink and the audit write with."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
)
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType

from odradek.net.librdkafka import FETCH_QUEUE_BACKOFF_MS
from odradek.spark.offset_ranges import DataLossError, OffsetRange
from odradek.spark.source_options import (
    Assign,
    ReadOptions,
    Strategy,
    Subscribe,
    SubscribePattern,
    TopicPartition,
)

TIMEOUT_S = 30.0
CONSUMER_ONLY = ("isolation.level", "group.id", "group.instance.id", "fetch.", "max.poll.",
                 "queued.", "enable.partition.eof", "check.crcs")
"""Client configs an AdminClient would warn about (librdkafka's consumer properties)."""
BATCH = 10_000
OUT_OF_RANGE = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
PRODUCER_DEFAULTS: dict[str, Any] = {"partitioner": "murmur2_random", "enable.idempotence": True}
"""As the Java producer of Spark's sink: a keyed record goes to the partition Kafka's default
partitioner picks (murmur2), and sends are idempotent (the Java client's default since 3.0);
acks=all is librdkafka's default too."""


class ClusterLookup:
    """An OffsetLookup over one cluster, with AdminClient (as Spark 3.1+ plans with Admin)."""

    def __init__(self, client: Mapping[str, str]) -> None:
        admin_config: dict[str, Any] = {key: value for key, value in client.items()
                                         if not key.startswith(CONSUMER_ONLY)}
        self.admin = AdminClient(admin_config)
        committed = client.get("isolation.level", "read_uncommitted") == "read_committed"
        self.isolation = (IsolationLevel.READ_COMMITTED if committed
                          else IsolationLevel.READ_UNCOMMITTED)

    def partitions(self, strategy: Strategy) -> list[TopicPartition]:
        """The partitions a strategy names now: subscribed topics that do not exist read
        nothing; a pattern never matches internal (`__`) topics."""
        if isinstance(strategy, Assign):
            return list(strategy.partitions)
        topics = self.admin.list_topics(timeout=TIMEOUT_S).topics
        if isinstance(strategy, Subscribe):
            names = [t for t in strategy.topics if t in topics]
        else:
            assert isinstance(strategy, SubscribePattern)
            names = [t for t in topics if not t.startswith("__") and strategy.matches(t)]
        for name in names:
            if topics[name].error is not None:
                raise KafkaException(topics[name].error)
        return sorted((name, p) for name in names for p in topics[name].partitions)

    def topic_config(self, topics: Sequence[str], name: str) -> dict[str, str]:
        """Each topic's value of the config `name` (DescribeConfigs), whatever its source;
        topics deleted meanwhile are left out."""
        if not topics:
            return {}
        resources = [ConfigResource(ResourceType.TOPIC, topic) for topic in topics]
        found = {}
        for resource, future in self.admin.describe_configs(
                resources, request_timeout=TIMEOUT_S).items():
            try:
                entries = future.result()
            except KafkaException as error:
                if error.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    continue
                raise
            found[resource.name] = entries[name].value
        return found

    def earliest(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list({tp: OffsetSpec.earliest() for tp in partitions})

    def latest(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._list({tp: OffsetSpec.latest() for tp in partitions})

    def for_times(self, times: Mapping[TopicPartition, int]
                  ) -> dict[TopicPartition, int | None]:
        found = self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in times.items()})
        return {tp: None if offset < 0 else offset for tp, offset in found.items()}

    def _list(self, specs: Mapping[TopicPartition, OffsetSpec]) -> dict[TopicPartition, int]:
        if not specs:
            return {}
        request = {CTopicPartition(t, p): spec for (t, p), spec in specs.items()}
        futures = self.admin.list_offsets(request, isolation_level=self.isolation,
                                          request_timeout=TIMEOUT_S)
        return {(tp.topic, tp.partition): future.result().offset
                for tp, future in futures.items()}


def consumer_config(options: ReadOptions) -> dict[str, Any]:
    """An executor's consumer: the user's client configs, a group id that joins nothing
    (`kafka.group.id`, else groupIdPrefix and a random id), no commits, and an end-of-log
    event so that a range ending in a gap (markers, compaction) is seen to end. The default
    isolation is the Java client's read_uncommitted, as in Spark (librdkafka's default is
    read_committed). The fetcher does not wait librdkafka's default second once a partition's
    queue is full (`FETCH_QUEUE_BACKOFF_MS`): with that wait, a task took 2.8 s to read half a
    million 100-byte records instead of 0.3 s."""
    return {
        "group.id": f"{options.group_id_prefix}-{uuid.uuid4()}-executor",
        "isolation.level": "read_uncommitted",
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
        **options.client,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error" if options.fail_on_data_loss else "earliest",
    }


def read_range(config: Mapping[str, Any], offset_range: OffsetRange,
               poll_timeout_ms: int = 120_000) -> Iterator[list[Message]]:
    """The records of [start, end) in offset order, in chunks. Offsets the log no longer
    holds (compacted, aborted, markers) are simply absent; the read ends at the first record
    or end-of-log at or past `end`. No record for `poll_timeout_ms` is an error, as is a
    start the log no longer holds when `auto.offset.reset` is `error`."""
    if offset_range.size <= 0:
        return
    consumer = Consumer(dict(config))
    try:
        consumer.assign([CTopicPartition(offset_range.topic, offset_range.partition,
                                         offset_range.start)])
        last_progress = time.monotonic()
        while True:
            messages = consumer.consume(BATCH, 0.5)
            try:
                chunk, done = _within(messages, offset_range.end)
            except KafkaException as error:
                if error.args[0].code() not in OUT_OF_RANGE:
                    raise
                raise DataLossError("COULD_NOT_READ_OFFSET_RANGE", (
                    f"Could not read records in offset [{offset_range.start}, "
                    f"{offset_range.end}) for topic partition {offset_range.topic}-"
                    f"{offset_range.partition} with consumer group {config.get('group.id')}: "
                    f"{error.args[0].str()}")) from None
            if chunk:
                yield chunk
            if done:
                return
            if messages:
                last_progress = time.monotonic()
            elif (time.monotonic() - last_progress) * 1000 > poll_timeout_ms:
                raise TimeoutError(f"no record of {offset_range} within {poll_timeout_ms} ms")
    finally:
        consumer.close()


def _within(messages: list[Message], end: int) -> tuple[list[Message], bool]:
    """The records before `end`, and whether the range is done."""
    chunk: list[Message] = []
    for message in messages:
        error = message.error()
        offset = message.offset()
        assert offset is not None
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(error)
            if offset >= end:
                return chunk, True
            continue
        if offset >= end:
            return chunk, True
        chunk.append(message)
        if offset == end - 1:
            return chunk, True
    return chunk, False


class RecordProducer:
    """A producer of single records (`PRODUCER_DEFAULTS` under the given config) that keeps
    the first failed delivery: `send` raises it, as does `flush`, as Spark's sink stops at
    its first failed write."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._producer = Producer({**PRODUCER_DEFAULTS, **config})
        self._failed: KafkaError | None = None

    def _delivered(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None and self._failed is None:
            self._failed = error

    def send(self, topic: str, key: bytes | None, value: bytes | None,
             headers: list[tuple[str, str | bytes | None]] | None = None,
             partition: int | None = None) -> None:
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, headers=headers,
                                       partition=-1 if partition is None else partition,
                                       on_delivery=self._delivered)
                break
            except BufferError:  # the queue is full: serve deliveries, then again
                self._producer.poll(0.1)
        self._producer.poll(0)
        self._check()

    def flush(self) -> None:
        """Waits for every record to be delivered or to fail (`message.timeout.ms`)."""
        self._producer.flush()
        self._check()

    def _check(self) -> None:
        if self._failed is not None:
            raise KafkaException(self._failed)
