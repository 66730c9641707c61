"""The mirror's offset-sync writer (odradek/mirror/offset_sync_writer.py): syncs the source
cluster refuses are written again, in order, with a new producer id, rather than dropped (a
dropped sync left an idle partition's checkpoints waiting for good); past MAX_PENDING the
oldest go."""

from __future__ import annotations

import asyncio

import pytest

from odradek.mirror import offset_sync_writer
from odradek.mirror.backoff import Backoff
from odradek.mirror.formats import OffsetSync
from odradek.mirror.offset_sync_writer import OffsetSyncWriter
from odradek.mirror.producer import ProducerError
from odradek.protocol.record_codec import decode_records

TOPIC = "mm2-offset-syncs.west.internal"


class RefusingProducer:
    """A MirrorProducer whose first `refusals` produces fail for good."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.inits = 0
        self.producer_id = -1
        self.producer_epoch = 0
        self.written: list[OffsetSync] = []

    async def init(self) -> None:
        self.inits += 1
        self.producer_id = self.inits

    def sequence(self, key: tuple[str, int]) -> int:
        return 0

    async def produce(self, key: tuple[str, int], batch: bytes, record_count: int) -> int:
        if self.refusals:
            self.refusals -= 1
            raise ProducerError(f"Produce to {TOPIC}-0: NOT_ENOUGH_REPLICAS")
        self.written += [OffsetSync.decode(r.key or b"", r.value or b"")
                         for r in decode_records(batch)]
        return 0


async def write(producer: RefusingProducer, *batches: list[tuple[int, int]]) -> int:
    writer = OffsetSyncWriter(producer, TOPIC,  # type: ignore[arg-type]
                              Backoff(first_ms=1, max_ms=2))
    writer.start()
    for syncs in batches:
        writer.write("orders", 0, syncs)
        await asyncio.sleep(0)
    await writer.stop(timeout_s=10)
    return writer.written


def test_refused_syncs_are_written_again_in_order() -> None:
    producer = RefusingProducer(refusals=3)
    written = asyncio.run(write(producer, [(0, 0)], [(20, 20)], [(40, 41)]))
    assert written == 3
    assert [(s.upstream, s.downstream) for s in producer.written] == [(0, 0), (20, 20), (40, 41)]
    assert producer.inits == 4  # a new producer id after each refusal


def test_past_max_pending_the_oldest_syncs_are_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offset_sync_writer, "MAX_PENDING", 2)
    producer = RefusingProducer(refusals=1)
    written = asyncio.run(write(producer, [(0, 0), (10, 10), (20, 20)]))
    assert written == 2
    assert [s.upstream for s in producer.written] == [10, 20]
