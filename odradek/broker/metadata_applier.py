"""Applies the committed metadata to the broker's state, then has the services built on that
state act on it: the replicas lead or follow as the image now says, and the coordinators see
topics created, deleted or grown."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from odradek.broker.broker import Broker
from odradek.metadata.records import MetadataRecord
from odradek.runtime.clock import now_ms


class MetadataApplier:
    def __init__(self, broker: Broker, on_metadata: Callable[[int], None],
                 topic_listeners: Sequence[Callable[[], None]]) -> None:
        """`on_metadata(now_ms)` is the replicas' reaction to a new image; `topic_listeners`
        are called after every applied batch."""
        self.broker = broker
        self._on_metadata = on_metadata
        self._topic_listeners = tuple(topic_listeners)

    async def apply(self, records: list[MetadataRecord], offset: int, snapshot: bool) -> None:
        """A committed batch (or, when `snapshot`, a new image): see `Broker.apply_metadata`."""
        await self.broker.apply_metadata(records, offset, snapshot, self._placed)

    async def caught_up(self) -> None:
        """The image holds the whole committed log: see `Broker.caught_up_with_metadata`."""
        await self.broker.caught_up_with_metadata(self._placed)

    def _placed(self) -> None:
        if self.broker.caught_up:
            # Leading or following on the way through an old image would act on stale
            # leadership: a broker catching up after a restart briefly reads itself leader
            # of an epoch long gone, and stamping that epoch on its log truncates it.
            self._on_metadata(now_ms())
        for listener in self._topic_listeners:
            listener()
