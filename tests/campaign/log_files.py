"""Which producer id and epoch wrote a record, read from the batch headers in the brokers'
log files once a campaign's final read is done: the evidence that tells a duplicate the
broker failed to catch from a record its client re-sent under a new epoch."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from odradek.protocol.records import iter_batches
from tests.campaign.checker import Place
from tests.campaign.history import Writer


def record_writers(data_dir: Path, places: Iterable[Place]) -> list[Writer]:
    """The writer of each place, from the first broker directory (`<data_dir>/broker-N`)
    holding them all; a place no log holds any longer is left out."""
    wanted: dict[tuple[str, int], set[int]] = defaultdict(set)
    for topic, partition, offset in places:
        wanted[(topic, partition)].add(offset)
    writers = []
    for (topic, partition), offsets in sorted(wanted.items()):
        found: dict[int, tuple[int, int]] = {}
        for directory in sorted(data_dir.glob(f"*/{topic}-{partition}")):
            found = {}
            for segment in sorted(directory.glob("*.log")):
                for info in iter_batches(segment.read_bytes()):
                    for offset in offsets:
                        if info.base_offset <= offset <= info.last_offset:
                            found[offset] = (info.producer_id, info.producer_epoch)
            if offsets <= found.keys():
                break
        writers += [Writer(topic, partition, offset, *found[offset]) for offset in sorted(found)]
    return writers
