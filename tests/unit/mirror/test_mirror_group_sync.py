"""sync.group.offsets (`CheckpointEmitter.sync_group_offsets`) while checkpoints keep coming:
a group whose first checkpoint is emitted while the sync awaits the target waits for the
next round. CI saw the sync fail with "dictionary changed size during iteration"."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.mirror.checkpoints import CheckpointEmitter
from odradek.mirror.config import parse_mirror_config
from odradek.mirror.formats import Checkpoint
from odradek.mirror.translation import GroupOffset


class Target:
    """The target cluster as the sync sees it: every group idle with nothing committed;
    each check of a group lets `during_check` emit a checkpoint meanwhile."""

    def __init__(self, emitter: CheckpointEmitter) -> None:
        self.emitter = emitter
        self.committed: dict[str, dict[tuple[str, int], GroupOffset]] = {}

    async def group_active(self, group: str) -> bool:
        await asyncio.sleep(0)
        self.emitter.last.setdefault(f"new-after-{group}", {})[("east.orders", 0)] = (
            Checkpoint(f"new-after-{group}", "east.orders", 0, 5, 5))
        self.emitter.last[group][("east.orders", 1)] = Checkpoint(group, "east.orders", 1, 9, 9)
        return False

    async def group_offsets(self, group: str) -> dict[tuple[str, int], Any]:
        return {}

    async def commit_group_offsets(self, group: str,
                                   offsets: dict[tuple[str, int], GroupOffset]) -> None:
        self.committed[group] = dict(offsets)


def test_checkpoints_emitted_during_a_sync_wait_for_the_next_round() -> None:
    flow = parse_mirror_config({"clusters": "east, west", "east.bootstrap.servers": "h:1",
                                "west.bootstrap.servers": "h:2",
                                "east->west.enabled": "true"}).flow("east", "west")
    emitter = CheckpointEmitter(flow, None, None, None, None)  # type: ignore[arg-type]
    target = Target(emitter)
    emitter.target = target  # type: ignore[assignment]
    emitter.last["app"] = {("east.orders", 0): Checkpoint("app", "east.orders", 0, 3, 2)}
    asyncio.run(emitter.sync_group_offsets())
    assert target.committed == {"app": {("east.orders", 0): GroupOffset(2, ""),
                                        ("east.orders", 1): GroupOffset(9, "")}}
    assert "new-after-app" in emitter.last
