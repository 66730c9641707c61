"""The gRPC Controller service: brokers register, heartbeat, follow the metadata log and
forward admin operations here. Writes run one at a time on the active controller and are
answered once their records are committed and applied."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TypeVar

import grpc
from kio.schema.errors import ErrorCode

from odradek.config.listeners import Endpoint
from odradek.controller.machine import ControllerMachine
from odradek.controller.quorum_replication import ReplicaReport
from odradek.controller.raft_driver import RaftDriver
from odradek.metadata import scram_control
from odradek.metadata.controller import ElectionType
from odradek.metadata.image import MetadataError
from odradek.metadata.records import ConfigResourceType, MetadataRecord, encode_batch
from odradek.raft.types import NotLeaderError
from odradek.rpc import controller_pb2 as pb
from odradek.rpc import controller_pb2_grpc
from odradek.rpc.acls import acl_binding, acl_filter, acl_message
from odradek.runtime.clock import now_ms

log = logging.getLogger("odradek.controller.service")

T = TypeVar("T")


def new_topic_id() -> str:
    """A random id of a topic or an ACL: the shell draws it, the metadata core only records
    it."""
    return str(uuid.uuid4())


class NotController(Exception):
    """This controller is not the active one."""


def error(code: int = ErrorCode.none, message: str = "") -> pb.Error:
    return pb.Error(code=int(code), message=message)


class ControllerService(controller_pb2_grpc.ControllerServicer):
    def __init__(self, machine: ControllerMachine, driver: RaftDriver, cluster_id: str,
                 voters: Mapping[int, tuple[str, int]], timeout_ms: int) -> None:
        self.machine = machine
        self.driver = driver
        self.cluster_id = cluster_id
        self.voters = voters
        self.timeout_s = timeout_ms / 1000
        self._write_lock = asyncio.Lock()

    # --- the write path -----------------------------------------------------------------

    def hint(self) -> pb.ControllerHint:
        leader = self.driver.leader
        host, port = self.voters.get(leader, ("", 0))
        return pb.ControllerHint(leader_id=leader, leader_host=host, leader_port=port)

    async def write(self, build: Callable[[], tuple[list[MetadataRecord], T]],
                    dry_run: bool = False) -> T:
        """Run a handler on the active controller and commit its records. Raises
        NotController, MetadataError, or TimeoutError.

        Handlers build their records from the applied state, so a handler runs only once
        every earlier write is applied or has failed: a write whose caller timed out keeps
        the lock until its entry's fate is known. Released at the timeout, the next handler
        built records on a state without that entry; in a fault campaign two rounds of
        fencing did so and left a partition's ISR holding only a replica the first round
        had removed, which was then elected (docs/reliability.md)."""
        await self._write_lock.acquire()  # a gRPC caller's deadline cancels this wait
        committed: asyncio.Future[int] | None = None
        try:
            if not self.driver.active:
                raise NotController
            records, result = build()
            if records and not dry_run:
                committed = self.driver.propose(encode_batch(records))
        finally:
            if committed is None:
                self._write_lock.release()
        if committed is None:
            return result
        committed.add_done_callback(self._written)
        try:
            await asyncio.wait_for(asyncio.shield(committed), self.timeout_s)
        except NotLeaderError:
            raise NotController from None
        return result

    def _written(self, committed: asyncio.Future[int]) -> None:
        """An entry is applied, or failed: the next handler may build on the state."""
        if not committed.cancelled():
            committed.exception()  # retrieved here when its caller timed out first
        self._write_lock.release()

    def _failure(self, failure: Exception) -> tuple[pb.Error, pb.ControllerHint | None]:
        if isinstance(failure, NotController):
            return error(ErrorCode.not_controller, "This controller is not active."), self.hint()
        if isinstance(failure, MetadataError):
            return error(failure.error_code, failure.message), None
        if isinstance(failure, TimeoutError):
            return error(ErrorCode.request_timed_out,
                         "The metadata records were not committed in time."), None
        raise failure

    # --- brokers ------------------------------------------------------------------------

    async def RegisterBroker(  # noqa: N802
        self, request: pb.BrokerRegistrationRequest, context: grpc.aio.ServicerContext
    ) -> pb.BrokerRegistrationResponse:
        if request.cluster_id != self.cluster_id:
            return pb.BrokerRegistrationResponse(error=error(
                ErrorCode.inconsistent_cluster_id,
                f"cluster id {request.cluster_id!r} does not match {self.cluster_id!r}",
            ))
        controller = self.machine.controller
        try:
            epoch = await self.write(lambda: controller.register_broker(
                request.broker_id, request.incarnation_id,
                [Endpoint(e.name, e.host, e.port, e.security_protocol)
                 for e in request.endpoints],
                request.rack if request.HasField("rack") else None, now_ms(),
            ))
        except (NotController, MetadataError, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.BrokerRegistrationResponse(error=code, controller=hint)
        log.info("broker %d registered with epoch %d", request.broker_id, epoch)
        return pb.BrokerRegistrationResponse(error=error(), broker_epoch=epoch)

    async def BrokerHeartbeat(  # noqa: N802
        self, request: pb.BrokerHeartbeatRequest, context: grpc.aio.ServicerContext
    ) -> pb.BrokerHeartbeatResponse:
        controller = self.machine.controller
        try:
            result = await self.write(lambda: controller.broker_heartbeat(
                request.broker_id, request.broker_epoch, request.current_metadata_offset,
                request.want_fence, request.want_shutdown, now_ms(),
            ))
        except (NotController, MetadataError, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.BrokerHeartbeatResponse(error=code, controller=hint)
        self.driver.observer_fetched(request.broker_id, request.current_metadata_offset)
        return pb.BrokerHeartbeatResponse(
            error=error(), is_caught_up=result.is_caught_up, is_fenced=result.is_fenced,
            should_shutdown=result.should_shutdown,
        )

    async def FetchMetadata(  # noqa: N802
        self, request: pb.MetadataFetchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.MetadataBatch]:
        """The committed log after `from_offset`, then every batch as it is applied. A broker
        further behind than the retained batches gets the current image first."""
        cursor = request.from_offset
        machine = self.machine
        while True:
            changed = machine.next_change()
            if cursor < machine.image_offset:
                cursor = machine.applied
                yield pb.MetadataBatch(
                    offset=cursor, snapshot=True,
                    records=encode_batch(machine.controller.metadata.to_records()),
                )
            for offset, data in machine.batches_after(cursor):
                yield pb.MetadataBatch(offset=offset, records=data)
                cursor = offset
            await changed.wait()

    # --- admin --------------------------------------------------------------------------

    async def _topic_results(
        self, items: list[tuple[str, Callable[[], tuple[list[MetadataRecord], str]]]],
        dry_run: bool,
    ) -> pb.TopicResults:
        results = []
        for name, build in items:
            try:
                topic_id = await self.write(build, dry_run)
            except NotController:
                return pb.TopicResults(error=error(ErrorCode.not_controller),
                                       controller=self.hint())
            except (MetadataError, TimeoutError) as failure:
                code, _ = self._failure(failure)
                results.append(pb.TopicResult(name=name, error=code))
                continue
            results.append(pb.TopicResult(name=name, error=error(), topic_id=topic_id))
        return pb.TopicResults(error=error(), topics=results,
                               metadata_offset=self.machine.applied)

    async def CreateTopics(  # noqa: N802
        self, request: pb.CreateTopicsRequest, context: grpc.aio.ServicerContext
    ) -> pb.TopicResults:
        TopicBuild = Callable[[], tuple[list[MetadataRecord], str]]

        def creation(topic: pb.CreateTopicRequest) -> TopicBuild:
            def build() -> tuple[list[MetadataRecord], str]:
                topic_id = new_topic_id()
                records = self.machine.controller.create_topic(
                    topic.name, topic_id, topic.num_partitions, topic.replication_factor,
                    {c.name: c.value if c.HasField("value") else None for c in topic.configs},
                    {a.partition: list(a.broker_ids) for a in topic.assignments} or None,
                    internal=topic.internal,
                )
                return records, topic_id
            return build

        return await self._topic_results(
            [(topic.name, creation(topic)) for topic in request.topics], request.validate_only
        )

    async def DeleteTopics(  # noqa: N802
        self, request: pb.DeleteTopicsRequest, context: grpc.aio.ServicerContext
    ) -> pb.TopicResults:
        def deletion(name: str) -> Callable[[], tuple[list[MetadataRecord], str]]:
            def build() -> tuple[list[MetadataRecord], str]:
                controller = self.machine.controller
                topic_id = controller.metadata.topic(name).topic_id
                return controller.delete_topic(name), topic_id
            return build

        return await self._topic_results([(name, deletion(name)) for name in request.names],
                                         False)

    async def CreatePartitions(  # noqa: N802
        self, request: pb.CreatePartitionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.TopicResults:
        def growth(topic: pb.CreatePartitionsTopic
                   ) -> Callable[[], tuple[list[MetadataRecord], str]]:
            def build() -> tuple[list[MetadataRecord], str]:
                controller = self.machine.controller
                assignments = ([list(a.broker_ids) for a in topic.assignments]
                               if topic.has_assignments else None)
                records = controller.create_partitions(topic.name, topic.count, assignments)
                return records, controller.metadata.topic(topic.name).topic_id
            return build

        return await self._topic_results(
            [(topic.name, growth(topic)) for topic in request.topics], request.validate_only
        )

    async def AlterConfigs(  # noqa: N802
        self, request: pb.AlterConfigsRequest, context: grpc.aio.ServicerContext
    ) -> pb.AlterConfigsResponse:
        results = []
        for resource in request.resources:
            changes = {c.name: c.value if c.HasField("value") else None for c in resource.changes}

            def build(resource: pb.ConfigResource = resource,
                      changes: dict[str, str | None] = changes
                      ) -> tuple[list[MetadataRecord], None]:
                controller = self.machine.controller
                if resource.resource_type == ConfigResourceType.TOPIC:
                    return controller.alter_topic_configs(resource.resource_name, changes), None
                if resource.resource_type == ConfigResourceType.GROUP:
                    return controller.alter_group_configs(resource.resource_name, changes), None
                return controller.alter_broker_configs(resource.resource_name, changes), None

            result = pb.ConfigResult(resource_type=resource.resource_type,
                                     resource_name=resource.resource_name, error=error())
            try:
                await self.write(build, request.validate_only)
            except NotController:
                return pb.AlterConfigsResponse(error=error(ErrorCode.not_controller),
                                               controller=self.hint())
            except (MetadataError, TimeoutError) as failure:
                result.error.CopyFrom(self._failure(failure)[0])
            results.append(result)
        return pb.AlterConfigsResponse(error=error(), results=results,
                                       metadata_offset=self.machine.applied)

    async def AlterClientQuotas(  # noqa: N802
        self, request: pb.AlterClientQuotasRequest, context: grpc.aio.ServicerContext
    ) -> pb.AlterClientQuotasResponse:
        """Commits the changes of every (broker-validated) entity in one batch."""
        def build() -> tuple[list[MetadataRecord], None]:
            controller = self.machine.controller
            return [record for alteration in request.alterations
                    for record in controller.alter_client_quotas(
                        tuple(sorted((p.entity_type, p.entity_name if p.HasField("entity_name")
                                      else None) for p in alteration.entity)),
                        {c.key: c.value if c.HasField("value") else None
                         for c in alteration.changes})], None

        try:
            await self.write(build, request.validate_only)
        except (NotController, MetadataError, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.AlterClientQuotasResponse(error=code, controller=hint)
        return pb.AlterClientQuotasResponse(error=error(), metadata_offset=self.machine.applied)

    async def AlterPartition(  # noqa: N802
        self, request: pb.AlterPartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.AlterPartitionResponse:
        """Every ISR change of the request checked on its own, and all the accepted ones
        committed together: one metadata write however many partitions a broker asks for."""

        def build() -> tuple[list[MetadataRecord], list[pb.Error]]:
            controller = self.machine.controller
            records: list[MetadataRecord] = []
            outcomes = []
            for change in request.partitions:
                try:
                    records += controller.alter_partition(
                        request.broker_id, request.broker_epoch, change.topic_id,
                        change.partition, change.leader_epoch, change.partition_epoch,
                        tuple(change.new_isr))
                except MetadataError as failure:
                    outcomes.append(error(failure.error_code, failure.message))
                else:
                    outcomes.append(error())
            return records, outcomes

        try:
            outcomes = await self.write(build)
        except (NotController, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.AlterPartitionResponse(error=code, controller=hint)
        results = []
        for change, outcome in zip(request.partitions, outcomes, strict=True):
            result = pb.PartitionIsrResult(topic_id=change.topic_id, partition=change.partition,
                                           error=outcome)
            if outcome.code == ErrorCode.none:
                state = self.machine.controller.metadata.partition(change.topic_id,
                                                                   change.partition)
                result.leader, result.leader_epoch = state.leader, state.leader_epoch
                result.partition_epoch = state.partition_epoch
                result.isr.extend(state.isr)
            results.append(result)
        return pb.AlterPartitionResponse(error=error(), partitions=results)

    async def AlterPartitionReassignments(  # noqa: N802
        self, request: pb.AlterPartitionReassignmentsRequest, context: grpc.aio.ServicerContext
    ) -> pb.AlterPartitionReassignmentsResponse:
        targets = {(t.topic, t.partition): None if t.cancel else tuple(t.replicas)
                   for t in request.targets}
        try:
            outcomes = await self.write(
                lambda: self.machine.controller.alter_partition_reassignments(targets))
        except (NotController, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.AlterPartitionReassignmentsResponse(error=code, controller=hint)
        return pb.AlterPartitionReassignmentsResponse(
            error=error(), metadata_offset=self.machine.applied,
            results=self._results(outcomes))

    async def ElectLeaders(  # noqa: N802
        self, request: pb.ElectLeadersRequest, context: grpc.aio.ServicerContext
    ) -> pb.ElectLeadersResponse:
        partitions = None if request.all_partitions else [
            (p.topic, p.partition) for p in request.partitions]
        election = ElectionType(request.election_type)
        try:
            outcomes = await self.write(
                lambda: self.machine.controller.elect_leaders(election, partitions))
        except (NotController, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.ElectLeadersResponse(error=code, controller=hint)
        return pb.ElectLeadersResponse(error=error(), metadata_offset=self.machine.applied,
                                       results=self._results(outcomes))

    def _results(self, outcomes: dict[tuple[str, int], MetadataError | None]
                 ) -> list[pb.ReassignmentResult]:
        return [
            pb.ReassignmentResult(topic=topic, partition=partition, error=error() if failure
                                  is None else self._failure(failure)[0])
            for (topic, partition), failure in outcomes.items()
        ]

    async def CreateAcls(  # noqa: N802
        self, request: pb.CreateAclsRequest, context: grpc.aio.ServicerContext
    ) -> pb.CreateAclsResponse:
        acls = [acl_binding(message) for message in request.creations]
        try:
            outcomes = await self.write(
                lambda: self.machine.controller.create_acls(acls, new_topic_id))
        except (NotController, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.CreateAclsResponse(error=code, controller=hint)
        return pb.CreateAclsResponse(
            error=error(), metadata_offset=self.machine.applied,
            results=[error() if failure is None else self._failure(failure)[0]
                     for failure in outcomes])

    async def DeleteAcls(  # noqa: N802
        self, request: pb.DeleteAclsRequest, context: grpc.aio.ServicerContext
    ) -> pb.DeleteAclsResponse:
        filters = [acl_filter(message) for message in request.filters]
        try:
            outcomes = await self.write(lambda: self.machine.controller.delete_acls(filters))
        except (NotController, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.DeleteAclsResponse(error=code, controller=hint)
        return pb.DeleteAclsResponse(
            error=error(), metadata_offset=self.machine.applied,
            results=[pb.DeleteAclsResult(error=self._failure(outcome)[0])
                     if isinstance(outcome, MetadataError)
                     else pb.DeleteAclsResult(error=error(),
                                              deleted=[acl_message(acl) for acl in outcome])
                     for outcome in outcomes])

    async def AllocateProducerIds(  # noqa: N802
        self, request: pb.AllocateProducerIdsRequest, context: grpc.aio.ServicerContext
    ) -> pb.AllocateProducerIdsResponse:
        controller = self.machine.controller

        def build() -> tuple[list[MetadataRecord], tuple[int, int]]:
            records, first, count = controller.allocate_producer_ids(
                request.broker_id, request.broker_epoch
            )
            return records, (first, count)

        try:
            first, count = await self.write(build)
        except (NotController, MetadataError, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.AllocateProducerIdsResponse(error=code, controller=hint)
        return pb.AllocateProducerIdsResponse(error=error(), first_producer_id=first, count=count)

    async def AlterUserScramCredentials(  # noqa: N802
        self, request: pb.AlterUserScramCredentialsRequest, context: grpc.aio.ServicerContext
    ) -> pb.AlterUserScramCredentialsResponse:
        deletions = [scram_control.Deletion(d.name, d.mechanism) for d in request.deletions]
        upsertions = [scram_control.Upsertion(u.name, u.mechanism, u.iterations, u.salt,
                                              u.salted_password) for u in request.upsertions]
        try:
            results = await self.write(lambda: scram_control.alter_credentials(
                self.machine.controller.metadata, deletions, upsertions))
        except (NotController, MetadataError, TimeoutError) as failure:
            code, hint = self._failure(failure)
            return pb.AlterUserScramCredentialsResponse(error=code, controller=hint)
        return pb.AlterUserScramCredentialsResponse(
            error=error(), metadata_offset=self.machine.applied,
            results=[pb.UserResult(user=user, error=error(code, message or ""))
                     for user, code, message in results])

    async def DescribeQuorum(  # noqa: N802
        self, request: pb.DescribeQuorumRequest, context: grpc.aio.ServicerContext
    ) -> pb.DescribeQuorumResponse:
        """This node's view; the Raft leader's adds each voter's and observer's replication."""
        node = self.driver.node
        response = pb.DescribeQuorumResponse(
            node_id=node.node_id,
            leader_id=self.driver.leader,
            term=node.term, role=self.driver.role.value, commit_index=node.commit_index,
            applied_offset=self.driver.applied, log_end_offset=node.last_index,
            active=self.driver.active, error=error(),
        )
        replication = self.driver.describe_quorum()
        if replication is None:
            response.error.CopyFrom(error(ErrorCode.not_controller,
                                          "This controller is not the quorum's leader."))
            response.controller.CopyFrom(self.hint())
            return response
        voters, observers = replication
        response.voters.extend(_replicas(voters))
        response.observers.extend(_replicas(observers))
        return response


def _replicas(reports: list[ReplicaReport]) -> list[pb.QuorumReplica]:
    return [pb.QuorumReplica(replica_id=r.replica_id, log_end_offset=r.log_end_offset,
                             last_fetch_timestamp=r.last_fetch_timestamp,
                             last_caught_up_timestamp=r.last_caught_up_timestamp)
            for r in reports]
