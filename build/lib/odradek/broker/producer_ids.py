"""Producer ids for InitProducerId, handed out from blocks the controller allocates
(AllocateProducerIds, recorded in the metadata log), the next block fetched before the
current one runs out, as Kafka's RPCProducerIdManager does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from kio.schema.errors import ErrorCode

log = logging.getLogger("odradek.broker.producer_ids")

PREFETCH_FRACTION = 0.9
"""Fetch the next block once this much of the current one is used."""

BlockFetcher = Callable[[], Awaitable[tuple[ErrorCode, int, int]]]
"""Asks the controller for a block: (error, first id, count)."""


class ProducerIdsUnavailable(Exception):
    """No block could be had from the controller (COORDINATOR_LOAD_IN_PROGRESS to clients,
    who retry)."""


class ProducerIdManager:
    def __init__(self, fetch_block: BlockFetcher, on_allocate: Callable[[], None]) -> None:
        self._fetch_block = fetch_block
        self._on_allocate = on_allocate
        self._next = 0
        self._end = 0
        self._block_size = 0
        self._pending: list[tuple[int, int]] = []
        self._fetching: asyncio.Task[None] | None = None

    def available(self) -> bool:
        return self._next < self._end or bool(self._pending)

    async def ensure_available(self) -> None:
        """Wait until `take` can hand out an id; raises ProducerIdsUnavailable."""
        if not self.available():
            await self._fetch()
            if not self.available():
                raise ProducerIdsUnavailable()

    def take(self) -> int:
        """The next producer id; `ensure_available` first."""
        if self._next >= self._end:
            if not self._pending:
                raise ProducerIdsUnavailable()
            self._next, self._end = self._pending.pop(0)
        producer_id = self._next
        self._next += 1
        self._on_allocate()
        if (not self._pending and self._block_size
                and self._end - self._next < self._block_size * (1 - PREFETCH_FRACTION)):
            self._start_fetch()
        return producer_id

    def _start_fetch(self) -> None:
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.ensure_future(self._fetch_once())

    async def _fetch(self) -> None:
        self._start_fetch()
        assert self._fetching is not None
        await asyncio.shield(self._fetching)

    async def _fetch_once(self) -> None:
        try:
            code, first, count = await self._fetch_block()
        except Exception:
            log.exception("AllocateProducerIds failed")
            return
        if code != ErrorCode.none or count <= 0:
            log.warning("AllocateProducerIds answered %s", ErrorCode(code).name)
            return
        self._block_size = count
        self._pending.append((first, first + count))
