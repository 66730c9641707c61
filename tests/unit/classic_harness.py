"""A classic-group coordinator shard on a manual clock, for the unit tests: it records the
records written and the responses released, and fails on a request answered twice."""

from __future__ import annotations

import random
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group import classic
from odradek.group.classic import JoinRequest, Output, SyncRequest
from odradek.group.classic_state import ClassicState
from odradek.group.coordinator import CommitPartition, GroupCoordinatorShard, OffsetCommitRequest
from odradek.group.model import GroupConfig, StaticTopics, TopicInfo
from odradek.group.records import Record

SESSION = 10_000
REBALANCE = 30_000
DELAY = 3_000
SUBSCRIBE_T = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
"""A ConsumerProtocolSubscription v0 to topic t, without user data."""
TOPICS = StaticTopics({"t": TopicInfo("00000000-0000-4000-8000-000000000001", "t", 6)})


class Harness:
    """A shard, a clock, the records it wrote and the responses it released."""

    def __init__(self, **config: Any) -> None:
        self.topics = StaticTopics(dict(TOPICS.topics))
        self.shard = GroupCoordinatorShard(GroupConfig(**config), self.topics, random.Random(7))
        self.now = 1_000_000
        self.records: list[Record] = []
        self.responses: dict[int, Any] = {}
        self._tokens = 0

    def _take(self, out: Output) -> None:
        self.records.extend(out.records)
        for token, response in out.responses:
            assert token not in self.responses, "a request was answered twice"
            self.responses[token] = response

    def join(self, member_id: str = "", instance: str | None = None, version: int = 9,
             protocols: tuple[tuple[str, bytes], ...] = (("range", SUBSCRIBE_T),),
             group: str = "g", session: int = SESSION) -> int:
        self._tokens += 1
        request = JoinRequest(group, member_id, instance, session, REBALANCE, "consumer",
                              protocols, "client", "/127.0.0.1", version)
        self._take(self.shard.join_group(self._tokens, request, self.now))
        return self._tokens

    def sync(self, member_id: str, generation: int,
             assignments: tuple[tuple[str, bytes], ...] = (), group: str = "g",
             instance: str | None = None) -> int:
        self._tokens += 1
        request = SyncRequest(group, generation, member_id, instance, "consumer", None,
                              assignments)
        self._take(self.shard.sync_group(self._tokens, request, self.now))
        return self._tokens

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> ErrorCode:
        return self.shard.heartbeat("g", member_id, instance, generation, self.now)

    def leave(self, member_id: str) -> None:
        errors, out = self.shard.leave_group("g", [(member_id, None)], self.now)
        assert errors == [ErrorCode.none]
        self._take(out)

    def advance(self, ms: int) -> None:
        self.now += ms
        self._take(self.shard.tick(self.now))

    def commit(self, member_id: str, generation: int, offset: int, metadata: str = "",
               partition: int = 0) -> ErrorCode:
        request = OffsetCommitRequest(
            "g", generation, member_id, None,
            (CommitPartition("t", partition, offset, -1, metadata),), 9)
        errors, out = self.shard.commit_offsets(request, self.now)
        self._take(out)
        return errors[("t", partition)]

    def member(self, version: int = 9, **kwargs: Any) -> str:
        """Join as a new member through MEMBER_ID_REQUIRED; returns the member id."""
        token = self.join(version=version, **kwargs)
        response = self.responses.pop(token)
        assert response["error_code"] == ErrorCode.member_id_required
        return str(response["member_id"])

    def group(self) -> classic.ClassicGroup:
        group = self.shard.groups["g"]
        assert isinstance(group, classic.ClassicGroup)
        return group


def settle(h: Harness) -> None:
    """Pass the initial delay, which starts again once when members joined during it."""
    h.advance(DELAY)
    h.advance(DELAY)


def joined_pair(h: Harness) -> tuple[str, str]:
    """Two members through the join phase of generation 1: (leader, follower)."""
    ids = [h.member(), h.member()]
    tokens = [h.join(m) for m in ids]
    settle(h)
    leader = h.responses[tokens[0]]["leader"]
    return leader, next(m for m in ids if m != leader)


def stable_group(h: Harness, members: int) -> list[str]:
    """Bring `members` members to a stable generation 1; returns their ids, leader first."""
    ids = [h.member() for _ in range(members)]
    tokens = [h.join(member_id) for member_id in ids]
    settle(h)
    joined = [h.responses.pop(token) for token in tokens]
    assert all(r["generation_id"] == 1 for r in joined)
    leader = joined[0]["leader"]
    syncs = [h.sync(m, 1) for m in ids if m != leader]
    h.sync(leader, 1, tuple((m, m.encode()) for m in ids))
    for token in syncs:
        assert h.responses.pop(token)["error_code"] == ErrorCode.none
    assert h.group().state == ClassicState.STABLE
    return [leader] + [m for m in ids if m != leader]
