"""Fetching from the closest replica (KIP-392), without IO: which replica a leader points a
consumer at, by Kafka's RackAwareReplicaSelector.

The candidates are the leader and the ISR followers whose logs hold the fetch offset (Kafka
leaves out-of-sync followers: a lagging one would be chosen again and again while the
consumer falls behind). Among those in the consumer's rack the leader wins; otherwise the
follower with the highest log end offset, then the one caught up most recently. A consumer
that names no rack, or whose rack holds no candidate, stays on the leader.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.replication.leader import LeaderState

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""The `replica.selector.class` value that turns the selection on (Kafka's class name)."""
NO_PREFERRED_REPLICA = -1


def preferred_read_replica(state: LeaderState, racks: Mapping[int, str | None],
                           client_rack: str | None, fetch_offset: int, now_ms: int) -> int:
    """The follower the consumer should fetch from, or NO_PREFERRED_REPLICA for the leader.

    `racks` maps each live broker id to its `broker.rack`."""
    if not client_rack or racks.get(state.node_id) == client_rack:
        return NO_PREFERRED_REPLICA
    candidates = [
        (follower.log_end_offset, -(now_ms - follower.last_caught_up_ms), replica)
        for replica, follower in state.followers.items()
        if replica in state.isr and racks.get(replica) == client_rack
        and follower.log_start_offset <= fetch_offset <= follower.log_end_offset
    ]
    return max(candidates)[2] if candidates else NO_PREFERRED_REPLICA
