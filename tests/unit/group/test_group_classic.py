"""The classic group protocol and offsets, on one coordinator shard driven by a manual clock."""

from __future__ import annotations

import random
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.group import classic
from odradek.group.classic_state import ClassicState
from odradek.group.consumer_handlers import HeartbeatRequest
from odradek.group.coordinator import CommitPartition, GroupCoordinatorShard, OffsetCommitRequest
from odradek.group.model import GroupConfig, TopicInfo
from odradek.group.record_codec import decode_record, encode_record
from odradek.group.records import GroupMetadataKey
from tests.unit.classic_harness import (
    DELAY,
    REBALANCE,
    SESSION,
    TOPICS,
    Harness,
    joined_pair,
    settle,
    stable_group,
)


def test_first_join_requires_a_member_id_then_waits_for_the_initial_delay() -> None:
    h = Harness()
    member_id = h.member()
    assert member_id.startswith("client-")
    token = h.join(member_id)
    assert token not in h.responses
    h.advance(DELAY - 1)
    assert token not in h.responses
    h.advance(1)
    response = h.responses[token]
    assert response["error_code"] == ErrorCode.none
    assert response["generation_id"] == 1
    assert response["leader"] == member_id
    assert [m["member_id"] for m in response["members"]] == [member_id]
    assert h.group().state == ClassicState.COMPLETING_REBALANCE


def test_old_join_versions_get_a_member_id_at_once() -> None:
    h = Harness()
    token = h.join(version=3)
    h.advance(DELAY)
    assert h.responses[token]["error_code"] == ErrorCode.none
    assert h.responses[token]["member_id"].startswith("client-")


def test_initial_delay_extends_while_members_arrive_up_to_the_rebalance_timeout() -> None:
    h = Harness()
    first = h.join(h.member())
    h.advance(DELAY - 100)
    second = h.join(h.member())
    h.advance(100)
    assert first not in h.responses, "a member arrived during the delay: wait again"
    h.advance(DELAY)
    assert h.responses[first]["generation_id"] == 1
    assert h.responses[second]["generation_id"] == 1
    leader = [h.responses[t] for t in (first, second) if h.responses[t]["members"]]
    assert len(leader) == 1 and len(leader[0]["members"]) == 2


def test_followers_sync_waits_for_the_leaders_assignment() -> None:
    h = Harness()
    leader, follower = joined_pair(h)
    waiting = h.sync(follower, 1)
    assert waiting not in h.responses
    h.sync(leader, 1, ((leader, b"L"), (follower, b"F")))
    assert h.responses[waiting]["assignment"] == b"F"
    assert h.group().state == ClassicState.STABLE
    assert h.records and h.records[-1][1] is not None
    members = {m.member_id: m.assignment for m in h.records[-1][1].members}  # type: ignore[union-attr]
    assert members == {leader: b"L", follower: b"F"}


def test_protocol_is_chosen_by_vote_among_protocols_all_support() -> None:
    h = Harness()
    a = h.member(protocols=(("roundrobin", b""), ("range", b"")))
    b = h.member(protocols=(("range", b""), ("roundrobin", b"")))
    c = h.member(protocols=(("range", b""), ("sticky", b"")))
    tokens = [h.join(a, protocols=(("roundrobin", b""), ("range", b""))),
              h.join(b, protocols=(("range", b""), ("roundrobin", b""))),
              h.join(c, protocols=(("range", b""), ("sticky", b"")))]
    settle(h)
    assert {h.responses[t]["protocol_name"] for t in tokens} == {"range"}


def test_heartbeat_generation_and_member_fencing() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    assert h.heartbeat(leader, 1) == ErrorCode.none
    assert h.heartbeat(leader, 0) == ErrorCode.illegal_generation
    assert h.heartbeat("nobody", 1) == ErrorCode.unknown_member_id
    assert h.heartbeat(leader, 1, instance="no-such-pod") == ErrorCode.unknown_member_id
    newcomer = h.join(h.member())
    assert h.group().state == ClassicState.PREPARING_REBALANCE
    assert h.heartbeat(follower, 1) == ErrorCode.rebalance_in_progress
    assert newcomer not in h.responses


def test_rebalance_completes_when_every_member_rejoined() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    newcomer = h.join(h.member())
    rejoins = [h.join(leader), h.join(follower)]
    assert all(t in h.responses for t in [newcomer, *rejoins]), "no wait once all rejoined"
    assert {h.responses[t]["generation_id"] for t in [newcomer, *rejoins]} == {2}


def test_members_that_do_not_rejoin_are_dropped_at_the_rebalance_timeout() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    rejoin = h.join(leader, session=REBALANCE * 2)
    for _ in range(REBALANCE // 1000 - 1):
        h.advance(1000)
        assert h.heartbeat(follower, 1) == ErrorCode.rebalance_in_progress
    assert rejoin not in h.responses, "the follower is alive: wait for it to rejoin"
    h.advance(1000)
    assert h.responses[rejoin]["generation_id"] == 2
    assert list(h.group().members) == [leader]
    assert h.heartbeat(follower, 2) == ErrorCode.unknown_member_id


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    for _ in range(3):
        h.advance(SESSION // 2)
        assert h.heartbeat(leader, 1) in (ErrorCode.none, ErrorCode.rebalance_in_progress)
    assert follower not in h.group().members
    assert h.group().state == ClassicState.PREPARING_REBALANCE
    token = h.join(leader)
    assert h.responses[token]["generation_id"] == 2


def test_sync_timeout_drops_members_that_never_synced() -> None:
    h = Harness()
    leader, follower = joined_pair(h)
    waiting = h.sync(follower, 1)
    h.advance(REBALANCE)
    assert h.responses[waiting]["error_code"] == ErrorCode.rebalance_in_progress
    assert leader not in h.group().members


def test_leave_group_in_a_batch_and_unknown_members() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    errors, out = h.shard.leave_group("g", [(follower, None), ("ghost", None)], h.now)
    assert errors == [ErrorCode.none, ErrorCode.unknown_member_id]
    assert h.group().state == ClassicState.PREPARING_REBALANCE
    token = h.join(leader)
    assert h.responses[token]["generation_id"] == 2
    assert [m["member_id"] for m in h.responses[token]["members"]] == [leader]


def test_last_member_leaving_empties_the_group_and_persists_it() -> None:
    h = Harness()
    (leader,) = stable_group(h, 1)
    h.leave(leader)
    assert h.group().state == ClassicState.EMPTY
    value = h.records[-1][1]
    assert value is not None and value.members == ()  # type: ignore[union-attr]


def test_static_member_rejoining_keeps_its_assignment_without_a_rebalance() -> None:
    h = Harness()
    ids = [h.member(), h.member()]
    static_token = h.join("", instance="pod-1")
    tokens = [h.join(m) for m in ids] + [static_token]
    settle(h)
    static_id = h.responses[static_token]["member_id"]
    leader = h.responses[tokens[0]]["leader"]
    everyone = [*ids, static_id]
    for m in everyone:
        if m != leader:
            h.sync(m, 1, instance="pod-1" if m == static_id else None)
    h.sync(leader, 1, tuple((m, m.encode()) for m in everyone),
           instance="pod-1" if leader == static_id else None)
    assert h.group().state == ClassicState.STABLE
    rejoin = h.join("", instance="pod-1")
    response = h.responses[rejoin]
    new_id = response["member_id"]
    assert response["error_code"] == ErrorCode.none
    assert new_id != static_id
    assert response["generation_id"] == 1, "no new generation"
    assert h.group().state == ClassicState.STABLE
    sync = h.sync(new_id, 1, instance="pod-1")
    assert h.responses[sync]["assignment"] == static_id.encode()
    assert h.heartbeat(static_id, 1, instance="pod-1") == ErrorCode.fenced_instance_id
    assert h.heartbeat(new_id, 1, instance="pod-1") == ErrorCode.none


def test_invalid_session_timeout_and_group_id() -> None:
    h = Harness()
    token = h.join(session=1)
    assert h.responses[token]["error_code"] == ErrorCode.invalid_session_timeout
    token = h.join(group="")
    assert h.responses[token]["error_code"] == ErrorCode.invalid_group_id


def test_group_max_size() -> None:
    h = Harness(max_size=1)
    h.join(h.member())
    token = h.join()
    assert h.responses[token]["error_code"] == ErrorCode.group_max_size_reached


def test_inconsistent_protocols_are_refused() -> None:
    h = Harness()
    stable_group(h, 1)
    token = h.join(protocols=(("roundrobin", b""),))
    assert h.responses[token]["error_code"] == ErrorCode.inconsistent_group_protocol


def test_offset_commit_generation_rules() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    assert h.commit(leader, 1, 10) == ErrorCode.none
    assert h.commit(leader, 0, 11) == ErrorCode.illegal_generation
    assert h.commit("ghost", 1, 11) == ErrorCode.unknown_member_id
    assert h.commit("", -1, 11) == ErrorCode.unknown_member_id, "no simple commit when active"
    assert h.commit(leader, 1, 12, metadata="x" * 4097) == ErrorCode.offset_metadata_too_large
    (fetched,) = h.shard.fetch_offsets("g", {"t": [0]})
    assert fetched.offset == 10


def test_commit_during_completing_rebalance_is_refused() -> None:
    h = Harness()
    member = h.member()
    h.join(member)
    h.advance(DELAY)
    assert h.commit(member, 1, 5) == ErrorCode.rebalance_in_progress


def test_simple_commits_create_a_standalone_group() -> None:
    h = Harness()
    assert h.commit("", -1, 42) == ErrorCode.none
    listing = h.shard.list_groups()
    assert [(g.group_id, g.state, g.protocol_type) for g in listing] == [("g", "Empty", "")]
    assert [o.offset for o in h.shard.fetch_offsets("g", None)] == [42]
    missing = h.shard.fetch_offsets("g", {"t": [1]})
    assert [(o.partition, o.offset) for o in missing] == [(1, -1)]


def test_commit_to_a_missing_group_with_a_generation() -> None:
    h = Harness()
    request = OffsetCommitRequest("nope", 3, "m", None, (CommitPartition("t", 0, 1, -1, ""),), 8)
    errors, _ = h.shard.commit_offsets(request, h.now)
    assert errors[("t", 0)] == ErrorCode.illegal_generation
    request = OffsetCommitRequest("nope", 3, "m", None, (CommitPartition("t", 0, 1, -1, ""),), 9)
    errors, _ = h.shard.commit_offsets(request, h.now)
    assert errors[("t", 0)] == ErrorCode.group_id_not_found


def test_delete_group_refuses_active_groups_and_tombstones_offsets() -> None:
    h = Harness()
    (leader,) = stable_group(h, 1)
    h.commit(leader, 1, 7)
    code, _ = h.shard.delete_group("g", h.now)
    assert code == ErrorCode.non_empty_group
    h.leave(leader)
    code, out = h.shard.delete_group("g", h.now)
    assert code == ErrorCode.none
    assert {type(k).__name__ for k, v in out.records if v is None} == {
        "OffsetCommitKey", "GroupMetadataKey"}
    assert "g" not in h.shard.groups
    assert h.shard.fetch_offsets("g", {"t": [0]})[0].offset == -1
    assert h.shard.delete_group("g", h.now)[0] == ErrorCode.group_id_not_found


def test_offset_delete_refuses_subscribed_topics() -> None:
    h = Harness()
    member = h.member()
    h.join(member)
    h.advance(DELAY)
    h.sync(member, 1, ((member, b""),))
    h.commit(member, 1, 3)
    (code, errors), _ = h.shard.delete_offsets("g", [("t", 0), ("other", 0)])
    assert code == ErrorCode.none
    assert errors == {("t", 0): ErrorCode.group_subscribed_to_topic, ("other", 0): ErrorCode.none}
    (code, _), _ = h.shard.delete_offsets("missing", [("t", 0)])
    assert code == ErrorCode.group_id_not_found


def test_offsets_expire_after_retention_once_the_group_is_empty() -> None:
    retention = 60_000
    h = Harness(offsets_retention_ms=retention)
    (leader,) = stable_group(h, 1)
    h.commit(leader, 1, 9)
    for _ in range(retention // 5000 + 1):
        h.advance(5000)
        assert h.heartbeat(leader, 1) == ErrorCode.none
    h._take(h.shard.expire_offsets(h.now))
    assert h.shard.fetch_offsets("g", {"t": [0]})[0].offset == 9, "active groups keep offsets"
    h.leave(leader)
    h._take(h.shard.expire_offsets(h.now + retention - 1))
    assert h.shard.fetch_offsets("g", {"t": [0]})[0].offset == 9
    h._take(h.shard.expire_offsets(h.now + retention))
    assert h.shard.fetch_offsets("g", {"t": [0]})[0].offset == -1
    assert "g" not in h.shard.groups, "an empty group without offsets is deleted"


def test_v2_to_v4_retention_time_sets_an_expiry() -> None:
    h = Harness()
    request = OffsetCommitRequest("g", -1, "", None, (CommitPartition("t", 0, 4, -1, ""),), 4,
                                  retention_ms=1000)
    h._take(h.shard.commit_offsets(request, h.now)[1])
    assert h.shard.offsets["g"][("t", 0)].expire_timestamp == h.now + 1000
    h._take(h.shard.expire_offsets(h.now + 999))
    assert h.shard.fetch_offsets("g", {"t": [0]})[0].offset == 4
    h._take(h.shard.expire_offsets(h.now + 1000))
    assert h.shard.fetch_offsets("g", {"t": [0]})[0].offset == -1
    assert "g" not in h.shard.groups


def test_replaying_the_records_rebuilds_the_durable_state() -> None:
    h = Harness()
    leader, follower = stable_group(h, 2)
    h.commit(leader, 1, 5)
    h.commit(follower, 1, 8, metadata="meta", partition=1)
    h.commit(leader, 1, 6)
    replayed = GroupCoordinatorShard(GroupConfig(), TOPICS, random.Random(1))
    for key, value in h.records:
        replayed.replay(*decode_record(*encode_record(key, value)))
    assert replayed.offsets == h.shard.offsets
    group = replayed.groups["g"]
    assert isinstance(group, classic.ClassicGroup)
    assert group.record() == h.group().record()
    assert group.state == ClassicState.STABLE
    replayed.loaded(h.now)
    assert replayed.heartbeat("g", leader, None, 1, h.now) == ErrorCode.none


def consumer_join(h: Harness, member_id: str = "m-1", epoch: int = 0,
                  topics: tuple[str, ...] | None = ("t",)) -> Any:
    request = HeartbeatRequest("g", member_id, epoch, None, None, 30_000, topics, None, None,
                               () if epoch == 0 else None, "client", "/127.0.0.1", 1)
    response, out = h.shard.consumer_heartbeat(request, h.now)
    h._take(out)
    return response


def test_an_empty_classic_group_becomes_a_consumer_group_and_its_timers_are_dropped() -> None:
    h = Harness()
    h.member()  # MEMBER_ID_REQUIRED arms a pending-member timer
    assert consumer_join(h).error_code == ErrorCode.none
    assert h.shard.groups["g"].__class__.__name__ == "ConsumerGroup"
    h.advance(SESSION * 2)  # the classic timer must not reach the consumer group


def test_a_failed_conversion_writes_nothing() -> None:
    h = Harness()
    h.commit("", -1, 3)
    before = len(h.records)
    assert consumer_join(h, topics=None).error_code == ErrorCode.invalid_request
    assert len(h.records) == before
    assert isinstance(h.shard.groups["g"], classic.ClassicGroup)


def test_a_second_sync_answers_the_first() -> None:
    h = Harness()
    leader, follower = joined_pair(h)
    first = h.sync(follower, 1)
    second = h.sync(follower, 1)
    assert h.responses[first]["error_code"] == ErrorCode.rebalance_in_progress
    h.sync(leader, 1, ((leader, b"L"), (follower, b"F")))
    assert h.responses[second]["assignment"] == b"F"


def test_a_member_parked_in_sync_outlives_its_session_timeout() -> None:
    h = Harness()
    leader, follower = joined_pair(h)
    waiting = h.sync(follower, 1)
    for _ in range(3):
        h.advance(SESSION // 2)
        h.heartbeat(leader, 1)
    assert waiting not in h.responses and follower in h.group().members
    h.sync(leader, 1, ((leader, b"L"), (follower, b"F")))
    assert h.responses[waiting]["assignment"] == b"F"


def test_static_members_that_do_not_rejoin_stay_in_the_group() -> None:
    h = Harness()
    static = h.join("", instance="pod-1")
    dynamic = h.member()
    h.join(dynamic)
    settle(h)
    static_id = h.responses[static]["member_id"]
    h.sync(static_id, 1, instance="pod-1")
    h.sync(dynamic, 1, ((static_id, b"S"), (dynamic, b"D")))
    h.responses.clear()
    newcomer = h.join(h.member())
    rejoin = h.join(dynamic)
    for _ in range(REBALANCE // 5000):
        h.advance(5000)
        h.heartbeat(static_id, 1, instance="pod-1")
    assert h.responses[rejoin]["generation_id"] == 2
    assert h.responses[newcomer]["generation_id"] == 2
    assert static_id in h.group().members, "a static member may be restarting"


def test_offset_commit_checks_the_member_before_the_rebalance() -> None:
    h = Harness()
    member = h.member()
    h.join(member)
    settle(h)
    assert h.group().state == ClassicState.COMPLETING_REBALANCE
    assert h.commit("ghost", 1, 5) == ErrorCode.unknown_member_id
    assert h.commit(member, 0, 5) == ErrorCode.illegal_generation
    assert h.commit(member, 1, 5) == ErrorCode.rebalance_in_progress


def test_a_static_leader_rejoining_before_v9_is_not_told_to_assign() -> None:
    h = Harness()
    token = h.join("", instance="pod-1")
    settle(h)
    leader = h.responses[token]["member_id"]
    h.sync(leader, 1, ((leader, b"L"),), instance="pod-1")
    rejoin = h.join("", instance="pod-1", version=8)
    response = h.responses[rejoin]
    assert response["member_id"] != leader
    assert response["leader"] == leader and response["members"] == []
    assert h.group().leader_id == response["member_id"]


def test_empty_groups_without_offsets_are_cleaned_up() -> None:
    h = Harness()
    (leader,) = stable_group(h, 1)
    h.leave(leader)
    h._take(h.shard.expire_offsets(h.now))
    assert "g" not in h.shard.groups
    assert h.records[-1] == (GroupMetadataKey("g"), None)


def test_timers_fire_in_deadline_order_and_honour_replacement_and_cancellation() -> None:
    from odradek.group.model import Timers

    timers = Timers()
    for i in range(200):
        timers.schedule(("k", str(i)), 1000 + i)
        timers.schedule(("k", str(i)), 2000 - i)  # replaced: only the last deadline counts
    timers.cancel(("k", "0"))
    assert timers.next_deadline() == 1801
    assert timers.pop_expired(1800) == []
    due = timers.pop_expired(1899)
    assert due == [("k", str(i)) for i in range(199, 100, -1)]
    assert timers.next_deadline() == 1900
    assert ("k", "0") not in timers and timers.pop_expired(5000)[-1] == ("k", "1")
    assert timers.next_deadline() is None


def test_new_topics_move_subscribed_consumer_groups_to_a_new_epoch() -> None:
    h = Harness()
    consumer_join(h, topics=("t", "later"))
    group = h.shard.groups["g"]
    epoch = group.group_epoch  # type: ignore[union-attr]
    assert h.shard.refresh_topics(h.now).records == [], "nothing changed"
    h.topics.topics = {**h.topics.topics,
                       "later": TopicInfo("00000000-0000-4000-8000-000000000002", "later", 2)}
    out = h.shard.refresh_topics(h.now)
    assert out.records
    assert group.group_epoch == epoch + 1  # type: ignore[union-attr]


def test_a_bad_join_leaves_an_empty_consumer_group_alone() -> None:
    h = Harness()
    response = consumer_join(h)
    _, out = h.shard.consumer_heartbeat(HeartbeatRequest(
        "g", response.member_id, -1, None, None, 30_000, None, None, None, None, "client",
        "/127.0.0.1", 1), h.now)
    h._take(out)
    assert h.shard.groups["g"].is_empty()
    written = len(h.records)
    token = h.join(session=1)
    assert h.responses[token]["error_code"] == ErrorCode.invalid_session_timeout
    assert len(h.records) == written
    assert h.shard.groups["g"].__class__.__name__ == "ConsumerGroup"
    token = h.join()
    assert h.responses[token]["error_code"] == ErrorCode.member_id_required
    assert isinstance(h.shard.groups["g"], classic.ClassicGroup)


def test_transactional_offsets_apply_on_commit_and_vanish_on_abort() -> None:
    h = Harness()
    h.commit("", -1, 5)
    request = OffsetCommitRequest("g", -1, "", None, (CommitPartition("t", 0, 9, -1, ""),), 8)
    errors, out = h.shard.commit_transactional_offsets(request, 77, 3, h.now)
    assert errors[("t", 0)] == ErrorCode.none and out.transaction == (77, 3)
    assert [o.offset for o in h.shard.fetch_offsets("g", {"t": [0]})] == [5]
    assert h.shard.has_pending_offsets("g", [("t", 0)])
    h.shard.complete_transaction(77, commit=False)
    assert not h.shard.has_pending_offsets("g", [("t", 0)])
    assert [o.offset for o in h.shard.fetch_offsets("g", {"t": [0]})] == [5]
    reloaded = Harness()
    for key, value in out.records:
        reloaded.shard.replay_transactional(77, key, value)
    reloaded.shard.complete_transaction(77, commit=True)
    assert [o.offset for o in reloaded.shard.fetch_offsets("g", {"t": [0]})] == [9]
