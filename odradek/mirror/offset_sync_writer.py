"""Offset syncs written outside the copy's transactions: to `mm2-offset-syncs.<target>.internal`
on the source cluster (MM2's default `offset-syncs.topic.location=source`), partition 0 as
MM2's OffsetSyncWriter writes them, by one idempotent producer per flow. Copiers hand syncs
over without waiting; a background task writes them in order. Syncs that cannot be written
are tried again, in order and with backoff, with a new producer id: a sync lost silently
would leave the checkpoints of its partition waiting for the next one, which an idle
partition never writes (MM2 drops it). Past MAX_PENDING unwritten syncs, the oldest are
dropped, and logged."""

from __future__ import annotations

import asyncio
import logging

from odradek.mirror.backoff import Backoff
from odradek.mirror.formats import OffsetSync
from odradek.mirror.producer import MirrorProducer, ProducerError
from odradek.protocol.record_codec import build_batch
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.mirror.offset_syncs")

PARTITION = 0
STOP_TIMEOUT_S = 5.0
MAX_PENDING = 100_000
"""Unwritten syncs kept while the source cluster refuses them (about 100 bytes each)."""


class OffsetSyncWriter:
    def __init__(self, producer: MirrorProducer, topic: str,
                 backoff: Backoff | None = None) -> None:
        self.producer = producer
        self.topic = topic
        self._backoff = backoff or Backoff()
        self._pending: list[OffsetSync] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready = False
        self._stopping = False
        self.written = 0

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    def write(self, topic: str, partition: int, syncs: list[tuple[int, int]]) -> None:
        self._pending += [OffsetSync(topic, partition, u, d) for u, d in syncs]
        self._wake.set()

    async def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Write what is pending, for up to `timeout_s`, then stop."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            await asyncio.wait_for(self._task, timeout_s)
        except TimeoutError:
            log.warning("stopped with %d offset syncs not written to %s", len(self._pending),
                        self.topic)

    async def _run(self) -> None:
        key = (self.topic, PARTITION)
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                syncs, self._pending = self._pending, []
                try:
                    if not self._ready:
                        await self.producer.init()
                        self._ready = True
                    batch = build_batch([(s.key(), s.value()) for s in syncs],
                                        timestamp_ms=now_ms(),
                                        producer_id=self.producer.producer_id,
                                        producer_epoch=self.producer.producer_epoch,
                                        base_sequence=self.producer.sequence(key))
                    await self.producer.produce(key, batch, len(syncs))
                    self.written += len(syncs)
                    self._backoff.reset()
                except ProducerError as error:
                    self._ready = False
                    self._pending = syncs + self._pending
                    excess = len(self._pending) - MAX_PENDING
                    if excess > 0:
                        del self._pending[:excess]
                        log.warning("dropped the %d oldest offset syncs not written to %s",
                                    excess, self.topic)
                    delay_ms = self._backoff.next_ms()
                    log.warning("%d offset syncs not written to %s, again in %.1f s: %s",
                                len(self._pending), self.topic, delay_ms / 1000, error)
                    await asyncio.sleep(delay_ms / 1000)
            if self._stopping:
                return
