"""DeleteGroups of a share group (broker/handlers/groups.py with handlers/share_offsets.py),
as Kafka's GroupCoordinatorService.deleteGroups orders it: the share-partition state is
deleted at the share coordinators first; a failed deletion keeps the group, answers the
failure's error, and the next DeleteGroups retries it. The group coordinator is a real shard;
the share coordinators are a persister that fails when told to."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.handlers.groups import handle_delete_groups
from odradek.broker.share_persister import PersisterError
from odradek.group.coordinator import GroupCoordinatorShard
from odradek.group.model import GroupConfig, StaticTopics, TopicInfo
from odradek.group.share_handlers import ShareHeartbeatRequest

ORDERS = "id-orders"


class Groups:
    """The group coordinator runtime's `run`, on one shard, its records applied."""

    def __init__(self) -> None:
        self.shard = GroupCoordinatorShard(
            GroupConfig(), StaticTopics({"orders": TopicInfo(ORDERS, "orders", 2)}),
            random.Random(1))

    async def ensure_loaded(self) -> None:
        return None

    async def run(self, key: str, handler: Callable[[Any, int], tuple[Any, Any]]) -> Any:
        return handler(self.shard, 100)[0]


class Persister:
    def __init__(self) -> None:
        self.failing: set[int] = set()
        self.deleted: list[tuple[str, str, int]] = []

    async def delete(self, group_id: str, topic_id: str, partition: int) -> None:
        if partition in self.failing:
            raise PersisterError(ErrorCode.coordinator_not_available, "unreachable")
        self.deleted.append((group_id, topic_id, partition))


def delete_groups(context: Any, *names: str) -> dict[str, int]:
    response = asyncio.run(handle_delete_groups(
        context, SimpleNamespace(groups_names=list(names))))
    return {r["group_id"]: r["error_code"] for r in response["results"]}


def test_the_share_state_goes_first_and_a_failure_keeps_the_group() -> None:
    groups, persister, forgotten = Groups(), Persister(), []
    context = SimpleNamespace(
        allowed=lambda *args: True,
        services=SimpleNamespace(groups=groups, share_partitions=SimpleNamespace(
            persister=persister, forget_group=forgotten.append)))
    shard = groups.shard
    shard.share_heartbeat(ShareHeartbeatRequest("g", "m", 0, None, ("orders",), "c", "/h"), 1)
    assert delete_groups(context, "g") == {"g": ErrorCode.non_empty_group}
    assert persister.deleted == []
    shard.share_heartbeat(ShareHeartbeatRequest("g", "m", -1, None, None, "c", "/h"), 2)

    persister.failing = {1}
    assert delete_groups(context, "g") == {"g": ErrorCode.coordinator_not_available}
    assert "g" in shard.groups and persister.deleted == [("g", ORDERS, 0)]
    assert shard.share_initialized_partitions("g") == {}, "recorded as deleting"

    persister.failing = set()
    assert delete_groups(context, "g", "nobody") == {
        "g": ErrorCode.none, "nobody": ErrorCode.group_id_not_found}
    assert "g" not in shard.groups
    assert persister.deleted[1:] == [("g", ORDERS, 0), ("g", ORDERS, 1)], "retried, all"
    assert forgotten == ["g", "g"]
