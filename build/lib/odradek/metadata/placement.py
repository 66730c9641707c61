"""Replica placement for new partitions, in the spirit of Kafka's StripedReplicaPlacer but
deterministic: replicas of a partition go to distinct brokers and, as far as the racks allow,
distinct racks; leaders (first replicas) go to the brokers that lead the fewest partitions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from kio.schema.errors import ErrorCode

from odradek.metadata.errors import MetadataError


def unable_to_replicate(replication_factor: int, reason: str) -> MetadataError:
    return MetadataError(
        ErrorCode.invalid_replication_factor,
        f"Unable to replicate the partition {replication_factor} time(s): {reason}",
    )


def rack_ring(brokers: Sequence[tuple[int, str | None]]) -> list[int]:
    """Broker ids with racks interleaved (the first broker of each rack, then the second of
    each, ...), so that neighbours on the ring sit in different racks. Racks are sorted by
    name (brokers without a rack form one more rack, last), brokers within a rack by id."""
    racks: dict[str | None, list[int]] = {}
    for broker_id, rack in brokers:
        racks.setdefault(rack, []).append(broker_id)
    names = sorted(racks, key=lambda rack: (rack is None, rack or ""))
    members = [sorted(racks[name]) for name in names]
    deepest = max((len(m) for m in members), default=0)
    return [m[i] for i in range(deepest) for m in members if i < len(m)]


def place_replicas(
    start_partition: int,
    count: int,
    replication_factor: int,
    brokers: Sequence[tuple[int, str | None]],
    leader_counts: Mapping[int, int],
) -> list[list[int]]:
    """Replica lists for partitions start_partition .. start_partition + count - 1 over
    `brokers` ((broker id, rack) of the usable, i.e. unfenced, brokers). `leader_counts` are
    the partitions each broker already leads, so that repeated placements stay balanced.

    Each leader is the broker with the fewest leaderships so far (ties go round the rack
    ring, starting at the partition's index). Each follower comes from the rack holding the
    fewest replicas of the partition, then from the broker given the fewest replicas by this
    placement, then in ring order after the leader, shifted by one every full turn of the
    ring so that leaders do not always pair with the same followers (Kafka's striping)."""
    if replication_factor < 1:
        raise unable_to_replicate(
            replication_factor,
            f"Invalid replication factor {replication_factor}: the replication factor must be "
            "positive.",
        )
    if replication_factor > len(brokers):
        raise unable_to_replicate(
            replication_factor,
            f"The target replication factor of {replication_factor} cannot be reached because "
            f"only {len(brokers)} broker(s) are registered.",
        )
    rack_of = dict(brokers)
    ring = rack_ring(brokers)
    size = len(ring)
    position = {broker_id: index for index, broker_id in enumerate(ring)}
    leads = Counter({broker_id: leader_counts.get(broker_id, 0) for broker_id in ring})
    placed: Counter[int] = Counter()
    assignments = []
    for partition in range(start_partition, start_partition + count):
        turn = partition % size
        leader = min(ring[turn:] + ring[:turn], key=leads.__getitem__)
        leads[leader] += 1
        replicas = [leader]
        shift = (partition // size) % (size - 1) if size > 1 else 0
        walk = [
            ring[(position[leader] + 1 + (shift + step) % (size - 1)) % size]
            for step in range(size - 1)
        ]
        for _ in range(replication_factor - 1):
            in_racks = Counter(rack_of[r] for r in replicas)
            candidates = [b for b in walk if b not in replicas]
            replicas.append(min(candidates, key=lambda b: (in_racks[rack_of[b]], placed[b])))
        placed.update(replicas)
        assignments.append(replicas)
    return assignments
