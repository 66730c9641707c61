"""The active controller's logic, after Kafka's QuorumController and its cluster, replication
and producer-id managers, without IO: handlers return the records to commit (and an answer);
the committed records come back through `replay`, the only path that changes the metadata.

Broker sessions are the one volatile state: deadlines kept by the active controller, renewed
by heartbeats, and given afresh to every broker when a controller becomes active."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode

from odradek.config.group import BrokerValues
from odradek.config.kafka_configs import BrokerConfig
from odradek.config.listeners import Endpoint
from odradek.metadata import reassignment
from odradek.metadata.errors import MetadataError
from odradek.metadata.image import BrokerRegistration, ClusterMetadata
from odradek.metadata.records import (
    NO_LEADER,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from odradek.security.acls import AclBinding, AclFilter
from odradek.security.client_quotas import Entity

DEFAULT_SESSION_TIMEOUT_MS = 9000
"""Kafka's broker.session.timeout.ms."""
PRODUCER_ID_BLOCK_SIZE = 1000
"""Producer ids handed to a broker at a time (Kafka's ProducerIdsBlock size)."""
MAX_PRODUCER_ID = 2**63 - 1
UNCLEAN = "unclean.leader.election.enable"


class ElectionType(enum.IntEnum):
    """ElectLeaders' election_type."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    is_caught_up: bool
    is_fenced: bool
    should_shutdown: bool


class QuorumController:
    def __init__(self, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 unclean_leader_election: bool = False,
                 config: BrokerValues | None = None) -> None:
        self.metadata = ClusterMetadata()
        self.config: BrokerValues = config if config is not None else BrokerConfig({})
        """This controller's own configs: the group configs' bounds (GroupConfig.validate
        runs on the controller, with its KafkaConfig)."""
        self.session_timeout_ms = session_timeout_ms
        self.unclean_leader_election = unclean_leader_election
        """unclean.leader.election.enable of this controller's config: the default when
        neither the topic nor the cluster-wide dynamic config sets it."""
        self.unclean_elections = 0
        """Leaders this controller elected from outside the ISR."""
        self.last_offset = 0
        """The Raft index of the latest batch replayed."""
        self._registration_offsets: dict[int, int] = {}
        self._deadlines: dict[int, int] = {}
        self._contacted: set[int] = set()
        """Brokers heard from since this controller became active: only their sessions can
        make a new incarnation's registration a duplicate (a restarted broker is not kept
        waiting by a session the new controller merely assumed)."""
        self._issued_epoch = 0
        self._shutting_down: dict[int, int | None] = {}
        """Brokers in controlled shutdown, volatile as sessions are: None while they still
        lead a partition, then the metadata offset every other active broker must reach
        before they are fenced (Kafka's controlledShutdownOffset)."""
        self._reported_offsets: dict[int, int] = {}
        """Each broker's metadata offset, from its latest heartbeat."""

    # --- replay -------------------------------------------------------------------------

    def replay(self, records: Iterable[MetadataRecord], offset: int) -> None:
        """Replay the committed batch at Raft index `offset` (or, at `offset`, the records of a
        snapshot image)."""
        for record in records:
            self.metadata.replay(record)
            match record:
                case RegisterBrokerRecord(broker_id=broker_id):
                    self._registration_offsets[broker_id] = offset
                    self._shutting_down.pop(broker_id, None)
                case FenceBrokerRecord(broker_id=broker_id):
                    self._shutting_down.pop(broker_id, None)
                case UnregisterBrokerRecord(broker_id=broker_id):
                    del self._registration_offsets[broker_id]
                    self._deadlines.pop(broker_id, None)
                    self._shutting_down.pop(broker_id, None)
        self.last_offset = max(self.last_offset, offset)

    def registration_offset(self, broker_id: int) -> int | None:
        """The offset of the broker's latest registration: it is unfenced once it has caught
        up with it."""
        return self._registration_offsets.get(broker_id)

    # --- brokers ------------------------------------------------------------------------

    def become_active(self, now_ms: int) -> None:
        """Sessions are not in the log: a new active controller gives every registered broker
        a full session from now."""
        deadline = now_ms + self.session_timeout_ms
        self._deadlines = {broker_id: deadline for broker_id in self.metadata.brokers}
        self._contacted = set()
        self._shutting_down = {}
        self._reported_offsets = {}

    def register_broker(
        self, broker_id: int, incarnation_id: str, endpoints: Sequence[Endpoint],
        rack: str | None, now_ms: int,
    ) -> tuple[list[MetadataRecord], int]:
        """(records, broker epoch). The same incarnation registering again keeps its epoch
        (records only when its endpoints or rack changed); a new incarnation gets a new, fenced
        registration, unless the current one is unfenced, its session alive and it is not in
        controlled shutdown."""
        if broker_id < 0:
            raise MetadataError(ErrorCode.invalid_request, f"Invalid broker id {broker_id}")
        endpoints = tuple(endpoints)
        names = [e.name for e in endpoints]
        if not names or len(set(names)) != len(names):
            raise MetadataError(ErrorCode.invalid_request, f"Broker {broker_id} must register "
                                f"one endpoint per listener name, not {names}")
        existing = self.metadata.brokers.get(broker_id)
        if existing is not None and existing.incarnation_id == incarnation_id:
            self._deadlines[broker_id] = now_ms + self.session_timeout_ms
            self._contacted.add(broker_id)
            if (existing.endpoints, existing.rack) == (endpoints, rack):
                return [], existing.epoch
            amended = RegisterBrokerRecord(broker_id, incarnation_id, existing.epoch, endpoints,
                                           rack, existing.fenced)
            return [amended], existing.epoch
        if existing is not None and not existing.fenced and self._alive(broker_id, now_ms) \
                and broker_id not in self._shutting_down:
            raise MetadataError(ErrorCode.duplicate_broker_registration,
                                "Another broker is registered with that broker id.")
        epoch = self._issued_epoch = self._next_broker_epoch()
        changes = self._changes()
        if existing is not None and not existing.fenced:
            changes.fence(existing, record=False)
        self._deadlines[broker_id] = now_ms + self.session_timeout_ms
        self._contacted.add(broker_id)
        return [*self._counted(changes),
                RegisterBrokerRecord(broker_id, incarnation_id, epoch, endpoints, rack)], epoch

    def _changes(self) -> _Changes:
        return _Changes(self.metadata, self._unclean_allowed, self._shutting_down.keys())

    def _counted(self, changes: _Changes) -> list[MetadataRecord]:
        records = changes.records()
        self.unclean_elections += changes.unclean_elections
        return records

    def _unclean_allowed(self, topic_id: str) -> bool:
        """Kafka's precedence: the topic's config, the cluster-wide dynamic default, then
        this controller's own config."""
        name = self.metadata.topic_names_by_id.get(topic_id)
        value = self.metadata.topics[name].configs.get(UNCLEAN) if name is not None else None
        if value is None:
            value = self.metadata.broker_configs.get("", {}).get(UNCLEAN)
        return self.unclean_leader_election if value is None else value.lower() == "true"

    def _next_broker_epoch(self) -> int:
        """Above every epoch issued so far: epochs at most reach the offset of the batch that
        registers them, so the latest offset bounds even those of brokers since forgotten."""
        epochs = (b.epoch for b in self.metadata.brokers.values())
        return max(self.last_offset, self._issued_epoch, *epochs) + 1

    def _alive(self, broker_id: int, now_ms: int) -> bool:
        return broker_id in self._contacted and self._deadlines.get(broker_id, -1) >= now_ms

    def broker_heartbeat(
        self, broker_id: int, broker_epoch: int, metadata_offset: int, want_fence: bool,
        want_shutdown: bool, now_ms: int,
    ) -> tuple[list[MetadataRecord], HeartbeatResult]:
        """Renews the session. A fenced broker that has caught up with its registration is
        unfenced; an unfenced one that wants to be fenced is fenced.

        Controlled shutdown is Kafka's: the broker's first heartbeat that wants to shut down
        moves its leaderships to other active ISR members (or takes a partition offline)
        and takes it out of the ISRs, and it stays unfenced, so Metadata still lists it and
        it answers NOT_LEADER_OR_FOLLOWER and NOT_COORDINATOR for what moved. It is fenced
        and told to shut down on a later heartbeat, once it leads nothing and every other
        active broker has reported the metadata offset of those moves. Clients that cached
        it as a coordinator learn of the move from its answers instead of losing it from
        Metadata first (librdkafka never asks a coordinator again once Metadata dropped it:
        docs/reliability.md)."""
        registration = self.metadata.brokers.get(broker_id)
        if registration is None:
            raise MetadataError(ErrorCode.broker_id_not_registered,
                                f"Broker {broker_id} is not registered.")
        _check_epoch(registration, broker_epoch)
        self._deadlines[broker_id] = now_ms + self.session_timeout_ms
        self._contacted.add(broker_id)
        self._reported_offsets[broker_id] = metadata_offset
        caught_up = metadata_offset >= self._registration_offsets.get(broker_id, 0)
        changes = self._changes()
        fenced = registration.fenced
        if fenced and caught_up and not (want_fence or want_shutdown):
            changes.unfence(registration)
            fenced = False
        elif not fenced and want_fence:
            changes.fence(registration)
            fenced = True
        elif not fenced and want_shutdown:
            fenced = self._controlled_shutdown(registration, changes)
        return self._counted(changes), HeartbeatResult(caught_up, fenced,
                                                       want_shutdown and fenced)

    def _controlled_shutdown(self, registration: BrokerRegistration,
                             changes: _Changes) -> bool:
        """One heartbeat of a broker in controlled shutdown: whether it is fenced now."""
        broker_id = registration.broker_id
        self._shutting_down.setdefault(broker_id, None)
        changes.shut_down(broker_id)
        if changes.records() or any(p.leader == broker_id for p in self.metadata.partitions()):
            self._shutting_down[broker_id] = None
            return False
        offset = self._shutting_down[broker_id]
        if offset is None:
            offset = self._shutting_down[broker_id] = self.last_offset
        if offset > self._lowest_active_offset():
            return False
        changes.fence(registration)
        return True

    def _lowest_active_offset(self) -> float:
        """The lowest metadata offset reported by an unfenced broker not shutting down (one
        not heard from since this controller became active counts as behind)."""
        return min((self._reported_offsets.get(b.broker_id, -1)
                    for b in self.metadata.unfenced_brokers()
                    if b.broker_id not in self._shutting_down), default=float("inf"))

    def tick(self, now_ms: int) -> list[MetadataRecord]:
        """Fence every unfenced broker whose session has expired, with the partition changes
        that follow. A broker without a session (none since this controller became active)
        gets one from now."""
        changes = self._changes()
        for registration in self.metadata.unfenced_brokers():
            deadline = self._deadlines.setdefault(registration.broker_id,
                                                  now_ms + self.session_timeout_ms)
            if deadline < now_ms:
                changes.fence(registration)
        return self._counted(changes)

    def offline_partition_count(self) -> int:
        return sum(p.leader == NO_LEADER for p in self.metadata.partitions())

    def fenced_broker_count(self) -> int:
        return sum(b.fenced for b in self.metadata.brokers.values())

    # --- partitions and producer ids ----------------------------------------------------

    def alter_partition(
        self, broker_id: int, broker_epoch: int, topic_id: str, partition: int,
        leader_epoch: int, partition_epoch: int, new_isr: Sequence[int],
    ) -> list[MetadataRecord]:
        """The partition leader's change of its ISR, checked as Kafka's AlterPartition does;
        no records when the ISR is already `new_isr`."""
        registration = self.metadata.brokers.get(broker_id)
        if registration is None:
            raise MetadataError(ErrorCode.stale_broker_epoch,
                                f"No broker registration found for broker id {broker_id}")
        _check_epoch(registration, broker_epoch)
        current = self.metadata.partition(topic_id, partition)
        where = f"partition {partition} of topic id {topic_id}"
        if leader_epoch > current.leader_epoch or partition_epoch > current.partition_epoch:
            raise MetadataError(ErrorCode.not_controller,
                                f"The epochs of {where} are ahead of this controller's.")
        if leader_epoch < current.leader_epoch:
            raise MetadataError(ErrorCode.fenced_leader_epoch,
                                f"The leader epoch of {where} is {current.leader_epoch}, "
                                f"not {leader_epoch}.")
        if broker_id != current.leader:
            raise MetadataError(ErrorCode.not_leader_or_follower,
                                f"Broker {broker_id} does not lead {where}; {current.leader} "
                                "does.")
        if partition_epoch < current.partition_epoch:
            raise MetadataError(ErrorCode.invalid_update_version,
                                f"The partition epoch of {where} is {current.partition_epoch}, "
                                f"not {partition_epoch}.")
        isr = tuple(new_isr)
        if len(set(isr)) != len(isr) or not set(isr) <= set(current.replicas):
            raise MetadataError(ErrorCode.invalid_request,
                                f"Invalid ISR {list(isr)} for replicas {list(current.replicas)}.")
        if current.leader not in isr:
            raise MetadataError(ErrorCode.invalid_request,
                                f"The ISR {list(isr)} does not include the leader {broker_id}.")
        ineligible = [r for r in isr if r not in self.metadata.brokers
                      or self.metadata.brokers[r].fenced or r in self._shutting_down]
        if ineligible:
            raise MetadataError(ErrorCode.ineligible_replica, f"Replica(s) {ineligible} are "
                                "fenced, in controlled shutdown or not registered.")
        if isr == current.isr:
            return []
        settled = reassignment.settle(replace(current, isr=isr), self._live())
        record = reassignment.change(current, settled)
        return [record] if record is not None else []

    def alter_partition_reassignments(
        self, targets: Mapping[tuple[str, int], Sequence[int] | None]
    ) -> tuple[list[MetadataRecord], dict[tuple[str, int], MetadataError | None]]:
        """(records, outcome per partition): each (topic, partition) is reassigned to its
        target replicas, or its reassignment cancelled when the target is None (Kafka's
        AlterPartitionReassignments)."""
        records: list[MetadataRecord] = []
        outcomes: dict[tuple[str, int], MetadataError | None] = {}
        registered, live = set(self.metadata.brokers), self._live()
        for (topic, index), target in targets.items():
            try:
                state = self.metadata.topic(topic)
                current = state.partitions.get(index)
                if current is None:
                    raise MetadataError(ErrorCode.unknown_topic_or_partition,
                                        f"Partition {index} of topic {topic!r} does not exist")
                after = (reassignment.cancel(current, live) if target is None
                         else reassignment.start(current, target, registered, live))
            except MetadataError as error:
                outcomes[(topic, index)] = error
                continue
            outcomes[(topic, index)] = None
            record = reassignment.change(current, after)
            if record is not None:
                records.append(record)
        return records, outcomes

    def elect_leaders(
        self, election: ElectionType, partitions: Iterable[tuple[str, int]] | None
    ) -> tuple[list[MetadataRecord], dict[tuple[str, int], MetadataError | None]]:
        """Kafka's ElectLeaders: (records, outcome per partition). Preferred: the first
        replica takes over if it is in the ISR and unfenced. Unclean: a leaderless partition
        takes an unfenced ISR member, else any unfenced replica. With `partitions` None every
        partition is considered and only those that needed an election are reported."""
        every = partitions is None
        wanted = [(name, p) for name, state in self.metadata.topics.items()
                  for p in state.partitions] if partitions is None else list(partitions)
        changes = self._changes()
        outcomes: dict[tuple[str, int], MetadataError | None] = {}
        for name, index in wanted:
            state = self.metadata.topics.get(name)
            partition = state.partitions.get(index) if state is not None else None
            if partition is None:
                outcomes[(name, index)] = MetadataError(
                    ErrorCode.unknown_topic_or_partition,
                    f"Partition {index} of topic {name!r} does not exist")
                continue
            failure = changes.elect(partition, election)
            if failure is None or not (every and failure.error_code
                                       == ErrorCode.election_not_needed):
                outcomes[(name, index)] = failure
        return self._counted(changes), outcomes

    def balance_leaders(self, imbalance_percentage: int) -> list[MetadataRecord]:
        """Kafka's automatic leader rebalance: when some broker leads too few of the
        partitions it is the preferred replica of (more than `imbalance_percentage` percent
        led elsewhere), every partition whose preferred replica may lead goes back to it."""
        preferred: Counter[int] = Counter()
        elsewhere: Counter[int] = Counter()
        for partition in self.metadata.partitions():
            first = partition.replicas[0]
            preferred[first] += 1
            elsewhere[first] += partition.leader != first
        if not any(elsewhere[b] * 100 > imbalance_percentage * preferred[b] for b in preferred):
            return []
        records, _ = self.elect_leaders(ElectionType.PREFERRED, None)
        return records

    def _live(self) -> set[int]:
        return {b.broker_id for b in self.metadata.unfenced_brokers()} - self._shutting_down.keys()

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[list[MetadataRecord], int, int]:
        """(records, first id, count): the next block of producer ids, for this broker."""
        registration = self.metadata.brokers.get(broker_id)
        if registration is None:
            raise MetadataError(ErrorCode.stale_broker_epoch,
                                f"No broker registration found for broker id {broker_id}")
        _check_epoch(registration, broker_epoch)
        first = self.metadata.next_producer_id
        if first > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
            raise MetadataError(ErrorCode.unknown_server_error,
                                "Exhausted all producerIds as the next block's end producerId "
                                "has exceeded the int64 type limit")
        record = ProducerIdsRecord(broker_id, broker_epoch, first + PRODUCER_ID_BLOCK_SIZE)
        return [record], first, PRODUCER_ID_BLOCK_SIZE

    # --- topic admin: replicas placed over the unfenced brokers -------------------------

    def create_topic(
        self, name: str, topic_id: str, num_partitions: int, replication_factor: int,
        configs: Mapping[str, str | None],
        assignments: Mapping[int, Sequence[int]] | None = None, internal: bool = False,
    ) -> list[MetadataRecord]:
        return self.metadata.create_topic(name, topic_id, num_partitions, replication_factor,
                                          configs, assignments, internal,
                                          self._shutting_down.keys())

    def delete_topic(self, name: str) -> list[MetadataRecord]:
        return self.metadata.delete_topic(name)

    def create_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] | None = None
    ) -> list[MetadataRecord]:
        return self.metadata.create_partitions(name, count, assignments,
                                               self._shutting_down.keys())

    def alter_topic_configs(
        self, name: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        return self.metadata.alter_topic_configs(name, changes)

    def alter_broker_configs(
        self, resource_name: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        return self.metadata.alter_broker_configs(resource_name, changes)

    def alter_group_configs(
        self, group: str, changes: Mapping[str, str | None]
    ) -> list[MetadataRecord]:
        return self.metadata.alter_group_configs(group, changes, self.config)

    # --- ACLs ---------------------------------------------------------------------------

    def create_acls(
        self, acls: Sequence[AclBinding], new_id: Callable[[], str]
    ) -> tuple[list[MetadataRecord], list[MetadataError | None]]:
        return self.metadata.create_acls(acls, new_id)

    def delete_acls(
        self, filters: Sequence[AclFilter]
    ) -> tuple[list[MetadataRecord], list[list[AclBinding] | MetadataError]]:
        return self.metadata.delete_acls(filters)

    def alter_client_quotas(
        self, target: Entity, changes: Mapping[str, float | None]
    ) -> list[MetadataRecord]:
        return self.metadata.alter_client_quotas(target, changes)


def _check_epoch(registration: BrokerRegistration, broker_epoch: int) -> None:
    if registration.epoch != broker_epoch:
        raise MetadataError(ErrorCode.stale_broker_epoch,
                            f"Expected broker epoch {registration.epoch}, but got broker "
                            f"epoch {broker_epoch}")


class _Changes:
    """Fencing and unfencing worked out one broker after another over the metadata and the
    changes so far; `records` merges them into one PartitionChangeRecord per partition.

    Fencing a broker takes it out of every ISR it is in, unless it is the last member, and
    gives each partition it led the first replica that is in the ISR and unfenced, or no
    leader (-1). Unfencing gives it the leaderless partitions whose ISR holds it. Where
    unclean leader election is allowed, a leaderless partition whose ISR has no unfenced
    member takes the first unfenced replica, which becomes its whole ISR (data the ISR
    acknowledged may be lost: hence the count)."""

    def __init__(self, metadata: ClusterMetadata,
                 unclean_allowed: Callable[[str], bool] = lambda topic_id: False,
                 shutting_down: Collection[int] = ()) -> None:
        self._metadata = metadata
        self._unclean_allowed = unclean_allowed
        self.unclean_elections = 0
        self._fenced = {b.broker_id: b.fenced or b.broker_id in shutting_down
                        for b in metadata.brokers.values()}
        """Whether each broker may not lead: fenced, or in controlled shutdown."""
        self._changed: dict[tuple[str, int], tuple[int, tuple[int, ...]]] = {}
        self._broker_records: list[MetadataRecord] = []

    def fence(self, registration: BrokerRegistration, record: bool = True) -> None:
        """`record`: with a FenceBrokerRecord (not when a new registration replaces it)."""
        if record:
            self._broker_records.append(FenceBrokerRecord(registration.broker_id,
                                                          registration.epoch))
        self.shut_down(registration.broker_id)

    def shut_down(self, broker_id: int) -> None:
        """What fencing does to the partitions, without the record: the broker may not
        lead, and leaves every ISR it is not the last member of."""
        self._fenced[broker_id] = True
        for partition in self._metadata.partitions():
            leader, isr = self._state(partition)
            if broker_id in isr:
                isr = tuple(r for r in isr if r != broker_id) or isr
                self._set(partition, *self._elect(partition, isr, leader))

    def unfence(self, registration: BrokerRegistration) -> None:
        self._fenced[registration.broker_id] = False
        self._broker_records.append(UnfenceBrokerRecord(registration.broker_id,
                                                       registration.epoch))
        for partition in self._metadata.partitions():
            leader, isr = self._state(partition)
            if leader == NO_LEADER and registration.broker_id in partition.replicas:
                self._set(partition, *self._elect(partition, isr, leader))

    def elect(self, partition: PartitionRecord, election: ElectionType) -> MetadataError | None:
        """An ElectLeaders election of one partition; the error when it does not happen."""
        leader, isr = self._state(partition)
        if election is ElectionType.PREFERRED:
            first = partition.replicas[0]
            if leader == first:
                return MetadataError(ErrorCode.election_not_needed,
                                     "The preferred replica is already the leader.")
            if first not in isr or self._fenced.get(first, True):
                return MetadataError(ErrorCode.preferred_leader_not_available,
                                     f"The preferred leader {first} is not in the ISR or is "
                                     "fenced.")
            self._set(partition, first, isr)
            return None
        if leader != NO_LEADER:
            return MetadataError(ErrorCode.election_not_needed, "The partition has a leader.")
        chosen, isr = self._elect(partition, isr, leader, unclean=True)
        if chosen == NO_LEADER:
            return MetadataError(ErrorCode.eligible_leaders_not_available,
                                 "No replica of the partition is unfenced.")
        self._set(partition, chosen, isr)
        return None

    def _elect(self, partition: PartitionRecord, isr: tuple[int, ...], leader: int,
               unclean: bool = False) -> tuple[int, tuple[int, ...]]:
        """(leader, ISR): the leader kept if it may stay, else an unfenced ISR member in
        replica order, else (when `unclean` or the topic's config allows it) any unfenced
        replica, alone in the ISR."""
        if leader in isr and not self._fenced.get(leader, True):
            return leader, isr
        unfenced = [r for r in partition.replicas if not self._fenced.get(r, True)]
        clean = next((r for r in unfenced if r in isr), None)
        if clean is not None:
            return clean, isr
        if unfenced and (unclean or self._unclean_allowed(partition.topic_id)):
            self.unclean_elections += 1
            return unfenced[0], (unfenced[0],)
        return NO_LEADER, isr

    def _state(self, partition: PartitionRecord) -> tuple[int, tuple[int, ...]]:
        key = (partition.topic_id, partition.partition)
        return self._changed.get(key, (partition.leader, partition.isr))

    def _set(self, partition: PartitionRecord, leader: int, isr: tuple[int, ...]) -> None:
        self._changed[(partition.topic_id, partition.partition)] = (leader, isr)

    def records(self) -> list[MetadataRecord]:
        records = list(self._broker_records)
        for partition in self._metadata.partitions():
            leader, isr = self._state(partition)
            if (leader, isr) != (partition.leader, partition.isr):
                records.append(PartitionChangeRecord(
                    partition.topic_id, partition.partition,
                    leader=leader if leader != partition.leader else None,
                    isr=isr if isr != partition.isr else None,
                ))
        return records
