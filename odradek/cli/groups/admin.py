"""GroupAdmin: the AdminClient calls of `odradek groups`, with results as plain data.

confluent-kafka is imported lazily, so building the `odradek` parser stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from odradek.cli.groups.model import MISSING, GroupInfo, GroupsError, Member, Partition
from odradek.cli.tools.common import QUIET_CLIENT, describe_kafka_error, kafka_error

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

_STATE_ENUMS = {
    "PreparingRebalance": "PREPARING_REBALANCING",
    "CompletingRebalance": "COMPLETING_REBALANCING",
    "Stable": "STABLE",
    "Dead": "DEAD",
    "Empty": "EMPTY",
}
"""Kafka's state names to the names of confluent-kafka's ConsumerGroupState members."""
_STATE_NAMES = {enum: kafka for kafka, enum in _STATE_ENUMS.items()}


def _is_group_not_found(failure: BaseException) -> bool:
    from confluent_kafka import KafkaError

    error = kafka_error(failure)
    return error is not None and error.code() == KafkaError.GROUP_ID_NOT_FOUND


def state_name(state: Any) -> str:
    """Kafka's name of a ConsumerGroupState, "Unknown" for any other value."""
    return _STATE_NAMES.get(getattr(state, "name", ""), "Unknown")


def type_name(group_type: Any) -> str:
    """Kafka's name of a ConsumerGroupType, "Unknown" for any other value."""
    name = getattr(group_type, "name", "")
    return name.capitalize() if name in ("CLASSIC", "CONSUMER") else "Unknown"


def _partitions(topic_partitions: Iterable[Any]) -> tuple[Partition, ...]:
    return tuple(sorted(Partition(tp.topic, tp.partition) for tp in topic_partitions))


def to_group_info(description: Any) -> GroupInfo:
    """A confluent-kafka ConsumerGroupDescription as a GroupInfo."""
    coordinator = description.coordinator
    members = tuple(
        Member(
            consumer_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, host=m.host,
            assignment=_partitions(m.assignment.topic_partitions if m.assignment else ()),
            target_assignment=None if m.target_assignment is None
            else _partitions(m.target_assignment.topic_partitions),
        )
        for m in description.members
    )
    return GroupInfo(
        group_id=description.group_id,
        state=state_name(getattr(description, "state", None)),
        type=type_name(getattr(description, "type", None)),
        coordinator=f"{coordinator.host}:{coordinator.port} ({coordinator.id})"
        if coordinator is not None else MISSING,
        assignment_strategy=description.partition_assignor or "",
        members=members,
    )


class GroupAdmin:
    """The AdminClient calls of this tool, with results as plain data."""

    def __init__(self, properties: Mapping[str, str], timeout: float,
                 client: AdminClient | None = None) -> None:
        from confluent_kafka.admin import AdminClient

        self.timeout = timeout
        self.client = client or AdminClient({**QUIET_CLIENT, **properties})

    def _wait(self, future: Any) -> Any:
        """A future's result; librdkafka times the request out itself a little earlier."""
        return future.result(timeout=self.timeout + 5)

    def list_groups(self, states: Sequence[str],
                    types: Sequence[str]) -> tuple[list[tuple[str, str, str]], list[str]]:
        """(group, type, state) rows, sorted, and the errors of the brokers that failed."""
        from confluent_kafka import ConsumerGroupState, ConsumerGroupType

        options: dict[str, Any] = {"request_timeout": self.timeout}
        if states:
            options["states"] = {ConsumerGroupState[_STATE_ENUMS[s]] for s in states}
        if types:
            options["types"] = {ConsumerGroupType[t.upper()] for t in types}
        result = self._wait(self.client.list_consumer_groups(**options))
        rows = sorted(
            (listing.group_id, type_name(getattr(listing, "type", None)),
             state_name(getattr(listing, "state", None)))
            for listing in result.valid or ()
        )
        return rows, [describe_kafka_error(e) for e in result.errors or ()]

    def describe(self, group_ids: Sequence[str]) -> dict[str, GroupInfo | None]:
        """Each group's description; None for a group that does not exist."""
        from confluent_kafka import KafkaException

        futures = self.client.describe_consumer_groups(list(group_ids),
                                                       request_timeout=self.timeout)
        described: dict[str, GroupInfo | None] = {}
        for group_id in group_ids:
            try:
                description = self._wait(futures[group_id])
            except KafkaException as exception:
                if _is_group_not_found(exception):
                    described[group_id] = None
                    continue
                raise GroupsError(f"Could not describe group '{group_id}': "
                                  f"{describe_kafka_error(exception)}") from None
            info = to_group_info(description)
            described[group_id] = None if info.state == "Dead" else info
        return described

    def committed(self, group_id: str) -> dict[Partition, int]:
        """The group's committed offsets; none for a group that does not exist."""
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

        futures = self.client.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id)], request_timeout=self.timeout)
        try:
            result = self._wait(futures[group_id])
        except KafkaException as exception:
            if _is_group_not_found(exception):
                return {}
            raise GroupsError(f"Could not fetch the offsets of group '{group_id}': "
                              f"{describe_kafka_error(exception)}") from None
        committed = {}
        for tp in result.topic_partitions or ():
            if tp.error is not None:
                raise GroupsError(f"Could not fetch the offset of {tp.topic}-{tp.partition} for "
                                  f"group '{group_id}': {tp.error.str()}")
            if tp.offset >= 0:
                committed[Partition(tp.topic, tp.partition)] = tp.offset
        return committed

    def log_offsets(self, partitions: Iterable[Partition],
                    spec: Literal["earliest", "latest"] | int) -> dict[Partition, int | None]:
        """ListOffsets: the earliest or latest offset, or the first offset at or after a
        timestamp (ms), None when no record is that late. Partitions the broker answered
        with an error are left out."""
        from confluent_kafka import KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        if spec == "earliest":
            offset_spec = OffsetSpec.earliest()
        elif spec == "latest":
            offset_spec = OffsetSpec.latest()
        else:
            offset_spec = OffsetSpec.for_timestamp(spec)
        futures = self.client.list_offsets(
            {TopicPartition(p.topic, p.partition): offset_spec for p in wanted},
            request_timeout=self.timeout)
        answers: dict[Partition, int | None] = {}
        for tp, future in futures.items():
            try:
                offset = self._wait(future).offset
            except KafkaException:
                continue
            answers[Partition(tp.topic, tp.partition)] = offset if offset >= 0 else None
        return answers

    def topic_partitions(self, topics: Iterable[str]) -> list[Partition]:
        """Every partition of the topics, sorted."""
        from confluent_kafka import KafkaException, TopicCollection

        names = sorted(set(topics))
        if not names:
            return []
        futures = self.client.describe_topics(TopicCollection(names),
                                              request_timeout=self.timeout)
        partitions: list[Partition] = []
        for name in names:
            try:
                description = self._wait(futures[name])
            except KafkaException as exception:
                raise GroupsError(f"Could not describe topic '{name}': "
                                  f"{describe_kafka_error(exception)}") from None
            partitions.extend(Partition(name, info.id) for info in description.partitions)
        return sorted(partitions)

    def alter_offsets(self, group_id: str, offsets: Mapping[Partition, int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition

        request = ConsumerGroupTopicPartitions(
            group_id, [TopicPartition(p.topic, p.partition, o) for p, o in offsets.items()])
        futures = self.client.alter_consumer_group_offsets([request],
                                                           request_timeout=self.timeout)
        try:
            result = self._wait(futures[group_id])
        except KafkaException as exception:
            raise GroupsError(f"Could not reset the offsets of group '{group_id}': "
                              f"{describe_kafka_error(exception)}") from None
        failed = [f"{tp.topic}-{tp.partition}: {tp.error.str()}"
                  for tp in result.topic_partitions or () if tp.error is not None]
        if failed:
            raise GroupsError(f"Could not reset the offsets of group '{group_id}': "
                              + "; ".join(failed))

    def delete(self, group_ids: Sequence[str]) -> dict[str, str | None]:
        """Each group's deletion error, None where it was deleted."""
        from confluent_kafka import KafkaException

        futures = self.client.delete_consumer_groups(list(group_ids),
                                                     request_timeout=self.timeout)
        outcome: dict[str, str | None] = {}
        for group_id in group_ids:
            try:
                self._wait(futures[group_id])
                outcome[group_id] = None
            except KafkaException as exception:
                outcome[group_id] = describe_kafka_error(exception)
        return outcome
