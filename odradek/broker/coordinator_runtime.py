"""The shell around a coordinator whose state lives in an internal topic (the group
coordinator in `__consumer_offsets`, the transaction coordinator in `__transaction_state`):
one shard per partition this broker leads, loaded by replaying that partition, fed requests
and timer ticks on the event loop (so one shard serves one thing at a time), its records
appended, and committed, before its responses go out.

A shard applies its records when it emits them, and a load replays the log to its end, so a
shard's state can be ahead of what the partition's ISR holds. No response may go out on such
state: as in Kafka's CoordinatorRuntime (a write waits for `lastWrittenOffset` to be
committed, a read sees the state at the last committed offset), every output, with records or
without, and every read (`read`) is released only once the high watermark reaches the shard's
last written offset. Otherwise a retried AddPartitionsToTxn could be
answered from a record only the leader holds, and a new coordinator would find the
transaction Empty."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from kio.schema.errors import ErrorCode

from odradek.broker.broker import Broker
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.replica_manager import Acknowledgement, ReplicaManager, acknowledged
from odradek.broker.topic_creation import create_topic
from odradek.group.partitioning import partition_for
from odradek.log.leader_validation import validate_leader_append
from odradek.metadata.image import MetadataError
from odradek.protocol.control import ControlType, read_marker
from odradek.protocol.coordinator_serde import RecordFormatError, UnknownRecordType
from odradek.protocol.record_codec import build_batch, decode_records
from odradek.protocol.records import BatchInfo, iter_batches
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.broker.coordinators")

LOAD_READ_BYTES = 1 << 20
T = TypeVar("T")
Token = Hashable


class Output(Protocol):
    """What a shard's handler produced: records to append before its responses go out."""

    @property
    def records(self) -> list[Any]: ...

    @property
    def responses(self) -> list[tuple[Token, Any]]: ...


class Shard(Protocol):
    def next_deadline(self) -> int | None: ...

    def tick(self, now_ms: int) -> Any: ...


ShardT = TypeVar("ShardT", bound=Shard)
OutputT = TypeVar("OutputT", bound=Output)


class CoordinatorUnavailable(Exception):
    """The coordinator cannot serve now; clients get COORDINATOR_NOT_AVAILABLE."""

    error_code = ErrorCode.coordinator_not_available


class NotCoordinator(CoordinatorUnavailable):
    """Another broker leads the key's partition; clients look the coordinator up again."""

    error_code = ErrorCode.not_coordinator


class CoordinatorLoading(CoordinatorUnavailable):
    """The metadata makes this broker the leader of the key's partition, and its shard is
    not loaded yet; clients retry here, as Kafka answers while a shard loads."""

    error_code = ErrorCode.coordinator_load_in_progress


class CoordinatorRuntime(Generic[ShardT, OutputT]):
    """Subclasses say which topic, how to make a shard, how records are encoded and
    replayed, and what to do once an output is committed."""

    topic: str
    name: str
    """What the coordinator is called in logs ("group", "transaction")."""

    def __init__(self, broker: Broker, replicas: ReplicaManager, writer: MetadataWriter) -> None:
        """`writer` creates the topic on first use; call `refresh_topics` after every
        applied metadata batch."""
        self.broker = broker
        self.replicas = replicas
        self.writer = writer
        self.commit_timeout_s = broker.config.integer("offsets.commit.timeout.ms") / 1000
        self.shards: dict[int, ShardT] = {}
        """The shards of the partitions this broker leads."""
        self.num_partitions = 0
        """The topic's partition count once loaded; keys route by it."""
        self._written: dict[int, int] = {}
        """Each shard's last written offset: its log's end after the shard's last append or
        its load. Its state is committed once the high watermark reaches it."""
        self._waiting: dict[Token, tuple[int, asyncio.Future[Any]]] = {}
        """Requests parked in a shard: partition, future."""
        self._tokens = itertools.count()
        self._timers: dict[int, asyncio.TimerHandle] = {}
        self._creating: asyncio.Lock | None = None

    # The coordinator's specifics.

    def new_shard(self, partition: int) -> ShardT:
        raise NotImplementedError

    def replay(self, shard: ShardT, key: bytes, value: bytes | None, producer_id: int) -> None:
        """Decode and apply one record (`producer_id` >= 0 for one in a transactional
        batch); ValueError for one to skip."""
        raise NotImplementedError

    def replay_marker(self, shard: ShardT, producer_id: int, commit: bool) -> None:
        """A transaction marker in the topic."""

    def transaction_of(self, out: OutputT) -> tuple[int, int] | None:
        """(producer id, epoch) when the output's records belong to a transaction."""
        return None

    def encode(self, record: Any) -> tuple[bytes, bytes | None]:
        raise NotImplementedError

    def loaded(self, partition: int, shard: ShardT) -> OutputT | None:
        """Called once a shard is loaded; its output is committed."""
        return None

    def topic_settings(self) -> tuple[int, int, dict[str, str]]:
        """Partitions, replication factor and configs of the topic, created on first use."""
        raise NotImplementedError

    def released(self, partition: int, out: OutputT) -> None:
        """The output's records are committed and its responses released."""

    def acts_on_release(self, out: OutputT) -> bool:
        """Whether `released` starts something that must wait for the shard's state to be
        committed (beyond the output's responses)."""
        return False

    def topics_changed(self, partition: int, shard: ShardT) -> OutputT | None:
        """Topics were created, deleted or grown: a shard may have work to do."""
        return None

    # Routing.

    def is_loaded(self) -> bool:
        return self.num_partitions > 0

    def led_partitions(self) -> set[int]:
        """The partitions the image makes this broker the leader of and that its replica
        manager already leads in that epoch. Between the two (the image applied, the logs
        not yet created or led, as when the first FindCoordinator creates the topic) a
        shard would be loaded with no log to append to and no leader epoch to stamp as its
        coordinator epoch; like Kafka, which loads a shard when its replica becomes leader,
        the shard waits for the replica (`refresh_topics`, once the logs are placed)."""
        return {p for p, leader_epoch in self._image_led().items()
                if self.replicas.leader_epoch((self.topic, p)) == leader_epoch}

    def _image_led(self) -> dict[int, int]:
        """The partitions the image makes this broker the leader of: their leader epochs."""
        state = self.broker.metadata.topics.get(self.topic)
        if state is None:
            return {}
        return {p: record.leader_epoch for p, record in state.partitions.items()
                if record.leader == self.broker.node_id}

    def coordinator_partition(self, key: str) -> int:
        if not self.num_partitions:
            raise CoordinatorUnavailable()
        return partition_for(key, self.num_partitions)

    def shard_for(self, key: str) -> tuple[int, ShardT]:
        """The key's shard, by the partition count the shards were loaded with (the
        metadata refuses to change it); CoordinatorLoading while this broker's shard of it
        loads, NotCoordinator when another broker leads it."""
        partition = self.coordinator_partition(key)
        shard = self.shards.get(partition)
        if shard is None:
            raise CoordinatorLoading() if partition in self._image_led() else NotCoordinator()
        return partition, shard

    # Loading.

    def load_led(self) -> dict[int, ShardT]:
        """A fresh shard replayed from each partition of the topic this broker leads, as at
        startup. Blocking, and changes nothing: run it in a thread."""
        return {p: self._load_shard(p) for p in sorted(self.led_partitions())}

    def _load_shard(self, partition: int) -> ShardT:
        shard = self.new_shard(partition)
        count = 0
        for batch, data in self._read_partition(partition):
            if batch.is_control:
                if batch.producer_id >= 0:
                    control, _ = read_marker(data)
                    self.replay_marker(shard, batch.producer_id, control == ControlType.COMMIT)
                continue
            producer_id = batch.producer_id if batch.is_transactional else -1
            for record in decode_records(data):
                if record.key is None:
                    continue
                try:
                    self.replay(shard, record.key, record.value, producer_id)
                except UnknownRecordType as error:
                    log.warning("%s-%d: skipping a record of unknown type: %s", self.topic,
                                partition, error)
                    continue
                except RecordFormatError as error:
                    log.error("%s-%d: skipping a malformed record: %s", self.topic, partition,
                              error)
                    continue
                count += 1
        if count:
            log.info("loaded %d records from %s-%d", count, self.topic, partition)
        return shard

    def _read_partition(self, partition: int) -> Iterator[tuple[BatchInfo, memoryview]]:
        """Each batch of the partition with its bytes, from the log start."""
        log_ = self.broker.partition(self.topic, partition)
        if log_ is None:
            return
        offset = log_.log_start_offset
        while offset < log_.log_end_offset:
            data = memoryview(bytes(log_.read(offset, LOAD_READ_BYTES).records))
            if not data:
                break
            for batch in iter_batches(data):
                yield batch, data[batch.position:batch.end]
                offset = batch.next_offset

    async def ensure_loaded(self) -> None:
        """Create the topic on first use, as Kafka does on the first FindCoordinator, and
        load its shards."""
        if self.num_partitions:
            return
        if self._creating is None:
            self._creating = asyncio.Lock()
        async with self._creating:
            if self.num_partitions:
                return
            if self.topic not in self.broker.metadata.topics:
                try:
                    await self._create_topic()
                except CoordinatorUnavailable:
                    return  # requests answer COORDINATOR_NOT_AVAILABLE; the next one retries
            shards = await asyncio.get_running_loop().run_in_executor(None, self.load_led)
            self.shards = shards
            self.num_partitions = len(self.broker.metadata.topics[self.topic].partitions)
            for partition in list(self.shards):
                self._after_load(partition)
            # Partitions led (or lost) while the thread read the logs: from now on each
            # applied metadata batch follows leadership (refresh_topics).
            self._follow_leadership()

    async def _create_topic(self) -> None:
        """Create the topic; one that another broker created meanwhile will do (the writer
        has waited for this broker's image to hold it). Other failures answer
        COORDINATOR_NOT_AVAILABLE."""
        partitions, replication_factor, configs = self.topic_settings()
        try:
            await create_topic(self.broker, self.writer, self.topic, partitions, replication_factor,
                               configs, internal=True)
        except MetadataError as error:
            if error.error_code != ErrorCode.topic_already_exists:
                log.warning("creating %s failed: %s", self.topic, error.message)
                raise CoordinatorUnavailable() from error
        if self.topic not in self.broker.metadata.topics:
            raise CoordinatorUnavailable()

    def _after_load(self, partition: int) -> None:
        log_ = self.broker.partition(self.topic, partition)
        self._written[partition] = 0 if log_ is None else log_.log_end_offset
        out = self.loaded(partition, self.shards[partition])
        if out is not None:
            self._write_output(partition, out)
        self._schedule(partition)

    # Serving.

    async def run(self, key: str, handler: Callable[[ShardT, int], tuple[T, OutputT]]) -> T:
        """Run a handler on the key's shard and write its output; returns its result once
        its records are committed (and fsynced when the flush policy says so)."""
        partition, shard = self.shard_for(key)
        result, out = handler(shard, now_ms())
        durable = self._write_output(partition, out)
        if durable is not None:
            await durable
        return result

    async def read(self, key: str, reader: Callable[[ShardT], T]) -> T:
        """Read the key's shard; the answer (or the reader's exception) goes out once all the
        shard has written is committed, CoordinatorUnavailable if that fails. Kafka reads a
        shard at its last committed offset: no client may see state a new leader could lack,
        such as an offset commit the ISR has not taken, fetched and then lost with the
        leader."""
        partition, shard = self.shard_for(key)
        committed = self._last_write_committed(partition)
        try:
            return reader(shard)
        finally:
            if committed is not None:
                await committed

    async def read_all(self, reader: Callable[[ShardT], list[T]]) -> list[T]:
        """`read` of every shard this broker leads, their answers joined."""
        answers: list[T] = []
        pending = []
        for partition, shard in list(self.shards.items()):
            answers += reader(shard)
            committed = self._last_write_committed(partition)
            if committed is not None:
                pending.append(committed)
        for failure in await asyncio.gather(*pending, return_exceptions=True):
            if failure is not None:
                raise failure
        return answers

    async def run_deferred(self, key: str, handler: Callable[[ShardT, Token, int], OutputT]) -> Any:
        """Run a handler whose response is released later, by this or another output."""
        partition, shard = self.shard_for(key)
        token = next(self._tokens)
        waiting = asyncio.get_running_loop().create_future()
        self._waiting[token] = (partition, waiting)
        try:
            try:
                self._write_output(partition, handler(shard, token, now_ms()))
            except CoordinatorUnavailable:
                if waiting.done():
                    waiting.exception()  # failed with the append: raised here, not awaited
                raise
            return await waiting
        finally:
            self._waiting.pop(token, None)

    def write_if_led(self, partition: int, out: OutputT) -> None:
        """Write an output produced outside a request (timers, marker completions), unless
        this broker has stopped leading the partition meanwhile."""
        if partition in self.shards:
            self._write_output(partition, out)

    def _write_output(self, partition: int, out: OutputT) -> asyncio.Future[None] | None:
        """Append the output's records, then release its responses once they are durable
        (committed, and fsynced when the flush policy asks); an output without records is
        released once the shard's earlier records are committed. Returns what the release
        waits for, None when it happened at once."""
        if out.records:
            try:
                durable = self._append(partition, out)
            except Exception as error:
                log.exception("appending to %s-%d failed: reloading its %s state", self.topic,
                              partition, self.name)
                self._reload(partition)
                raise CoordinatorUnavailable() from error
        elif out.responses or self.acts_on_release(out):
            durable = self._last_write_committed(partition)
        else:
            durable = None
        if durable is None:
            self._release(partition, out)
        else:
            durable.add_done_callback(lambda done: self._settle(partition, out, done))
        self._schedule(partition)
        return durable

    def _settle(self, partition: int, out: OutputT, appended: asyncio.Future[None]) -> None:
        """Release the output's responses once its records (and the shard's before them) are
        committed; if they are not in time, the shard (if still led here) is rebuilt from the
        log, whose records beyond the high watermark it answers from only once committed,
        and its parked requests fail."""
        failure = "cancelled" if appended.cancelled() else appended.exception()
        if failure is not None:
            if partition in self.shards:
                log.warning("%s-%d: records not committed (%r): reloading its %s state",
                            self.topic, partition, failure, self.name)
                self._reload(partition)
            return
        self._release(partition, out)

    def _release(self, partition: int, out: OutputT) -> None:
        for token, response in out.responses:
            waiting = self._waiting.get(token)
            if waiting is not None and not waiting[1].done():
                waiting[1].set_result(response)
        self.released(partition, out)

    def _reload(self, partition: int) -> None:
        """After a failed append the shard's state may be ahead of its log: rebuild it from
        the log, and answer the requests parked on it with COORDINATOR_NOT_AVAILABLE."""
        self.shards[partition] = self._load_shard(partition)
        for parked_partition, waiting in self._waiting.values():
            if parked_partition == partition and not waiting.done():
                waiting.set_exception(CoordinatorUnavailable())
        self._after_load(partition)

    def _append(self, partition: int, out: OutputT) -> asyncio.Future[None] | None:
        """Append the records as the partition's leader; None when they are durable at
        once, else a future that completes when they are (replicated to the ISR and, when
        the flush policy asks, fsynced) or fails when they cannot be."""
        key = (self.topic, partition)
        log_ = self.broker.partition(*key)
        leader_epoch = self.replicas.leader_epoch(key)
        if log_ is None or leader_epoch is None:
            raise NotCoordinator()
        now = now_ms()
        producer_id, producer_epoch = self.transaction_of(out) or (-1, -1)
        batch = bytearray(build_batch(
            [self.encode(r) for r in out.records], timestamp_ms=now, producer_id=producer_id,
            producer_epoch=producer_epoch, is_transactional=producer_id >= 0))
        batches = validate_leader_append(batch, log_.config, (self.topic, partition), now,
                                         client=None)
        result, ack = self.replicas.append_as_leader(key, log_, leader_epoch, batch, batches,
                                                     now, wait_for_isr=True)
        self._written[partition] = result.last_offset + 1
        if ack.settled() and ack.outcome() == ErrorCode.none:
            return None
        return asyncio.ensure_future(self._until_durable(ack))

    def _last_write_committed(self, partition: int) -> asyncio.Future[None] | None:
        """None when the high watermark has reached the shard's last written offset, else a
        future that completes when it does, or fails as an append's commit does."""
        key = (self.topic, partition)
        written = self._written.get(partition, 0)
        high_watermark = self.replicas.high_watermark(key)
        if high_watermark is not None and high_watermark >= written:
            return None
        ack = Acknowledgement(None, self.replicas.committed(key, written))
        return asyncio.ensure_future(self._until_durable(ack))

    async def _until_durable(self, ack: Acknowledgement) -> None:
        """Wait for the records' fsync and commit; raises what the requests waiting on them
        answer when they fail."""
        [code] = await acknowledged([ack], self.commit_timeout_s)
        if code == ErrorCode.not_leader_or_follower:
            raise NotCoordinator()
        if code != ErrorCode.none:
            raise CoordinatorUnavailable()

    # Time.

    def _schedule(self, partition: int) -> None:
        handle = self._timers.pop(partition, None)
        if handle is not None:
            handle.cancel()
        shard = self.shards.get(partition)
        deadline = None if shard is None else shard.next_deadline()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(deadline - now_ms(), 0) / 1000
        self._timers[partition] = loop.call_later(delay, self._tick, partition)

    def _tick(self, partition: int) -> None:
        self._timers.pop(partition, None)
        try:
            self._write_output(partition, self.shards[partition].tick(now_ms()))
        except Exception:
            log.exception("%s coordinator timers of %s-%d failed", self.name, self.topic,
                          partition)
        finally:
            self._schedule(partition)

    # Leadership.

    def refresh_topics(self) -> None:
        if self.num_partitions:
            self._follow_leadership()
        for partition, shard in list(self.shards.items()):
            try:
                out = self.topics_changed(partition, shard)
                if out is not None:
                    self._write_output(partition, out)
            except CoordinatorUnavailable:
                log.exception("refreshing the %s state of %s-%d failed", self.name,
                              self.topic, partition)

    def _follow_leadership(self) -> None:
        """Serve the partitions this broker now leads, and stop serving the others."""
        led = self.led_partitions()
        for partition in sorted(set(self.shards) - led):
            del self.shards[partition]
            self._written.pop(partition, None)
            handle = self._timers.pop(partition, None)
            if handle is not None:
                handle.cancel()
            for parked_partition, waiting in self._waiting.values():
                if parked_partition == partition and not waiting.done():
                    waiting.set_exception(NotCoordinator())
            log.info("no longer the %s coordinator of %s-%d", self.name, self.topic, partition)
        for partition in sorted(led - set(self.shards)):
            self.shards[partition] = self._load_shard(partition)
            self._after_load(partition)
            log.info("now the %s coordinator of %s-%d", self.name, self.topic, partition)

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for _, waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_exception(CoordinatorUnavailable())
