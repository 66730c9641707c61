"""Partition keys and the futures of delayed fetches waiting on them: a leaf every broker
module may import."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable

TopicPartition = tuple[str, int]



class PartitionWaiters:
    """Futures of delayed fetches, woken when their partitions get new data."""

    def __init__(self) -> None:
        self._waiters: dict[TopicPartition, set[asyncio.Future[None]]] = defaultdict(set)

    def wait(self, partitions: Iterable[TopicPartition]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        keys = list(partitions)
        for key in keys:
            self._waiters[key].add(future)

        def forget(_: asyncio.Future[None]) -> None:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiters[key]

        future.add_done_callback(forget)
        return future

    def wake(self, key: TopicPartition) -> None:
        for future in list(self._waiters.get(key, ())):
            if not future.done():
                future.set_result(None)
