"""Random classic-group runs: members join, rejoin, sync, heartbeat, commit, leave and go
silent in any order while the clock jumps. Whatever happens, no request is answered twice,
every parked JoinGroup and SyncGroup is answered once the clients go quiet, generations
never go back, and the records written replay to the group the shard holds."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.group import classic
from odradek.group.coordinator import GroupCoordinatorShard
from odradek.group.model import GroupConfig
from odradek.group.record_codec import decode_record, encode_record
from tests.unit.classic_harness import REBALANCE, SESSION, TOPICS, Harness

CLIENTS = 4
Action = tuple[str, int, int]

actions = st.lists(
    st.tuples(
        st.sampled_from(["join", "join_static", "sync", "heartbeat", "commit", "leave",
                         "advance"]),
        st.integers(0, CLIENTS - 1),
        st.integers(0, REBALANCE + SESSION),
    ),
    max_size=60,
)


class Client:
    """What one consumer knows: its member id, generation and whether it leads."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.members: list[str] = []


def learn(client: Client, answer: dict[str, object]) -> None:
    """What a JoinGroup answer tells its client."""
    member_id = answer["member_id"]
    if isinstance(member_id, str) and member_id:
        client.member_id = member_id
    if answer["error_code"] == ErrorCode.none:
        client.generation = int(answer["generation_id"])  # type: ignore[call-overload]
        client.leader = answer["leader"] == client.member_id
        client.members = [m["member_id"] for m in answer["members"]]  # type: ignore[attr-defined]


def play(h: Harness, client: Client, action: str, joins: dict[int, Client]) -> None:
    """Send one request as the client would; `joins` remembers whose JoinGroup is whose."""
    instance = f"pod-{client.index}" if action == "join_static" else None
    if action in ("join", "join_static"):
        joins[h.join(client.member_id if instance is None else "", instance=instance)] = client
    elif action == "sync":
        assignments = tuple((m, m.encode()) for m in client.members) if client.leader else ()
        h.sync(client.member_id, client.generation, assignments)
    elif action == "heartbeat":
        h.heartbeat(client.member_id, client.generation)
    elif action == "commit":
        h.commit(client.member_id, client.generation, 1)
    elif action == "leave":
        _, out = h.shard.leave_group("g", [(client.member_id, None)], h.now)
        h._take(out)


@settings(max_examples=300, deadline=None)
@given(actions)
def test_random_classic_runs_keep_the_protocols_promises(run: list[Action]) -> None:
    h = Harness()
    clients = [Client(i) for i in range(CLIENTS)]
    generation = 0
    joins: dict[int, Client] = {}
    for action, index, amount in run:
        if action == "advance":
            h.advance(amount)
        else:
            play(h, clients[index], action, joins)
        for token in [t for t in joins if t in h.responses]:
            learn(joins.pop(token), h.responses[token])
        group = h.shard.groups.get("g")
        if isinstance(group, classic.ClassicGroup):
            assert group.generation >= generation, "generations never go back"
            generation = group.generation
            assert group.leader_id is None or group.leader_id in group.members
            assert group.state in (classic.EMPTY, classic.PREPARING_REBALANCE,
                                   classic.COMPLETING_REBALANCE, classic.STABLE)

    for _ in range(8):  # the clients go quiet: timers settle every parked request
        h.advance(REBALANCE + SESSION)
    asked = set(range(1, h._tokens + 1))
    assert asked == set(h.responses), f"unanswered requests: {sorted(asked - set(h.responses))}"

    group = h.shard.groups.get("g")
    replayed = GroupCoordinatorShard(GroupConfig(), TOPICS, random.Random(0))
    for key, value in h.records:
        replayed.replay(*decode_record(*encode_record(key, value)))
    assert replayed.offsets == h.shard.offsets
    if isinstance(group, classic.ClassicGroup) and group.state in (classic.EMPTY,
                                                                   classic.STABLE):
        again = replayed.groups.get("g")
        if group.generation > 0:
            assert isinstance(again, classic.ClassicGroup)
            assert again.record() == group.record()
