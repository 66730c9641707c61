"""The mirror's admin and producer clients of one cluster (confluent-kafka), awaitable from
the event loop, and the record of which clusters answer: a cluster that stops answering is
logged once when it goes away and once when it is back, not at every retry."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import (
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from odradek.mirror.config import MirrorConfigError, TopicNotCreatable
from odradek.mirror.topic_rules import SourceConfig
from odradek.mirror.translation import GroupOffset
from odradek.net.kafka_client import KafkaClientError, KafkaCluster
from odradek.net.kafka_client.request_versions import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    OFFSET_COMMIT,
    OFFSET_FETCH,
)
from odradek.protocol.codec import build_request

log = logging.getLogger("odradek.mirror")
CLIENT_LOG = logging.getLogger("odradek.mirror.librdkafka")
"""librdkafka's own logs: one line per failed connection attempt, so off unless asked for
(`--log-level DEBUG` does not reach it); ClusterHealth reports the changes of state."""
CLIENT_LOG.setLevel(logging.CRITICAL)
T = TypeVar("T")
REFUSED = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL,
                     KafkaError.SASL_AUTHENTICATION_FAILED})
"""librdkafka's codes for a cluster that refused the client's login or TLS handshake."""
NOT_CREATABLE = frozenset({KafkaError.INVALID_REPLICATION_FACTOR})
"""CreateTopics errors that retrying does not change: the topic's settings are wrong."""
ALL_FENCED = "All brokers are currently fenced"
"""Kafka's INVALID_REPLICATION_FACTOR message while a cluster starts: retried."""
TIMEOUT_S = 15.0
GROUP_KEY_TYPE = 0
"""FindCoordinator's key type of a group."""


class ClusterUnavailable(Exception):
    """A call to a cluster failed; the caller backs off and retries."""

    def __init__(self, alias: str, error: object) -> None:
        super().__init__(f"cluster {alias}: {error}")
        self.alias = alias


class Refused(Exception):
    """The cluster answered and refused the call with an error in the caller's `refuse`."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(f"{error.name()}: {error.str()}")


class ClusterHealth:
    """Which clusters answered their last call; logs the changes only. A call's outcome is
    stale, and changes nothing, when the other outcome was recorded after the call began: a
    flush that timed out while the cluster came back, or an answer that arrived before the
    cluster went away and was read after."""

    def __init__(self) -> None:
        self._down: dict[str, str] = {}
        self._last_ok: dict[str, float] = {}
        self._last_failed: dict[str, float] = {}

    def ok(self, alias: str, started: float) -> None:
        """`started`: when the call began (time.monotonic())."""
        if started < self._last_failed.get(alias, float("-inf")):
            return
        self._last_ok[alias] = time.monotonic()
        if self._down.pop(alias, None) is not None:
            log.info("cluster %s is reachable again", alias)

    def failed(self, alias: str, error: object, started: float | None = None) -> None:
        """`started`: when the failed call began (time.monotonic()); None: just now."""
        if started is not None and started < self._last_ok.get(alias, float("-inf")):
            return
        self._last_failed[alias] = time.monotonic()
        if alias not in self._down:
            log.warning("cluster %s is unreachable, retrying with backoff: %s", alias,
                        error or type(error).__name__)
        self._down[alias] = str(error)

    def down(self) -> dict[str, str]:
        return dict(self._down)

    def reached(self, alias: str) -> bool:
        """Whether a call to the cluster has succeeded yet."""
        return alias in self._last_ok


def client_error(error: BaseException) -> KafkaError | None:
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0],
                                                                       KafkaError):
        return error.args[0]
    return None


class ClusterClient:
    """The admin client and a producer of one cluster, created from its client configs."""

    def __init__(self, alias: str, admin_config: Mapping[str, str],
                 producer_config: Mapping[str, str], health: ClusterHealth,
                 kafka: KafkaCluster) -> None:
        """`kafka`: our own client of the cluster, for what librdkafka's admin client must
        not do (`group_offsets`)."""
        self.alias = alias
        self._health = health
        self._kafka = kafka
        self._refused: KafkaError | None = None
        errors: dict[str, Any] = {"error_cb": self._client_error}
        try:
            self._admin = AdminClient({**admin_config, "client.id": f"mirror-{alias}-admin",
                                       **errors}, logger=CLIENT_LOG)
            self._producer = Producer({**producer_config, "client.id": f"mirror-{alias}",
                                       "enable.idempotence": True, **errors}, logger=CLIENT_LOG)
        except (KafkaException, TypeError, ValueError) as error:
            raise MirrorConfigError(f"{alias}: bad client config: {error}") from None

    def _client_error(self, error: KafkaError) -> None:
        """librdkafka's errors outside any call: a refused login or TLS handshake is why the
        calls time out, and is kept to say so."""
        if error.code() in REFUSED:
            self._refused = error

    def _failed(self, error: BaseException, started: float) -> str:
        """Records the failure with its reason: the error, and a refused login or TLS
        handshake behind it."""
        self._admin.poll(0)  # serves the error callbacks
        self._producer.poll(0)
        reason = str(error) or type(error).__name__
        if self._refused is not None:
            reason = f"{reason} ({self._refused.str()})"
            self._refused = None
        self._health.failed(self.alias, reason, started)
        return reason

    async def _call(self, what: str, future: Future[T], tolerate: frozenset[int] = frozenset(),
                    refuse: frozenset[int] = frozenset()) -> T | None:
        """The future's result; None when it failed with an error code in `tolerate`,
        `Refused` for one in `refuse`."""
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT_S)
        except (KafkaException, TimeoutError) as error:
            code = client_error(error)
            if code is not None and code.code() in tolerate | refuse:
                self._health.ok(self.alias, started)
                if code.code() in refuse:
                    raise Refused(code) from None
                return None
            raise ClusterUnavailable(self.alias, f"{what}: {self._failed(error, started)}"
                                     ) from None
        self._health.ok(self.alias, started)
        return result

    async def _required(self, what: str, future: Future[T]) -> T:
        result = await self._call(what, future)
        assert result is not None
        return result

    async def _thread(self, what: str, call: Any, *args: Any) -> Any:
        started = time.monotonic()
        try:
            result = await asyncio.to_thread(call, *args)
        except KafkaException as error:
            raise ClusterUnavailable(self.alias, self._failed(error, started)) from None
        self._health.ok(self.alias, started)
        return result

    async def topics(self) -> dict[str, int]:
        """Every topic of the cluster and its partition count."""
        metadata = await self._thread("list topics", self._admin.list_topics, None, TIMEOUT_S)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()
                if topic.error is None}

    async def create_topic(self, topic: str, partitions: int, replication_factor: int,
                           configs: Mapping[str, str], setting: str) -> bool:
        """Create a topic; False when it exists already. `setting` names the config that
        gave its replication factor, for the TopicNotCreatable raised when the cluster
        refuses that."""
        new = NewTopic(topic, partitions, replication_factor, config=dict(configs))
        future = self._admin.create_topics([new], request_timeout=TIMEOUT_S)[topic]
        try:
            created = await self._call(f"create topic {topic}", _done(future),
                                       frozenset({KafkaError.TOPIC_ALREADY_EXISTS}),
                                       NOT_CREATABLE)
        except Refused as refused:
            if ALL_FENCED in str(refused):
                self._health.failed(self.alias, refused)
                raise ClusterUnavailable(self.alias, f"create topic {topic}: {refused}"
                                         ) from None
            raise TopicNotCreatable(setting, replication_factor, self.alias, topic,
                                    str(refused)) from None
        if created:
            log.info("created topic %s on %s with %d partitions", topic, self.alias, partitions)
        return bool(created)

    async def grow_topic(self, topic: str, partitions: int) -> None:
        future = self._admin.create_partitions([NewPartitions(topic, partitions)],
                                               request_timeout=TIMEOUT_S)[topic]
        if await self._call(f"create partitions of {topic}", _done(future),
                            frozenset({KafkaError.INVALID_PARTITIONS})):
            log.info("increased %s on %s to %d partitions", topic, self.alias, partitions)

    async def topic_configs(self, topics: Sequence[str]) -> dict[str, list[SourceConfig]]:
        resources = [ConfigResource(ResourceType.TOPIC, topic) for topic in topics]
        result = {}
        for resource, future in self._admin.describe_configs(
                resources, request_timeout=TIMEOUT_S).items():
            entries = await self._call(f"describe configs of {resource.name}", future,
                                       frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART}))
            if entries is None:
                continue
            result[resource.name] = [
                SourceConfig(entry.name, entry.value, entry.is_default, entry.is_read_only,
                             entry.is_sensitive,
                             entry.source == ConfigSource.STATIC_BROKER_CONFIG.value)
                for entry in entries.values()]
        return result

    async def alter_topic_configs(self, topic: str, updates: Mapping[str, str | None]) -> None:
        entries = [ConfigEntry(name, value or "", incremental_operation=(
            AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET))
            for name, value in updates.items()]
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        for future in self._admin.incremental_alter_configs(
                [resource], request_timeout=TIMEOUT_S).values():
            await self._call(f"alter configs of {topic}", future)

    async def groups(self) -> list[str]:
        listing = await self._required("list groups", self._admin.list_consumer_groups(
            request_timeout=TIMEOUT_S))
        return sorted(group.group_id for group in listing.valid)

    async def group_offsets(self, group: str) -> dict[tuple[str, int], GroupOffset]:
        """The group's committed offsets (OffsetFetch)."""
        (fetched,) = (await self._to_coordinator(group, "offsets", build_request(
            *OFFSET_FETCH, {"groups": [{"group_id": group, "topics": None}],
                            "require_stable": False}))).groups
        self._check(group, "offsets", fetched.error_code)
        return {(topic.name, p.partition_index): GroupOffset(p.committed_offset,
                                                              p.metadata or "")
                for topic in fetched.topics for p in topic.partitions
                if p.error_code == ErrorCode.none and p.committed_offset >= 0}

    async def group_active(self, group: str) -> bool | None:
        """Whether the group has members; None when it does not exist. A classic group is
        described by DescribeGroups; a consumer group (KIP-848), which DescribeGroups
        answers with GROUP_ID_NOT_FOUND, by ConsumerGroupDescribe."""
        (classic,) = (await self._to_coordinator(group, "describe", build_request(
            *DESCRIBE_GROUPS, {"groups": [group], "include_authorized_operations": False}
        ))).groups
        if classic.error_code != ErrorCode.group_id_not_found:
            self._check(group, "describe", classic.error_code)
            state = classic.group_state
        else:
            (described,) = (await self._to_coordinator(group, "describe", build_request(
                *CONSUMER_GROUP_DESCRIBE, {"group_ids": [group],
                                           "include_authorized_operations": False}))).groups
            if described.error_code == ErrorCode.group_id_not_found:
                return None
            self._check(group, "describe", described.error_code)
            state = described.group_state
        if state == "Dead":
            return None
        return state != "Empty"

    async def commit_group_offsets(self, group: str,
                                   offsets: Mapping[tuple[str, int], GroupOffset]) -> None:
        """Commit as an admin client does (OffsetCommit outside any generation), which the
        coordinator accepts only while the group has no members."""
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), value in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": value.offset,
                "committed_leader_epoch": -1, "committed_metadata": value.metadata})
        response = await self._to_coordinator(group, "commit", build_request(*OFFSET_COMMIT, {
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()]}))
        for topic in response.topics:
            for partition in topic.partitions:
                self._check(group, "commit", partition.error_code)

    async def _to_coordinator(self, group: str, what: str, request: Any) -> Any:
        """`request` to the group's coordinator (FindCoordinator first), over our own client:
        librdkafka's admin calls that go to a group coordinator crash the process when a
        broker goes away or answers that the coordinator moved (ListConsumerGroupOffsets
        dereferences a NULL consumer group, librdkafka issue 5040 on GitHub; the others fail
        an assertion in rd_kafka_enq_once_del_source_return, issue 3663)."""
        started = time.monotonic()
        try:
            (found,) = (await self._kafka.send(build_request(*FIND_COORDINATOR, {
                "key_type": GROUP_KEY_TYPE, "coordinator_keys": [group]}))).coordinators
            if found.error_code != ErrorCode.none:
                raise KafkaClientError(
                    f"FindCoordinator: {ErrorCode(found.error_code).name.upper()}")
            response = await self._kafka.connections.send((found.host, found.port), request)
        except KafkaClientError as error:
            raise ClusterUnavailable(self.alias, f"{what} of group {group}: "
                                     f"{self._failed(error, started)}") from None
        self._health.ok(self.alias, started)
        return response

    def _check(self, group: str, what: str, code: int) -> None:
        """An error the coordinator answered: the call is retried later, the cluster
        counted as reachable."""
        if code != ErrorCode.none:
            raise ClusterUnavailable(self.alias, f"{what} of group {group}: "
                                     f"{ErrorCode(code).name.upper()}")

    def produce(self, topic: str, key: bytes, value: bytes, timestamp_ms: int,
                on_delivery: Any = None) -> None:
        """Queue a record for partition 0 (MM2's internal topics have one)."""
        self._producer.produce(topic, value=value, key=key, partition=0,
                               timestamp=timestamp_ms, on_delivery=on_delivery)
        self._producer.poll(0)

    def close(self) -> None:
        """Close our own client's connections (librdkafka's clients close when freed)."""
        self._kafka.close()

    async def flush(self) -> None:
        """Wait until every queued record is delivered (or failed)."""
        started = time.monotonic()
        remaining = await self._thread("flush", self._producer.flush, TIMEOUT_S)
        if remaining:
            error = TimeoutError(f"{remaining} records not delivered")
            raise ClusterUnavailable(self.alias, self._failed(error, started))


def _done(future: Future[None]) -> Future[bool]:
    """A future that is True once `future` (an admin call with no result) succeeds."""
    done: Future[bool] = Future()

    def finish(source: Future[None]) -> None:
        if done.cancelled():  # the caller gave up waiting (a timeout, a stop)
            return
        error = source.exception()
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(True)

    future.add_done_callback(finish)
    return done
