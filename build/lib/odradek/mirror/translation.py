"""Exact offset translation: a group's committed upstream offset to the downstream offset
where the same record (or the first one after it) sits on the target.

The mirror writes an offset sync `(U, D)` at the first record of every stretch (where
downstream minus upstream changes) and a position sync at every commit (next upstream to
copy, last downstream written + 1). Between two syncs records map one to one, so for a
committed offset C and the last sync s with U_s <= C the answer is D_s + (C - U_s), capped
at the next sync's D (C fell into an upstream gap). MM2's OffsetSyncStore keeps 64 syncs in
exponentially spaced slots and answers "last sync + 1", which re-delivers records; this
store keeps every sync of the recent history (the oldest are dropped first, past
`max_syncs`) and answers exactly where it holds every sync of the stretch.

Once the syncs topic is compacted it keeps, per source partition, the latest sync before
the cleaner's point and every later one: the history read back is a suffix of what was
written. As in MM2, a commit older than the oldest sync kept is not translated (MM2
answers -1 and emits no checkpoint). Records missing from the syncs topic's offsets in the
middle of a read (the cleaner ran ahead of the reader, or retention) may have been syncs
of any partition: up to each partition's next sync, the answer is then MM2's, D_s + 1
(D_s when C = U_s). That never skips a record when every sync's D holds a record or a
commit marker (exactly-once); in at-least-once mode a position sync's D may be where the
next record lands, so the answer there is D_s.

Also here, MM2's rules for which checkpoints to emit (MirrorCheckpointTask) and which
translated offsets to commit for idle groups on the target.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from odradek.mirror.formats import Checkpoint, OffsetSync

DEFAULT_MAX_SYNCS = 100_000
"""Syncs kept per partition: a committed offset older than the oldest kept is not
translated (MM2 declines those too)."""


@dataclass
class _History:
    """One source partition's syncs, sorted by upstream offset; downstream offsets never
    decrease along them. `after_gap[i]`: syncs may be missing between sync i - 1 and i."""
    upstream: list[int] = field(default_factory=list)
    downstream: list[int] = field(default_factory=list)
    after_gap: list[bool] = field(default_factory=list)
    gap_pending: bool = False
    """Records were missing from the syncs topic since this partition's last new sync."""

    def add(self, upstream: int, downstream: int, max_syncs: int) -> None:
        at = bisect.bisect_left(self.upstream, upstream)
        if at < len(self.upstream) and self.upstream[at] == upstream:
            # A position sync and the next stretch's first sync can share an upstream
            # offset; the larger downstream offset is where the record is.
            self.downstream[at] = max(self.downstream[at], downstream)
        else:
            self.upstream.insert(at, upstream)
            self.downstream.insert(at, downstream)
            self.after_gap.insert(at, self.gap_pending)
            if self.gap_pending and at + 1 < len(self.after_gap):
                self.after_gap[at + 1] = True
            self.gap_pending = False
        if not self._consistent(at):
            # An upstream rewind (the source topic was recreated, or truncated): what came
            # before no longer describes the partition.
            self.upstream[:] = [upstream]
            self.downstream[:] = [downstream]
            self.after_gap[:] = [False]
        excess = len(self.upstream) - max_syncs
        if excess > 0:
            del self.upstream[:excess]
            del self.downstream[:excess]
            del self.after_gap[:excess]

    def _consistent(self, at: int) -> bool:
        value = self.downstream[at]
        return ((at == 0 or self.downstream[at - 1] <= value)
                and (at + 1 == len(self.downstream) or value <= self.downstream[at + 1]))

    def translate(self, committed: int, past_sync: int) -> int | None:
        """`past_sync`: the step past a sync that a stretch with missing syncs allows."""
        if not self.upstream or committed > self.upstream[-1]:
            return None  # the group is ahead of what the mirror has written
        at = bisect.bisect_right(self.upstream, committed) - 1
        if at < 0:
            return None  # older than every sync kept: MM2's -1, no checkpoint
        if committed == self.upstream[at]:
            return self.downstream[at]
        # committed < upstream[-1], so a next sync exists
        step = past_sync if self.after_gap[at + 1] else committed - self.upstream[at]
        return min(self.downstream[at] + step, self.downstream[at + 1])


class OffsetTranslator:
    """Every offset sync read from `mm2-offset-syncs.<target>.internal`, per source
    partition, and the translations they allow."""

    def __init__(self, max_syncs: int = DEFAULT_MAX_SYNCS, dense: bool = True,
                 markers: bool = True) -> None:
        """`dense`: the syncs topic has a record at every offset unless some were removed
        (no transaction markers: its writers are not transactional). `markers`: the mirror
        is exactly-once, so each commit's position sync points at its commit marker."""
        if max_syncs < 2:
            raise ValueError("max_syncs must keep at least two syncs")
        self._max_syncs = max_syncs
        self._dense = dense
        self._past_sync = 1 if markers else 0
        self._next_offset: int | None = None
        self._histories: dict[tuple[str, int], _History] = {}

    def advance(self, log_offset: int) -> None:
        """The syncs topic's record at `log_offset` is the next one read. In a dense topic,
        offsets missing before it were removed records, syncs of any partition: each
        partition's stretch up to its next sync is then translated as MM2 does."""
        if self._dense and self._next_offset is not None and log_offset > self._next_offset:
            for history in self._histories.values():
                history.gap_pending = True
        self._next_offset = log_offset + 1

    def add(self, sync: OffsetSync) -> None:
        history = self._histories.setdefault((sync.topic, sync.partition), _History())
        history.add(sync.upstream, sync.downstream, self._max_syncs)

    def add_all(self, syncs: Iterable[OffsetSync]) -> None:
        for sync in syncs:
            self.add(sync)

    def translate(self, topic: str, partition: int, committed: int) -> int | None:
        """The downstream offset a consumer of the mirrored partition should commit to
        resume exactly after `committed` upstream, or None when the syncs do not say."""
        history = self._histories.get((topic, partition))
        return None if history is None else history.translate(committed, self._past_sync)

    def syncs(self, topic: str, partition: int) -> list[tuple[int, int]]:
        """The kept syncs of a partition as (upstream, downstream) pairs, oldest first."""
        history = self._histories.get((topic, partition))
        return [] if history is None else list(zip(history.upstream, history.downstream,
                                                    strict=True))


TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class GroupOffset:
    offset: int
    metadata: str = ""


def checkpoints_for_group(
    group: str,
    upstream_offsets: Mapping[TopicPartition, GroupOffset],
    translator: OffsetTranslator,
    rename: Mapping[str, str],
    last: Mapping[TopicPartition, Checkpoint],
) -> list[Checkpoint]:
    """MirrorCheckpointTask.checkpointsForGroup with exact translation: the checkpoints
    to emit for `group`'s committed upstream offsets. `rename` maps each source topic to
    checkpoint (the filter decides which) to its name on the target; `last` holds the
    group's last checkpoints by target topic-partition. A checkpoint is emitted when it is
    the first, when upstream rewound, or when downstream advanced, never to rewind
    downstream."""
    emitted = []
    for (topic, partition), committed in sorted(upstream_offsets.items()):
        target_topic = rename.get(topic)
        if target_topic is None:
            continue
        downstream = translator.translate(topic, partition, committed.offset)
        if downstream is None or downstream < 0:
            continue
        checkpoint = Checkpoint(group, target_topic, partition, committed.offset, downstream,
                                committed.metadata)
        previous = last.get((target_topic, partition))
        if (previous is None or checkpoint.upstream < previous.upstream
                or checkpoint.downstream > previous.downstream):
            emitted.append(checkpoint)
    return emitted


def offsets_to_sync(
    checkpoints: Iterable[Checkpoint], target_offsets: Mapping[TopicPartition, int] | None
) -> dict[TopicPartition, GroupOffset]:
    """MirrorCheckpointTask.syncGroupOffset for one group that is idle on the target: the
    translated offsets to commit there, never moving a committed offset backwards.
    `target_offsets` is the group's committed offsets on the target (None: unknown, the
    group was not seen idle, so every checkpoint is synced, as MM2 does)."""
    result = {}
    for checkpoint in checkpoints:
        key = (checkpoint.topic, checkpoint.partition)
        if target_offsets is not None and target_offsets.get(key, -1) >= checkpoint.downstream:
            continue
        result[key] = GroupOffset(checkpoint.downstream, checkpoint.metadata)
    return result
