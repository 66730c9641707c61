"""Replica placement: distinct brokers, racks spread as far as they allow, leaders balanced
across brokers and across repeated placements, deterministic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.metadata.errors import MetadataError
from odradek.metadata.placement import place_replicas, rack_ring

Brokers = list[tuple[int, str | None]]


def plain(*broker_ids: int) -> Brokers:
    return [(b, None) for b in broker_ids]


def leaders(assignments: Sequence[Sequence[int]]) -> Counter[int]:
    return Counter(replicas[0] for replicas in assignments)


def test_three_brokers_thirty_partitions_ten_leaders_each() -> None:
    assignments = place_replicas(0, 30, 3, plain(1, 2, 3), {})
    assert len(assignments) == 30
    assert all(sorted(replicas) == [1, 2, 3] for replicas in assignments)
    assert leaders(assignments) == {1: 10, 2: 10, 3: 10}


def test_followers_are_striped_rather_than_always_the_same_pairs() -> None:
    assignments = place_replicas(0, 12, 2, plain(1, 2, 3, 4), {})
    assert len({tuple(replicas) for replicas in assignments}) > 4
    replicas_per_broker = Counter(b for replicas in assignments for b in replicas)
    assert replicas_per_broker == {1: 6, 2: 6, 3: 6, 4: 6}


def test_existing_leaderships_are_evened_out_first() -> None:
    assignments = place_replicas(0, 6, 1, plain(1, 2, 3), {1: 4, 2: 1, 9: 50})
    assert leaders(assignments) == {3: 4, 2: 2}


def test_repeated_single_partition_creations_rotate_leaders() -> None:
    counts: Counter[int] = Counter()
    for _ in range(9):
        [replicas] = place_replicas(0, 1, 2, plain(1, 2, 3), counts)
        counts[replicas[0]] += 1
    assert counts == {1: 3, 2: 3, 3: 3}


def test_every_partition_spans_as_many_racks_as_it_can() -> None:
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")]
    rack = dict(brokers)
    for replication in (2, 3):
        assignments = place_replicas(0, 24, replication, brokers, {})
        assert all(len({rack[b] for b in replicas}) == replication for replicas in assignments)
        assert set(leaders(assignments).values()) == {4}
    four = place_replicas(0, 12, 4, brokers, {})
    assert all(sorted(Counter(rack[b] for b in r).values()) == [1, 1, 2] for r in four)


def test_a_lone_rack_still_gets_a_replica_of_every_partition() -> None:
    """Kafka's rule: rack spread comes before broker balance."""
    brokers = [(1, "a"), (2, "b"), (3, "b"), (4, "b")]
    assignments = place_replicas(0, 8, 2, brokers, {})
    assert all(1 in replicas for replicas in assignments)


def test_rack_ring_interleaves_racks_and_puts_rackless_brokers_last() -> None:
    brokers = [(6, "b"), (1, None), (3, "a"), (2, "b"), (5, "a"), (4, None), (7, "a")]
    assert rack_ring(brokers) == [3, 2, 1, 5, 6, 4, 7]
    assert rack_ring(plain(3, 1, 2)) == [1, 2, 3]


def test_placement_is_deterministic_and_independent_of_input_order() -> None:
    brokers = [(1, "a"), (2, "b"), (3, "a"), (4, "b"), (5, None)]
    first = place_replicas(3, 20, 3, brokers, {1: 2, 4: 1})
    assert place_replicas(3, 20, 3, brokers[::-1], {4: 1, 1: 2}) == first


@pytest.mark.parametrize(("replication", "brokers"), [(4, plain(1, 2, 3)), (1, [])])
def test_too_few_brokers(replication: int, brokers: Brokers) -> None:
    with pytest.raises(MetadataError) as raised:
        place_replicas(0, 1, replication, brokers, {})
    assert raised.value.error_code == ErrorCode.invalid_replication_factor
    assert raised.value.message == (
        f"Unable to replicate the partition {replication} time(s): The target replication "
        f"factor of {replication} cannot be reached because only {len(brokers)} broker(s) "
        "are registered.")


def test_non_positive_replication_factor() -> None:
    with pytest.raises(MetadataError) as raised:
        place_replicas(0, 1, 0, plain(1), {})
    assert raised.value.error_code == ErrorCode.invalid_replication_factor


RACKS = st.sampled_from([None, "a", "b", "c"])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Brokers, int]:
    ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=9, unique=True))
    racked = draw(st.booleans())
    brokers = [(b, draw(RACKS) if racked else None) for b in ids]
    return brokers, draw(st.integers(1, len(ids)))


@given(cluster=clusters(), start=st.integers(0, 50), count=st.integers(0, 40),
       existing=st.dictionaries(st.integers(0, 40), st.integers(0, 5)))
@settings(max_examples=300, deadline=None)
def test_placement_properties(cluster: tuple[Brokers, int], start: int, count: int,
                              existing: dict[int, int]) -> None:
    brokers, replication = cluster
    rack = dict(brokers)
    assignments = place_replicas(start, count, replication, brokers, existing)
    assert len(assignments) == count
    for replicas in assignments:
        assert len(replicas) == replication == len(set(replicas))
        assert set(replicas) <= set(rack)
        per_rack = Counter(rack[b] for b in replicas)
        fullest = max(per_rack.values())
        for name in set(rack.values()):
            if per_rack[name] < fullest - 1:
                assert {b for b, r in brokers if r == name} <= set(replicas), \
                    "a rack short of replicas must have no broker left"
    before = {b: existing.get(b, 0) for b in rack}
    after = Counter(before) + leaders(assignments)
    after.update({b: 0 for b in rack})
    new_leaders = leaders(assignments)
    floor = min(after.values())
    assert all(after[b] <= max(floor + 1, before[b]) for b in rack), \
        "a broker got a new leadership while another had two fewer"
    assert all(after[b] <= floor + 1 for b in new_leaders)


@given(cluster=clusters(), counts=st.lists(st.integers(1, 12), min_size=1, max_size=8))
@settings(max_examples=200, deadline=None)
def test_repeated_creations_keep_leaders_within_one(cluster: tuple[Brokers, int],
                                                    counts: list[int]) -> None:
    brokers, replication = cluster
    led: Counter[int] = Counter({b: 0 for b, _ in brokers})
    for count in counts:
        led.update(leaders(place_replicas(0, count, replication, brokers, led)))
        assert max(led.values()) - min(led.values()) <= 1
