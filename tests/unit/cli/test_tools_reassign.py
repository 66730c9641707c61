"""The pure parts of the partition tools: generate's placement, Kafka's JSON formats (of
reassign, leader-election, delete-records and log-dirs), the throttles a reassignment sets,
verify's lines and the copy progress."""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from types import SimpleNamespace

import pytest

from odradek.cli.tools.common import ToolError
from odradek.cli.tools.delete_records import parse_offsets
from odradek.cli.tools.leader_election import check_options, parse_election_partitions
from odradek.cli.tools.log_dirs import log_dirs_json
from odradek.cli.tools.reassign_plan import (
    CopyProgress,
    Ongoing,
    Partition,
    follower_throttles,
    leader_throttles,
    moves,
    ongoing_line,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
    placement_brokers,
    propose,
    reassigning_brokers,
    reassignment_json,
    status_line,
)

T0, T1 = Partition("t", 0), Partition("t", 1)


def topic(name: str, partitions: int, factor: int) -> dict[Partition, list[int]]:
    return {Partition(name, p): list(range(1, factor + 1)) for p in range(partitions)}


def rackless(*ids: int) -> list[tuple[int, str | None]]:
    return [(i, None) for i in ids]


# --- generate ----------------------------------------------------------------------------


@pytest.mark.parametrize(("partitions", "factor", "brokers"),
                         [(6, 3, (1, 2, 3, 4)), (8, 2, (5, 7, 9)), (5, 1, (1, 2)),
                          (12, 3, (10, 20, 30, 40, 50, 60))])
def test_every_partition_gets_its_factor_of_distinct_listed_brokers_spread_evenly(
        partitions: int, factor: int, brokers: tuple[int, ...]) -> None:
    current = topic("t", partitions, factor)
    proposal = propose(current, rackless(*brokers))
    assert set(proposal) == set(current)
    for replicas in proposal.values():
        assert len(replicas) == factor == len(set(replicas))
        assert set(replicas) <= set(brokers)
    replicas_per_broker = Counter(b for r in proposal.values() for b in r)
    leaders_per_broker = Counter(r[0] for r in proposal.values())
    assert set(replicas_per_broker) == set(brokers)
    assert max(replicas_per_broker.values()) - min(replicas_per_broker.values()) <= 1
    assert max(leaders_per_broker[b] for b in brokers) \
        - min(leaders_per_broker[b] for b in brokers) <= 1


def test_the_proposal_is_deterministic_whatever_the_input_order() -> None:
    current = {**topic("a", 5, 2), **topic("b", 3, 3), **topic("c", 1, 1)}
    shuffled = list(current.items())
    random.Random(7).shuffle(shuffled)
    first = propose(current, rackless(1, 2, 3, 4))
    assert propose(dict(shuffled), rackless(1, 2, 3, 4)) == first
    assert propose(current, rackless(1, 2, 3, 4)) == first


def test_leadership_stays_even_across_topics() -> None:
    """Three one-partition topics do not all lead on the same broker."""
    current = {**topic("a", 1, 1), **topic("b", 1, 1), **topic("c", 1, 1)}
    proposal = propose(current, rackless(1, 2, 3))
    assert sorted(r[0] for r in proposal.values()) == [1, 2, 3]


def test_replicas_go_to_distinct_racks() -> None:
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    proposal = propose(topic("t", 8, 2), brokers)
    racks = dict(brokers)
    assert all(racks[r[0]] != racks[r[1]] for r in proposal.values())


def test_a_factor_above_the_broker_count_is_refused() -> None:
    with pytest.raises(ToolError, match="cannot place t: .*only 2 broker"):
        propose(topic("t", 1, 3), rackless(1, 2))


def test_placement_brokers_checks_ids_and_racks() -> None:
    racks = {1: "a", 2: None, 3: "b"}
    with pytest.raises(ToolError, match="^Unknown broker id 7$"):
        placement_brokers([1, 7], racks, rack_aware=True)
    with pytest.raises(ToolError, match="Not all brokers have rack information"):
        placement_brokers([1, 2], racks, rack_aware=True)
    assert placement_brokers([1, 2], racks, rack_aware=False) == [(1, None), (2, None)]
    assert placement_brokers([3, 1], racks, rack_aware=True) == [(3, "b"), (1, "a")]


def test_broker_lists() -> None:
    assert parse_broker_list("3,1,2") == [3, 1, 2]
    with pytest.raises(ToolError, match="duplicate entries: \\[2\\]"):
        parse_broker_list("1,2,2")
    with pytest.raises(ToolError, match="comma-separated broker ids"):
        parse_broker_list("1,x")


def test_topics_to_move() -> None:
    assert parse_topics_to_move({"topics": [{"topic": "a"}, {"topic": "b"}], "version": 1}) \
        == ["a", "b"]
    assert parse_topics_to_move({"topics": [{"topic": "a"}]}) == ["a"]
    for bad, message in [({"topics": [{"topic": "a"}, {"topic": "a"}]}, "duplicate"),
                         ({"topics": [{"topic": "a"}], "version": 2}, "version field value 2"),
                         ({"topics": [{"name": "a"}]}, 'no "topic" field'),
                         ({"topics": []}, "lists no topic"),
                         ([], "must be a JSON object")]:
        with pytest.raises(ToolError, match=message):
            parse_topics_to_move(bad)


# --- the reassignment JSON ---------------------------------------------------------------


def test_the_reassignment_json_is_kafkas_and_reads_back() -> None:
    text = reassignment_json({T1: [3, 1], T0: [1, 2], Partition("a", 2): [4]})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":2,"replicas":[4],"log_dirs":["any"]},'
        '{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"t","partition":1,"replicas":[3,1],"log_dirs":["any","any"]}]}')
    assert parse_reassignment(json.loads(text)) == {
        Partition("a", 2): [4], T0: [1, 2], T1: [3, 1]}


def test_log_dirs_are_optional() -> None:
    assert parse_reassignment({"partitions": [{"topic": "t", "partition": 0,
                                               "replicas": [2, 3]}]}) == {T0: [2, 3]}


@pytest.mark.parametrize(("entries", "message"), [
    ([], "cannot be empty"),
    ([{"topic": "t", "partition": 0, "replicas": []}], "replica list cannot be empty"),
    ([{"topic": "t", "partition": 0, "replicas": [1]}] * 2,
     "duplicate topic partitions: t-0"),
    ([{"topic": "t", "partition": 0, "replicas": [1, 2, 1]}],
     "t-0 contains multiple entries for 1"),
    ([{"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any"]}],
     "different from size of log dirs"),
    ([{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/data"]}],
     "between log directories is not supported"),
    ([{"topic": "t", "partition": "0", "replicas": [1]}], '"partition" must be an integer'),
    ([{"topic": "t", "partition": 0, "replicas": ["1"]}], '"replicas" must be a list of int'),
    ([{"topic": "t", "replicas": [1]}], 'no "partition" field'),
])
def test_bad_reassignments_are_refused(entries: list[object], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_reassignment({"version": 1, "partitions": entries})


def test_only_version_1_is_read() -> None:
    with pytest.raises(ToolError, match="Not supported version field value 3"):
        parse_reassignment({"version": 3, "partitions": []})


# --- throttles ---------------------------------------------------------------------------


def test_throttles_name_the_sources_for_leaders_and_the_new_replicas_for_followers() -> None:
    partition_moves = moves({}, {T0: [2, 3], T1: [3, 4, 1]}, {T0: [1, 2], T1: [1, 2, 3]})
    assert leader_throttles(partition_moves) == {"t": "0:1,0:2,1:1,1:2,1:3"}
    assert follower_throttles(partition_moves) == {"t": "0:3,1:4"}
    assert reassigning_brokers(partition_moves) == [1, 2, 3, 4]


def test_a_partition_already_moving_keeps_its_original_sources() -> None:
    """t-0 was [1] and is being copied to 2; a new target [3] still copies from 1 only."""
    ongoing = {T0: Ongoing(replicas=[2, 1], adding=[2], removing=[1]),
               Partition("u", 5): Ongoing(replicas=[4, 5], adding=[5], removing=[])}
    partition_moves = moves(ongoing, {T0: [3]}, {T0: [2, 1]})
    assert leader_throttles(partition_moves) == {"t": "0:1", "u": "5:4"}
    assert follower_throttles(partition_moves) == {"t": "0:3", "u": "5:5"}


# --- verify, list and progress -----------------------------------------------------------


def test_status_lines() -> None:
    assert status_line(T0, None, [1, 2]) == "Reassignment of partition t-0 is still in progress."
    assert status_line(T0, [1, 2], [1, 2]) == "Reassignment of partition t-0 is completed."
    assert status_line(T1, [3], [1, 2]) == (
        "There is no active reassignment of partition t-1, but replica set is 3 rather than "
        "1,2.")


def test_list_lines() -> None:
    assert ongoing_line(T0, Ongoing([2, 3, 1], [2, 3], [1])) == \
        "t-0: replicas: 2,3,1. adding: 2,3. removing: 1."
    assert ongoing_line(T1, Ongoing([1, 2], [], [])) == "t-1: replicas: 1,2."


def test_copy_progress_counts_each_new_replica_against_the_leaders_size() -> None:
    progress = CopyProgress()
    assert progress.percent(done=False) == 0
    progress.observe(T0, leader_size=1000, adding_sizes=[250, 1200])
    progress.observe(T1, leader_size=500, adding_sizes=[0])
    assert (progress.completed, progress.total) == (1250, 2500)
    assert progress.percent(done=False) == 50
    progress.finish(T1)
    assert progress.completed == 1750
    progress.finish(T0)
    assert progress.percent(done=True) == 100
    assert CopyProgress().percent(done=True) == 100


# --- leader-election, delete-records, log-dirs -------------------------------------------


def election_args(**given: object) -> argparse.Namespace:
    defaults: dict[str, object] = {"election_type": "preferred", "topic": None,
                                   "partition": None, "all_topic_partitions": False,
                                   "path_to_json_file": None}
    return argparse.Namespace(**{**defaults, **given})


@pytest.mark.parametrize(("given", "message"), [
    ({"election_type": None, "all_topic_partitions": True}, "Missing required option\\(s\\): "
                                                            "election-type"),
    ({"election_type": "random", "all_topic_partitions": True}, "must be one of"),
    ({}, "One and only one"),
    ({"topic": "t", "partition": 0, "all_topic_partitions": True}, "One and only one"),
    ({"topic": "t"}, "Missing required option\\(s\\): partition"),
    ({"partition": 0, "all_topic_partitions": True}, "only allowed if topic is used"),
])
def test_leader_election_options(given: dict[str, object], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        check_options(election_args(**given))


def test_leader_election_options_that_are_right() -> None:
    check_options(election_args(topic="t", partition=0))
    check_options(election_args(election_type="UNCLEAN", all_topic_partitions=True))


def test_election_partitions() -> None:
    assert parse_election_partitions({"partitions": [{"topic": "a", "partition": 1}]}) \
        == [("a", 1)]
    with pytest.raises(ToolError, match="duplicate partitions: a-1"):
        parse_election_partitions({"partitions": [{"topic": "a", "partition": 1}] * 2})
    with pytest.raises(ToolError, match='missing "partitions"'):
        parse_election_partitions({})
    with pytest.raises(ToolError, match="expected"):
        parse_election_partitions({"partitions": [{"topic": "a"}]})


def test_record_offsets() -> None:
    assert parse_offsets({"partitions": [{"topic": "a", "partition": 0, "offset": -1}],
                          "version": 1}) == [("a", 0, -1)]
    for bad, message in [({}, "Missing partitions field"),
                         ({"partitions": [], "version": 2}, "version field value 2"),
                         ({"partitions": [{"topic": "a", "partition": 0, "offset": 1}] * 2},
                          "duplicate topic partitions: a-0"),
                         ({"partitions": [{"topic": "a", "partition": 0}]}, "expected")]:
        with pytest.raises(ToolError, match=message):
            parse_offsets(bad)


def test_log_dirs_document_is_kafkas() -> None:
    def partition(index: int, size: int) -> SimpleNamespace:
        return SimpleNamespace(partition_index=index, partition_size=size, offset_lag=0,
                               is_future_key=False)

    result = SimpleNamespace(log_dir="/data", error_code=0, topics=[
        SimpleNamespace(name="a", partitions=[partition(0, 10), partition(1, 0)]),
        SimpleNamespace(name="b", partitions=[partition(0, 7)])])
    assert log_dirs_json({2: [result], 1: []}, {"a"}) == {"version": 1, "brokers": [
        {"broker": 1, "logDirs": []},
        {"broker": 2, "logDirs": [{"logDir": "/data", "error": None, "partitions": [
            {"partition": "a-0", "size": 10, "offsetLag": 0, "isFuture": False},
            {"partition": "a-1", "size": 0, "offsetLag": 0, "isFuture": False}]}]}]}
    assert len(log_dirs_json({2: [result]}, set())["brokers"][0]["logDirs"][0]["partitions"]) \
        == 3
