"""`odradek mirror status`: per flow, the replicated topics and partitions, which mirror
process owns each (the ownership group on the target), how far the copy is (the progress
topic) and its lag behind the source, and the last checkpoint of each group. It reads
everything from the two clusters, so it needs no running mirror to answer."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from odradek.cli.tools.common import table
from odradek.mirror.client_security import flow_librdkafka_config
from odradek.mirror.clients import CLIENT_LOG, TIMEOUT_S
from odradek.mirror.config import Flow, MirrorConfig
from odradek.mirror.formats import Checkpoint, FormatError
from odradek.mirror.ownership import group_id
from odradek.mirror.progress import Progress, progress_key


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    target_topic: str
    owner: str
    next_offset: int | None
    """The next source offset to copy (None: nothing copied yet)."""
    end_offset: int
    lag: int


@dataclass(frozen=True)
class FlowStatus:
    flow: str
    exactly_once: bool
    partitions: list[PartitionRow]
    last_checkpoint_ms: int | None
    checkpointed_groups: list[str]


def _consumer(flow: Flow, side: str) -> Consumer:
    config = flow_librdkafka_config(flow, "source" if side == "source" else "target",
                                    "consumer")
    return Consumer({**config, "group.id": f"mirror-status-{uuid.uuid4()}",
                     "enable.auto.commit": False, "enable.partition.eof": True,
                     "isolation.level": "read_committed"}, logger=CLIENT_LOG)


def _read_topic(consumer: Consumer, topic: str, partitions: int) -> Iterator[Message]:
    """Every record of the topic, from its start to its end now."""
    consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING)
                     for p in range(partitions)])
    remaining = set(range(partitions))
    deadline = time.monotonic() + TIMEOUT_S
    while remaining:
        if time.monotonic() > deadline:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"reading {topic}"))
        for message in consumer.consume(1000, 0.2):
            error = message.error()
            if error is None:
                yield message
            elif error.code() == KafkaError._PARTITION_EOF:
                remaining.discard(message.partition())
            else:
                raise KafkaException(error)


def flow_status(flow: Flow) -> FlowStatus:
    source_admin = AdminClient({**flow_librdkafka_config(flow, "source", "admin")},
                               logger=CLIENT_LOG)
    target_admin = AdminClient({**flow_librdkafka_config(flow, "target", "admin")},
                               logger=CLIENT_LOG)
    source_topics = {name: len(meta.partitions) for name, meta in
                     source_admin.list_topics(timeout=TIMEOUT_S).topics.items()
                     if flow.should_replicate_topic(name)}
    target_topics = {name: len(meta.partitions) for name, meta in
                     target_admin.list_topics(timeout=TIMEOUT_S).topics.items()}
    owners = _owners(target_admin, flow)
    source = _consumer(flow, "source")
    target = _consumer(flow, "target")
    try:
        copied = _progress(target, flow, target_topics.get(flow.progress_topic, 0))
        checkpoints = list(_checkpoints(target, flow.checkpoints_topic)
                           if flow.checkpoints_topic in target_topics else ())
        rows = []
        for topic, partitions in sorted(source_topics.items()):
            for partition in range(partitions):
                low, high = source.get_watermark_offsets(KafkaTopicPartition(topic, partition),
                                                         TIMEOUT_S)
                next_offset = copied.get((topic, partition))
                rows.append(PartitionRow(
                    topic, partition, flow.target_topic(topic),
                    owners.get((flow.target_topic(topic), partition), "-"), next_offset, high,
                    max(0, high - (low if next_offset is None else next_offset))))
    finally:
        source.close()
        target.close()
    return FlowStatus(flow.name, flow.exactly_once, rows,
                      max((timestamp for _, timestamp in checkpoints), default=None),
                      sorted({checkpoint.group for checkpoint, _ in checkpoints}))


def _owners(admin: AdminClient, flow: Flow) -> dict[tuple[str, int], str]:
    group = group_id(flow.source, flow.target)
    description = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S)
    return {(tp.topic, tp.partition): f"{member.client_id}@{member.host}"
            for member in description.members
            for tp in (member.assignment.topic_partitions if member.assignment else [])}


def _progress(consumer: Consumer, flow: Flow, partitions: int) -> dict[tuple[str, int], int]:
    """The next source offset to copy per partition, from the progress topic."""
    keys: dict[bytes, tuple[str, int]] = {}
    result: dict[tuple[str, int], int] = {}
    for message in _read_topic(consumer, flow.progress_topic, partitions):
        progress = Progress.decode(message.value())
        key = message.key() or b""
        if key not in keys:
            try:
                _, body = json.loads(key)
                keys[key] = (body["topic"], body["partition"])
            except (ValueError, TypeError, KeyError):
                continue
        topic, partition = keys[key]
        if progress is not None and key == progress_key(flow.source, topic, partition):
            result[(topic, partition)] = progress.offset + 1
    return result


def _checkpoints(consumer: Consumer, topic: str) -> Iterator[tuple[Checkpoint, int]]:
    for message in _read_topic(consumer, topic, 1):
        try:
            yield (Checkpoint.decode(message.key() or b"", message.value() or b""),
                   message.timestamp()[1])
        except FormatError:
            continue


def print_status(config: MirrorConfig, as_json: bool) -> int:
    try:
        flows = [flow_status(flow) for flow in config.flows]
    except KafkaException as error:
        print(f"odradek mirror status: {error.args[0]}", file=sys.stderr)
        return 1
    if as_json:
        print(json.dumps({"flows": [asdict(flow) for flow in flows]}, indent=2))
        return 0
    for flow in flows:
        last = ("never" if flow.last_checkpoint_ms is None else
                datetime.fromtimestamp(flow.last_checkpoint_ms / 1000, UTC).isoformat())
        print(f"{flow.flow} ({'exactly-once' if flow.exactly_once else 'at-least-once'}), "
              f"last checkpoint {last}, groups: {', '.join(flow.checkpointed_groups) or '-'}")
        print(table(["TOPIC", "PARTITION", "TARGET TOPIC", "OWNER", "COPIED TO", "END", "LAG"],
                    [[row.topic, row.partition, row.target_topic, row.owner,
                      "-" if row.next_offset is None else row.next_offset, row.end_offset,
                      row.lag] for row in flow.partitions]))
    return 0
