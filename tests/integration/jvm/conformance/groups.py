"""Scenarios of consumer groups: the classic protocol (FindCoordinator, JoinGroup,
SyncGroup, Heartbeat, LeaveGroup), offsets, descriptions and deletion, KIP-848's
ConsumerGroupHeartbeat, and KIP-932's share group membership."""

from __future__ import annotations

from typing import Any

from tests.integration.jvm.conformance.scenario import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    OFFSET_COMMIT,
    OFFSET_DELETE,
    OFFSET_FETCH,
    SHARE_GROUP_DESCRIBE,
    SHARE_GROUP_HEARTBEAT,
    SYNC_GROUP,
    Scenario,
    create_topic,
    find_coordinator,
)
from tests.integration.jvm.conformance.steps import Name, Ref, Step

MEMBER, GENERATION = Ref("joined", "member_id"), Ref("joined", "generation_id")


def join(member: Any = "", name: str = "", version: int | None = None) -> Step:
    return Step(JOIN_GROUP, {"group_id": Name("g"), "session_timeout": 30_000,
                             "rebalance_timeout": 30_000, "member_id": member,
                             "group_instance_id": None, "protocol_type": "consumer",
                             "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
                             "reason": None}, version=version, name=name)


def sync(generation: Any = GENERATION, member: Any = MEMBER, version: int | None = None
         ) -> Step:
    return Step(SYNC_GROUP, {"group_id": Name("g"), "generation_id": generation,
                             "member_id": member, "group_instance_id": None,
                             "protocol_type": "consumer", "protocol_name": "range",
                             "assignments": [{"member_id": member, "assignment": b"\x00\x02"}]},
                version=version)


def share_heartbeat(member: str, epoch: Any, topics: list[str] | None, group: str = "sg",
                    name: str = "") -> Step:
    return Step(SHARE_GROUP_HEARTBEAT, {
        "group_id": Name(group), "member_id": member, "member_epoch": epoch, "rack_id": None,
        "subscribed_topic_names": None if topics is None else [Name(t) for t in topics]},
        name=name)


def heartbeat(generation: Any = GENERATION, member: Any = MEMBER, version: int | None = None
              ) -> Step:
    return Step(HEARTBEAT, {"group_id": Name("g"), "generation_id": generation,
                            "member_id": member, "group_instance_id": None}, version=version)


def commit(generation: Any = GENERATION, member: Any = MEMBER, topic: str = "t",
           version: int | None = None, group: str = "g") -> Step:
    return Step(OFFSET_COMMIT, {
        "group_id": Name(group), "generation_id_or_member_epoch": generation, "member_id": member,
        "group_instance_id": None, "retention_time": -1, "topics": [{"name": Name(topic),
        "partitions": [{"partition_index": 0, "committed_offset": 5,
                        "committed_leader_epoch": -1, "committed_metadata": "meta"}]}]},
        version=version)


def fetch_offsets(group: str = "g", version: int | None = None) -> Step:
    topics = [{"name": Name("t"), "partition_indexes": [0, 1]}]
    return Step(OFFSET_FETCH, {"group_id": Name(group), "topics": topics, "require_stable": True,
                               "groups": [{"group_id": Name(group), "member_id": None,
                                           "member_epoch": -1, "topics": topics}]},
                version=version)


def describe(*groups: str, version: int | None = None) -> Step:
    return Step(DESCRIBE_GROUPS, {"groups": [Name(g) for g in groups],
                                  "include_authorized_operations": True}, version=version)


# each member id comes from the broker at hand: JoinGroup v4+ first answers
# MEMBER_ID_REQUIRED with one
FIRST_JOIN = join(name="first")
JOINED = join(Ref("first", "member_id"), name="joined")

SCENARIOS = [
    Scenario("find_coordinator", FIND_COORDINATOR, (
        find_coordinator("g", 0),
        Step(FIND_COORDINATOR, {"key": Name("g"), "key_type": 0, "coordinator_keys": [Name("g")]}),
        Step(FIND_COORDINATOR, {"key": Name("nope"), "key_type": 1,
                                "coordinator_keys": [Name("nope")]}),
        Step(FIND_COORDINATOR, {"key": "x", "key_type": 5, "coordinator_keys": ["x"]}),
    )),
    Scenario("join_group", JOIN_GROUP, (
        find_coordinator("g", 0),
        FIRST_JOIN, JOINED,
        join("unknown-member"),
        Step(JOIN_GROUP, {"group_id": Name("g"), "session_timeout": 1, "rebalance_timeout": 1,
                          "member_id": "", "protocol_type": "consumer", "protocols": [
                              {"name": "range", "metadata": b""}]}),
        Step(JOIN_GROUP, {"group_id": Name("g"), "session_timeout": 30_000,
                          "rebalance_timeout": 30_000, "member_id": "",
                          "protocol_type": "other", "protocols": [
                              {"name": "x", "metadata": b""}]}),
    )),
    Scenario("sync_group", SYNC_GROUP, (
        find_coordinator("g", 0),
        join(name="first", version=5), join(Ref("first", "member_id"), name="joined", version=5),
        sync(generation=99),
        sync(member="stranger"),
        sync(),
        sync(),
    )),
    Scenario("heartbeat", HEARTBEAT, (
        find_coordinator("g", 0),
        join(name="first", version=5), join(Ref("first", "member_id"), name="joined", version=5),
        heartbeat(),
        sync(version=3),
        heartbeat(),
        heartbeat(generation=42),
        heartbeat(member="stranger"),
        Step(HEARTBEAT, {"group_id": Name("none"), "generation_id": 1, "member_id": "m"}),
    )),
    Scenario("leave_group", LEAVE_GROUP, (
        find_coordinator("g", 0),
        join(name="first", version=5), join(Ref("first", "member_id"), name="joined", version=5),
        Step(LEAVE_GROUP, {"group_id": Name("g"), "member_id": "stranger", "members": [
            {"member_id": "stranger", "group_instance_id": None, "reason": None}]}),
        Step(LEAVE_GROUP, {"group_id": Name("g"), "member_id": MEMBER, "members": [
            {"member_id": MEMBER, "group_instance_id": None, "reason": "done"}]}),
        describe("g", version=5),
    )),
    Scenario("offset_commit", OFFSET_COMMIT, (
        *create_topic("t"),
        find_coordinator("g", 0),
        commit(generation=-1, member=""),
        commit(generation=-1, member="", topic="missing"),
        join(name="first", version=5), join(Ref("first", "member_id"), name="joined", version=5),
        sync(version=3),
        commit(),
        commit(generation=77),
        commit(member="stranger"),
        fetch_offsets(version=8),
    )),
    Scenario("offset_fetch", OFFSET_FETCH, (
        *create_topic("t"),
        find_coordinator("g", 0),
        commit(generation=-1, member="", version=8),
        fetch_offsets(),
        fetch_offsets(group="empty"),
    )),
    Scenario("describe_and_list_groups", DESCRIBE_GROUPS, (
        find_coordinator("g", 0),
        join(name="first", version=5), join(Ref("first", "member_id"), name="joined", version=5),
        sync(version=3),
        describe("g", "unknown"),
        Step(LIST_GROUPS, {"states_filter": ["Stable"], "types_filter": []}, version=4,
             compare=False),
    )),
    Scenario("list_groups", LIST_GROUPS, (
        Step(LIST_GROUPS, {"states_filter": ["NoSuchState"], "types_filter": []}),
        Step(LIST_GROUPS, {"states_filter": [], "types_filter": ["NoSuchType"]}),
    )),
    Scenario("delete_groups", DELETE_GROUPS, (
        find_coordinator("g", 0),
        find_coordinator("h", 0),
        commit(generation=-1, member="", topic="t", version=8, group="h"),
        join(name="first", version=5), join(Ref("first", "member_id"), name="joined", version=5),
        Step(DELETE_GROUPS, {"groups_names": [Name("g"), Name("h"), Name("missing")]}),
    )),
    Scenario("offset_delete", OFFSET_DELETE, (
        *create_topic("t"),
        find_coordinator("h", 0),
        commit(generation=-1, member="", version=8, group="h"),
        Step(OFFSET_DELETE, {"group_id": Name("h"), "topics": [
            {"name": Name("t"), "partitions": [{"partition_index": 0}, {"partition_index": 3}]},
            {"name": Name("missing"), "partitions": [{"partition_index": 0}]}]}),
        Step(OFFSET_DELETE, {"group_id": Name("missing"), "topics": [
            {"name": Name("t"), "partitions": [{"partition_index": 0}]}]}),
    )),
    Scenario("consumer_group_heartbeat", CONSUMER_GROUP_HEARTBEAT, (
        *create_topic("t", partitions=2),
        find_coordinator("cg", 0),
        Step(CONSUMER_GROUP_HEARTBEAT, {
            "group_id": Name("cg"), "member_id": "", "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 30_000, "subscribed_topic_names": [Name("t")],
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []},
            version=0, name="member"),
        Step(CONSUMER_GROUP_HEARTBEAT, {
            "group_id": Name("cg"), "member_id": "fixed-member-id-0123456789", "member_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout": 30_000,
            "subscribed_topic_names": [Name("t")], "subscribed_topic_regex": None,
            "server_assignor": "uniform", "topic_partitions": []}),
        Step(CONSUMER_GROUP_HEARTBEAT, {
            "group_id": Name("cg"), "member_id": Ref("member", "member_id"), "member_epoch": 9,
            "instance_id": None, "rack_id": None, "rebalance_timeout": -1,
            "subscribed_topic_names": None, "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": None}),
        Step(CONSUMER_GROUP_HEARTBEAT, {
            "group_id": Name("cg"), "member_id": "", "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 30_000, "subscribed_topic_names": [Name("t")],
            "subscribed_topic_regex": None, "server_assignor": "bogus",
            "topic_partitions": []}),
        Step(CONSUMER_GROUP_DESCRIBE, {"group_ids": [Name("cg"), Name("missing")],
                                       "include_authorized_operations": True}, version=0),
    )),
    Scenario("share_group_heartbeat", SHARE_GROUP_HEARTBEAT, (
        *create_topic("t", partitions=2),
        find_coordinator("sg", 0),
        share_heartbeat("", 0, ["t"]),
        share_heartbeat("share-member-a", 0, None),
        share_heartbeat("share-member-a", -2, None),
        # (until: Kafka answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS while the
        # group's shard is still loading)
        Step(SHARE_GROUP_HEARTBEAT, {"group_id": Name("sg"), "member_id": "share-member-a",
                                     "member_epoch": 3, "rack_id": None,
                                     "subscribed_topic_names": None},
             until=lambda tree: tree["error_code"] not in ("not_coordinator",
                                                           "coordinator_load_in_progress")),
        share_heartbeat("share-member-a", -1, None),
        share_heartbeat("share-member-a", 0, ["t"], name="a"),
        share_heartbeat("share-member-b", 0, ["t"], name="b"),
        share_heartbeat("share-member-a", Ref("a", "member_epoch"), None),
        share_heartbeat("share-member-a", 99, None),
        share_heartbeat("share-member-c", Ref("b", "member_epoch"), None),
        share_heartbeat("share-member-a", 0, ["t"]),
        Step(SHARE_GROUP_DESCRIBE, {"group_ids": [Name("sg"), Name("missing")],
                                    "include_authorized_operations": False}),
        Step(DELETE_GROUPS, {"groups_names": [Name("sg")]}, version=2),
        share_heartbeat("share-member-b", -1, None),
        share_heartbeat("share-member-a", -1, None),
        share_heartbeat("share-member-a", -1, None),
        Step(LIST_GROUPS, {"states_filter": [], "types_filter": ["share"]}, version=5,
             compare=False),
        Step(SHARE_GROUP_DESCRIBE, {"group_ids": [Name("sg")],
                                    "include_authorized_operations": False}),
        Step(DELETE_GROUPS, {"groups_names": [Name("sg")]}, version=2),
        Step(SHARE_GROUP_DESCRIBE, {"group_ids": [Name("sg")],
                                    "include_authorized_operations": False}),
    )),
    Scenario("share_group_types", SHARE_GROUP_DESCRIBE, (
        *create_topic("t"),
        find_coordinator("g", 0),
        find_coordinator("sg", 0),
        join(name="first", version=5),
        share_heartbeat("share-member-a", 0, ["t"], group="g"),
        share_heartbeat("share-member-a", 0, ["t"]),
        Step(SHARE_GROUP_DESCRIBE, {"group_ids": [Name("g")],
                                    "include_authorized_operations": False}),
        Step(CONSUMER_GROUP_DESCRIBE, {"group_ids": [Name("sg")],
                                       "include_authorized_operations": False}, version=0),
        Step(DESCRIBE_GROUPS, {"groups": [Name("sg")], "include_authorized_operations": False},
             version=6),
        Step(JOIN_GROUP, {"group_id": Name("sg"), "session_timeout": 30_000,
                          "rebalance_timeout": 30_000, "member_id": "",
                          "group_instance_id": None, "protocol_type": "consumer",
                          "protocols": [{"name": "range", "metadata": b"\x00\x01"}],
                          "reason": None}, version=5),
        Step(CONSUMER_GROUP_HEARTBEAT, {
            "group_id": Name("sg"), "member_id": "", "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 30_000, "subscribed_topic_names": [Name("t")],
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []},
            version=0),
        commit(generation=-1, member="", version=8, group="sg"),
    )),
    Scenario("consumer_group_describe", CONSUMER_GROUP_DESCRIBE, (
        find_coordinator("g", 0),
        join(name="first", version=5),
        Step(CONSUMER_GROUP_DESCRIBE, {"group_ids": [Name("g"), Name("missing")],
                                       "include_authorized_operations": False}),
    )),
]
