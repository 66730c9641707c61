"""Random classic-group runs: members join, rejoin, sync, heartbeat, commit, leave and go
silent in any order while the clock jumps. Whatever happens, no request is answered twice,
every parked JoinGroup and SyncGroup is answered once the clients go quiet, generations
never go back, and the records written replay to the group the shard holds."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.group import classic
from odradek.group.classic_state import TRANSITIONS, ClassicState
from odradek.group.coordinator import GroupCoordinatorShard
from odradek.group.model import GroupConfig
from odradek.group.record_codec import decode_record, encode_record
from tests.unit.classic_harness import REBALANCE, SESSION, TOPICS, Harness

CLIENTS = 4
Action = tuple[str, int, int]

ACTIONS = ("join", "join_static", "sync", "heartbeat", "commit", "leave", "advance")
MAX_ACTIONS = 60
actions = st.lists(
    st.tuples(
        st.sampled_from(ACTIONS),
        st.integers(0, CLIENTS - 1),
        st.integers(0, REBALANCE + SESSION),
    ),
    max_size=MAX_ACTIONS,
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


def step(h: Harness, clients: list[Client], joins: dict[int, Client], action: Action) -> None:
    """Play one action of a run and let the clients learn from the answers it released."""
    name, index, amount = action
    if name == "advance":
        h.advance(amount)
    else:
        play(h, clients[index], name, joins)
    for token in [t for t in joins if t in h.responses]:
        learn(joins.pop(token), h.responses[token])


def settle(h: Harness) -> None:
    """The clients go quiet: timers settle every parked request."""
    for _ in range(8):
        h.advance(REBALANCE + SESSION)


@settings(max_examples=300, deadline=None)
@given(actions)
def test_random_classic_runs_keep_the_protocols_promises(run: list[Action]) -> None:
    h = Harness()
    clients = [Client(i) for i in range(CLIENTS)]
    generation = 0
    joins: dict[int, Client] = {}
    for action in run:
        step(h, clients, joins, action)
        group = h.shard.groups.get("g")
        if isinstance(group, classic.ClassicGroup):
            assert group.generation >= generation, "generations never go back"
            generation = group.generation
            assert group.leader_id is None or group.leader_id in group.members
            assert group.state in (ClassicState.EMPTY, ClassicState.PREPARING_REBALANCE,
                                   ClassicState.COMPLETING_REBALANCE, ClassicState.STABLE)

    settle(h)
    asked = set(range(1, h._tokens + 1))
    assert asked == set(h.responses), f"unanswered requests: {sorted(asked - set(h.responses))}"

    group = h.shard.groups.get("g")
    replayed = GroupCoordinatorShard(GroupConfig(), TOPICS, random.Random(0))
    for key, value in h.records:
        replayed.replay(*decode_record(*encode_record(key, value)))
    assert replayed.offsets == h.shard.offsets
    if isinstance(group, classic.ClassicGroup) and group.state in (ClassicState.EMPTY,
                                                                   ClassicState.STABLE):
        again = replayed.groups.get("g")
        if group.generation > 0:
            assert isinstance(again, classic.ClassicGroup)
            assert again.record() == group.record()


def test_every_transition_random_runs_make_is_in_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seeded random runs, each ended by deleting the group, record every state change
    `ClassicGroup.transition` makes (whatever it checks); each is in the table, and the
    runs reach every transition the table allows short of the Dead state's."""
    made: set[tuple[ClassicState, ClassicState]] = set()
    transition = classic.ClassicGroup.transition

    def recording(group: classic.ClassicGroup, state: ClassicState, now_ms: int) -> None:
        before = group.state
        transition(group, state, now_ms)
        made.add((before, group.state))

    monkeypatch.setattr(classic.ClassicGroup, "transition", recording)
    rng = random.Random(15)
    for _ in range(200):
        h = Harness()
        clients = [Client(i) for i in range(CLIENTS)]
        joins: dict[int, Client] = {}
        for _ in range(rng.randint(0, MAX_ACTIONS)):
            step(h, clients, joins, (rng.choice(ACTIONS), rng.randrange(CLIENTS),
                                     rng.randint(0, REBALANCE + SESSION)))
        settle(h)
        if isinstance(h.shard.groups.get("g"), classic.ClassicGroup):
            h._take(h.shard.delete_group("g", h.now)[1])
    legal = {(state, new) for state, targets in TRANSITIONS.items() for new in targets}
    assert made <= legal, f"transitions the table does not allow: {made - legal}"
    short_of_dead = {(state, new) for state, new in legal if ClassicState.DEAD not in (state, new)}
    assert short_of_dead <= made, f"never made: {short_of_dead - made}"
    assert (ClassicState.EMPTY, ClassicState.DEAD) in made
