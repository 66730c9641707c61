"""One partition's copy from the source cluster to the target, exactly once by default.

A session starts by fencing: InitProducerId with the partition's own transactional id
(`mirror-<source>-><target>-<topic>-<partition>`) bumps the epoch, which aborts a
transaction a crashed or zombie owner left open and refuses that owner's later writes.
It then reads the committed progress back from the target (read_committed) and fetches
from the source from there. Each Fetch answer becomes one transaction on the target (MM2's
`transaction.boundary=poll`): the rewritten batches, then the progress record covering
them (and, with `offset-syncs.topic.location=target`, the offset syncs), then EndTxn. The
next fetch is already under way while a transaction is written.

With `exactly.once.support=disabled` the producer is idempotent only; progress is written
after the data is acknowledged, every `offset.flush.interval.ms` and when stopping.

Any error the producer does not retry itself ends the session; the next one starts from
what the target has committed, so nothing is copied twice. PRODUCER_FENCED ends the copy:
another process owns the partition now.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from odradek.mirror.batches import ProducerStamp, Selection, select_batches, stamp_batches
from odradek.mirror.formats import OffsetSync
from odradek.mirror.metrics import PartitionMetrics
from odradek.mirror.producer import MirrorProducer, ProducerError, ProducerFencedError
from odradek.mirror.progress import Progress, partition_for, progress_key, stretch_starts
from odradek.mirror.reader import (
    EARLIEST,
    LATEST,
    Fetched,
    OffsetOutOfRange,
    PartitionReader,
    ReadError,
)
from odradek.net.kafka_client import KafkaClientError, KafkaCluster
from odradek.protocol.record_codec import build_batch, decode_records
from odradek.protocol.records import InvalidRecordsError
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.mirror.copier")

SESSION_BACKOFF_S = (0.1, 10.0)
"""First and longest pause before a new session after a failed one."""
SYNCS_PARTITION = 0
"""MM2's OffsetSyncWriter writes every sync to partition 0."""

Sync = tuple[int, int]
SyncSink = Callable[[str, int, list[Sync]], None]
"""(source topic, partition, syncs): offset syncs to write outside the transaction."""


@dataclass(frozen=True)
class CopySettings:
    """What every copier of a flow shares."""

    source: str
    target: str
    exactly_once: bool
    progress_topic: str
    progress_partitions: int
    syncs_on_target: str | None
    """The offset syncs topic when syncs go to the target cluster, else None."""
    transaction_timeout_ms: int = 60_000
    delivery_timeout_s: float = 120.0
    fetch_max_bytes: int = 8 << 20
    offset_flush_interval_ms: int = 60_000
    """Connect's offset.flush.interval.ms: how often at-least-once progress is written."""


class PartitionCopier:
    def __init__(self, settings: CopySettings, topic: str, partition: int, target_topic: str,
                 source: KafkaCluster, target: KafkaCluster, metrics: PartitionMetrics,
                 write_syncs: SyncSink | None) -> None:
        self.settings = settings
        self.topic = topic
        self.partition = partition
        self.target_topic = target_topic
        self.source = source
        self.target = target
        self.metrics = metrics
        self._write_syncs = write_syncs
        self.reader = PartitionReader(source, topic, partition, settings.fetch_max_bytes)
        self._key = progress_key(settings.source, topic, partition)
        self._progress_tp = (settings.progress_topic,
                             partition_for(self._key, settings.progress_partitions))
        self._target_tp = (target_topic, partition)
        transactional_id = (f"mirror-{settings.source}->{settings.target}-{topic}-{partition}"
                            if settings.exactly_once else None)
        self.producer = MirrorProducer(target, transactional_id,
                                       settings.transaction_timeout_ms,
                                       settings.delivery_timeout_s)
        self.position: int | None = None
        """The next upstream offset to copy (everything before it is committed)."""
        self.downstream: int | None = None
        """The target offset just past the last record written."""
        self.fenced = False
        self._stopping = False
        self._fetching: asyncio.Task[Fetched] | None = None
        self._shift: int | None = None
        self._flushed_at = 0
        self._flushed_position: int | None = None
        self._caught_up_ms = now_ms()
        self._failure: str | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    async def run(self) -> None:
        """Copy until `stop` (or until fenced)."""
        backoff = SESSION_BACKOFF_S[0]
        while not self._stopping:
            try:
                await self._session()
            except ProducerFencedError as error:
                log.warning("%s: fenced by a newer owner, stopping the copy (%s)", self.name,
                            error)
                self.fenced = True
                return
            except Exception as error:  # noqa: BLE001 - every failure ends the session alike
                failure = f"{type(error).__name__}: {error}"
                if failure != self._failure:
                    expected = isinstance(error, (ProducerError, ReadError, KafkaClientError,
                                                  InvalidRecordsError))
                    log.warning("%s: %s; retrying with backoff", self.name, failure,
                                exc_info=not expected)
                    self._failure = failure
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, SESSION_BACKOFF_S[1])
                continue
            finally:
                self._cancel_fetch()
            return

    async def stop(self) -> None:
        """Finish the transaction in flight, write at-least-once progress, stop fetching."""
        self._stopping = True
        self._cancel_fetch()

    def _cancel_fetch(self) -> None:
        if self._fetching is not None:
            self._fetching.cancel()
            self._fetching = None

    # --- a session -------------------------------------------------------------------------

    async def _session(self) -> None:
        await self.producer.init()
        committed = await self._read_progress()
        if committed is None:
            self.position = await self.reader.offset(EARLIEST)
        else:
            self.position = committed.offset + 1
            if committed.offset_syncs and self._write_syncs is not None:
                self._write_syncs(self.topic, self.partition, list(committed.offset_syncs))
        target_reader = PartitionReader(self.target, *self._target_tp, 1)
        self.downstream = await target_reader.offset(LATEST)
        self._shift = None
        self._flushed_position = self.position
        self._flushed_at = now_ms()
        log.info("%s: copying from upstream offset %d (producer %d epoch %d)", self.name,
                 self.position, self.producer.producer_id, self.producer.producer_epoch)
        self._failure = None
        self._fetching = self._fetch(self.position)
        while not self._stopping:
            try:
                fetched = await self._fetching
            except asyncio.CancelledError:
                if self._stopping:
                    break
                raise
            except OffsetOutOfRange:
                start = await self.reader.offset(EARLIEST)
                log.warning("%s: upstream offset %d is no longer in the source log; copying "
                            "from its start, %d", self.name, self.position, start)
                self.position = start
                self._fetching = self._fetch(start)
                continue
            selection = select_batches(fetched.records, self.position, fetched.aborted)
            self._fetching = self._fetch(selection.next_offset)
            await self._copy(selection)
            self._lag(fetched.last_stable_offset)
        if not self.settings.exactly_once:
            await self._flush_progress(force=True)

    def _fetch(self, offset: int) -> asyncio.Task[Fetched]:
        return asyncio.ensure_future(self.reader.fetch(offset))

    async def _copy(self, selection: Selection) -> None:
        assert self.position is not None
        if not selection.chunks:
            self.position = selection.next_offset
            return
        now = now_ms()
        for chunk in selection.chunks:
            self.metrics.record_age.record(now - chunk.max_timestamp, now, chunk.record_count)
        if self.settings.exactly_once:
            await self.producer.add_partitions(self._transaction_partitions())
        stamp = ProducerStamp(self.producer.producer_id, self.producer.producer_epoch,
                              self.settings.exactly_once)
        batches = []
        sequence = self.producer.sequence(self._target_tp)
        for chunk in selection.chunks:
            batch, sequence = stamp_batches([chunk], stamp, sequence)
            batches.append((batch, chunk.record_count))
        bases = await self.producer.produce_all(self._target_tp, batches)
        syncs: list[Sync] = []
        for chunk, base in zip(selection.chunks, bases, strict=True):
            starts, self._shift = stretch_starts([chunk.upstream], base, self._shift)
            syncs += starts
        downstream = bases[-1] + selection.chunks[-1].record_count
        syncs.append((selection.next_offset, downstream))
        self._shift = downstream - selection.next_offset
        if self.settings.exactly_once:
            await self._write_progress(Progress(
                selection.next_offset - 1,
                tuple(syncs) if self._write_syncs is not None else ()))
            if self.settings.syncs_on_target is not None:
                await self._produce_syncs(syncs)
            await self.producer.end_transaction(commit=True)
        self.position = selection.next_offset
        self.downstream = downstream
        if self.settings.exactly_once or self.settings.syncs_on_target is None:
            if self._write_syncs is not None:
                self._write_syncs(self.topic, self.partition, syncs)
        else:
            await self._produce_syncs(syncs)
        if not self.settings.exactly_once:
            await self._flush_progress(force=False)
        done = now_ms()
        records = sum(c.record_count for c in selection.chunks)
        self.metrics.records.record(records, done)
        self.metrics.bytes.record(sum(len(c.data) for c in selection.chunks), done)
        for chunk in selection.chunks:
            self.metrics.replication_latency.record(done - chunk.max_timestamp, done,
                                                    chunk.record_count)

    def _transaction_partitions(self) -> list[tuple[str, int]]:
        partitions = [self._target_tp, self._progress_tp]
        if self.settings.syncs_on_target is not None:
            partitions.append((self.settings.syncs_on_target, SYNCS_PARTITION))
        return partitions

    async def _write_progress(self, progress: Progress) -> None:
        await self._produce_records(self._progress_tp, [(self._key, progress.value())])

    async def _produce_syncs(self, syncs: list[Sync]) -> None:
        assert self.settings.syncs_on_target is not None
        records = [(sync.key(), sync.value()) for sync in (
            OffsetSync(self.topic, self.partition, u, d) for u, d in syncs)]
        await self._produce_records((self.settings.syncs_on_target, SYNCS_PARTITION), records)

    async def _produce_records(self, key: tuple[str, int],
                               records: list[tuple[bytes, bytes]]) -> None:
        batch = build_batch(records, timestamp_ms=now_ms(),
                            producer_id=self.producer.producer_id,
                            producer_epoch=self.producer.producer_epoch,
                            base_sequence=self.producer.sequence(key),
                            is_transactional=self.settings.exactly_once)
        await self.producer.produce(key, batch, len(records))

    async def _flush_progress(self, force: bool) -> None:
        """At-least-once: progress after the data it covers is acknowledged."""
        if self.position is None or self.position == self._flushed_position:
            return
        if not force and now_ms() - self._flushed_at < self.settings.offset_flush_interval_ms:
            return
        await self._write_progress(Progress(self.position - 1))
        self._flushed_position = self.position
        self._flushed_at = now_ms()

    def _lag(self, last_stable_offset: int) -> None:
        assert self.position is not None
        now = now_ms()
        lag = max(last_stable_offset - self.position, 0)
        if lag == 0:
            self._caught_up_ms = now
        self.metrics.lag_records = lag
        self.metrics.lag_seconds = (now - self._caught_up_ms) / 1000

    # --- progress --------------------------------------------------------------------------

    async def _read_progress(self) -> Progress | None:
        """The last committed progress of this partition: the progress partition read with
        read_committed up to the end it had when this session fenced the previous owner
        (transactions of other partitions' copiers still open there are waited for)."""
        reader = PartitionReader(self.target, *self._progress_tp, self.settings.fetch_max_bytes)
        end = await reader.offset(LATEST)
        position = await reader.offset(EARLIEST)
        found: Progress | None = None
        while position < end:
            fetched = await reader.fetch(position)
            selection = select_batches(fetched.records, position, fetched.aborted)
            for chunk in selection.chunks:
                for record in decode_records(chunk.data):
                    if record.key == self._key:
                        found = Progress.decode(record.value)
            position = selection.next_offset
        return found
