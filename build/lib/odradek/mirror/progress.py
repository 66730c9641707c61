"""Where the mirror keeps its progress, in MirrorMaker 2's own format: Kafka Connect's
offsets topic `mm2-offsets.<source>.internal` on the target cluster. A record's key is
Connect's JSON `["MirrorSourceConnector",{"cluster":..,"partition":..,"topic":..}]`, its
value `{"offset":N}` with N the last upstream offset copied (MirrorUtils.wrapPartition and
wrapOffset), and it goes to the partition Kafka's default partitioner picks for the key
(murmur2), as Connect's KafkaOffsetBackingStore writes it. MM2 resumes at N + 1; so do we.

With offset syncs on the source cluster, the value also carries the syncs of the
transaction it commits, so that a mirror killed between its commit and writing them
re-emits them: `"offset_syncs": "U:D,U:D"`, a string, because Connect refuses an offset
with any value that is not a primitive (OffsetUtils.validateFormat: MM2 would find no
offset and copy the partition again from its start); MM2 reads only "offset"."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

CONNECTOR = "MirrorSourceConnector"


def progress_key(source: str, topic: str, partition: int) -> bytes:
    return json.dumps([CONNECTOR, {"cluster": source, "partition": partition, "topic": topic}],
                      separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Progress:
    offset: int
    """The last upstream offset copied: the copy resumes at offset + 1."""
    offset_syncs: tuple[tuple[int, int], ...] = ()

    def value(self) -> bytes:
        body: dict[str, object] = {"offset": self.offset}
        if self.offset_syncs:
            body["offset_syncs"] = ",".join(f"{u}:{d}" for u, d in self.offset_syncs)
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, value: bytes | None) -> Progress | None:
        """The progress a record's value holds; None for a tombstone or a value without an
        integer "offset" (Connect's unwrapOffset reads those as no offset)."""
        if value is None:
            return None
        try:
            body = json.loads(value)
        except ValueError:
            return None
        offset = body.get("offset") if isinstance(body, dict) else None
        if not isinstance(offset, int):
            return None
        syncs = body.get("offset_syncs") or ()
        if isinstance(syncs, str):  # else a list of pairs, as earlier versions wrote
            syncs = [pair.split(":") for pair in syncs.split(",")]
        return cls(offset, tuple((int(u), int(d)) for u, d in syncs))


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (a signed 32-bit result)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = length % 4
    if tail:
        if tail >= 3:
            h ^= data[whole + 2] << 16
        if tail >= 2:
            h ^= data[whole + 1] << 8
        h ^= data[whole]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def stretch_starts(upstream: Sequence[Sequence[int]], downstream_base: int,
                   shift: int | None) -> tuple[list[tuple[int, int]], int | None]:
    """The offset syncs (upstream, downstream) for records written contiguously from
    `downstream_base`, with these upstream offsets (one sequence per batch): one at each
    record where downstream - upstream differs from the record before's (`shift` is the
    previous record's, None at the start). Returns them and the last record's shift."""
    syncs: list[tuple[int, int]] = []
    downstream = downstream_base
    for offsets in upstream:
        if isinstance(offsets, range) and offsets.step == 1:
            if offsets and downstream - offsets.start != shift:
                shift = downstream - offsets.start
                syncs.append((offsets.start, downstream))
            downstream += len(offsets)
            continue
        for offset in offsets:
            if downstream - offset != shift:
                shift = downstream - offset
                syncs.append((offset, downstream))
            downstream += 1
    return syncs, shift
