"""SharePartitionManager's reaction to a member's disconnect (odradek/broker/share_fetch.py):
the member's records are released, and the group's share-partitions are dropped (rebuilt from
their persisted state on next use, Kafka's onGroupEmpty) only if no member of the group has
a session on the broker by then. The release writes to the share coordinator; a member that
opens a session meanwhile may acquire what it freed, and a rebuilt share-partition would
deliver those records again (librdkafka's 0171, close_releases_to_group)."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.broker.share_fetch import SharePartitionManager
from odradek.share.session import ShareSessionCache

PARTITION = ("topic-id", 0)
SHARE_KEY = ("g", *PARTITION)


class _Metrics:
    def forget(self, *_: object) -> None:
        pass


class _Entry:
    timer = None
    topic = "topic"


def manager_whose_release(during_release: Any
                          ) -> tuple[SharePartitionManager, list[tuple[str, str]]]:
    """A manager holding one share-partition of group g, whose release of a member's records
    runs `during_release` (what happens while the write is on its way); and the (group,
    member) pairs it released."""
    manager = SharePartitionManager.__new__(SharePartitionManager)
    manager.sessions = ShareSessionCache(10)
    manager._entries = {SHARE_KEY: _Entry()}  # type: ignore[dict-item]
    manager.partition_metrics = _Metrics()  # type: ignore[assignment]
    released: list[tuple[str, str]] = []

    async def release(group_id: str, member_id: str, partitions: list[Any]) -> None:
        released.append((group_id, member_id))
        await asyncio.sleep(0)
        during_release(manager)

    manager.release = release  # type: ignore[method-assign]
    return manager, released


def disconnect_m1(manager: SharePartitionManager, released: list[tuple[str, str]]) -> None:
    manager.sessions.new_context(("g", "m1"), 0, "c1", [PARTITION], [], acknowledging=False)
    session, emptied = manager.sessions.disconnected("c1")
    assert emptied == "g"
    asyncio.run(manager._left(session, emptied))
    assert released == [("g", "m1")]


def test_the_last_member_leaving_drops_the_groups_share_partitions() -> None:
    manager, released = manager_whose_release(lambda _: None)
    disconnect_m1(manager, released)
    assert SHARE_KEY not in manager._entries


def test_a_member_that_opened_a_session_during_the_release_keeps_them() -> None:
    def m2_fetches(manager: SharePartitionManager) -> None:
        manager.sessions.new_context(("g", "m2"), 0, "c2", [PARTITION], [],
                                     acknowledging=False)

    manager, released = manager_whose_release(m2_fetches)
    disconnect_m1(manager, released)
    assert SHARE_KEY in manager._entries, "m2 may hold records the release freed"
