"""Admin writes a broker forwards to the active controller. Each returns once the controller
has committed the records and this broker has applied them, so the client that asked sees its
change in this broker's next Metadata answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from odradek.broker.controller_client import ControllerClient, ControllerUnavailable
from odradek.metadata.image import MetadataError
from odradek.metadata.records import ConfigRecord, MetadataRecord
from odradek.rpc import controller_pb2 as pb
from odradek.rpc.acls import acl_binding, acl_message
from odradek.security.acls import AclBinding, AclFilter
from odradek.security.client_quotas import Entity


def _entries(configs: Mapping[str, str | None]) -> list[pb.ConfigEntry]:
    return [pb.ConfigEntry(name=k, value=v) if v is not None else pb.ConfigEntry(name=k)
            for k, v in configs.items()]


def _raise_for(failure: pb.Error) -> None:
    if failure.code != ErrorCode.none:
        raise MetadataError(ErrorCode(failure.code), failure.message)


def _outcomes(results: Iterable[pb.ReassignmentResult]
              ) -> dict[tuple[str, int], MetadataError | None]:
    return {(r.topic, r.partition): None if r.error.code == ErrorCode.none
            else MetadataError(ErrorCode(r.error.code), r.error.message) for r in results}


class MetadataWriter:
    def __init__(self, client: ControllerClient,
                 wait_for_offset: Callable[[int, float], Awaitable[None]]) -> None:
        self.client = client
        self.wait_for_offset = wait_for_offset

    async def _call(self, method: Callable[[Any], Any], request: Any) -> Any:
        try:
            response = await self.client.call(method, request)
        except ControllerUnavailable as error:
            raise MetadataError(ErrorCode.request_timed_out, str(error)) from None
        _raise_for(response.error)
        # also after per-item errors: TOPIC_ALREADY_EXISTS means this broker should see it
        await self.wait_for_offset(response.metadata_offset, self.client.timeout_s)
        return response

    async def _one_topic(self, method: Callable[[Any], Any], request: Any) -> str:
        response = await self._call(method, request)
        (result,) = response.topics
        _raise_for(result.error)
        topic_id: str = result.topic_id
        return topic_id

    async def create_topic(
        self, name: str, num_partitions: int, replication_factor: int,
        configs: Mapping[str, str | None], assignments: Mapping[int, Sequence[int]] | None,
        validate_only: bool = False, internal: bool = False,
    ) -> str:
        """The new topic's id; raises MetadataError."""
        topic = pb.CreateTopicRequest(
            name=name, num_partitions=num_partitions, replication_factor=replication_factor,
            configs=_entries(configs), internal=internal,
            assignments=[pb.ReplicaAssignment(partition=p, broker_ids=list(b))
                         for p, b in (assignments or {}).items()],
        )
        return await self._one_topic(
            lambda s: s.CreateTopics,
            pb.CreateTopicsRequest(topics=[topic], validate_only=validate_only),
        )

    async def delete_topic(self, name: str) -> str:
        return await self._one_topic(lambda s: s.DeleteTopics,
                                     pb.DeleteTopicsRequest(names=[name]))

    async def create_partitions(self, name: str, count: int,
                                assignments: Sequence[Sequence[int]] | None,
                                validate_only: bool) -> None:
        topic = pb.CreatePartitionsTopic(
            name=name, count=count, has_assignments=assignments is not None,
            assignments=[pb.ReplicaAssignment(partition=i, broker_ids=list(b))
                         for i, b in enumerate(assignments or [])],
        )
        await self._one_topic(
            lambda s: s.CreatePartitions,
            pb.CreatePartitionsRequest(topics=[topic], validate_only=validate_only),
        )

    async def alter_partition_reassignments(
        self, targets: Mapping[tuple[str, int], Sequence[int] | None]
    ) -> dict[tuple[str, int], MetadataError | None]:
        """Reassign (or, for None, stop reassigning) partitions; the outcome per partition."""
        response = await self._call(lambda s: s.AlterPartitionReassignments,
                                    pb.AlterPartitionReassignmentsRequest(targets=[
                                        pb.ReassignmentTarget(
                                            topic=topic, partition=partition,
                                            cancel=replicas is None, replicas=replicas or ())
                                        for (topic, partition), replicas in targets.items()]))
        return _outcomes(response.results)

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> dict[tuple[str, int], MetadataError | None]:
        """Preferred (0) or unclean (1) leader elections; None: every partition."""
        response = await self._call(lambda s: s.ElectLeaders, pb.ElectLeadersRequest(
            election_type=election_type, all_partitions=partitions is None,
            partitions=[pb.TopicPartition(topic=t, partition=p) for t, p in partitions or ()]))
        return _outcomes(response.results)

    async def alter_client_quotas(self, changes: Mapping[Entity, Mapping[str, float | None]],
                                  validate_only: bool) -> None:
        """Commit the quota changes of validated entities (None removes a key)."""
        await self._call(lambda s: s.AlterClientQuotas, pb.AlterClientQuotasRequest(
            validate_only=validate_only, alterations=[
                pb.ClientQuotaAlteration(
                    entity=[pb.QuotaEntityPart(entity_type=kind, entity_name=name)
                            for kind, name in target],
                    changes=[pb.QuotaChange(key=key, value=value)
                             for key, value in settings.items()])
                for target, settings in changes.items()]))

    async def alter_configs(self, built: Sequence[MetadataRecord], validate_only: bool) -> None:
        """Commit config records of one resource (as ClusterMetadata's handlers build them)."""
        records = [record for record in built if isinstance(record, ConfigRecord)]
        if not records:
            return
        first = records[0]
        resource = pb.ConfigResource(
            resource_type=first.resource_type, resource_name=first.resource_name,
            changes=_entries({r.name: r.value for r in records}),
        )
        response = await self._call(
            lambda s: s.AlterConfigs,
            pb.AlterConfigsRequest(resources=[resource], validate_only=validate_only),
        )
        for result in response.results:
            _raise_for(result.error)

    async def create_acls(self, acls: Sequence[AclBinding]) -> list[MetadataError | None]:
        """Create ACLs; the outcome of each."""
        response = await self._call(lambda s: s.CreateAcls, pb.CreateAclsRequest(
            creations=[acl_message(acl) for acl in acls]))
        return [None if r.code == ErrorCode.none else MetadataError(ErrorCode(r.code), r.message)
                for r in response.results]

    async def delete_acls(self, filters: Sequence[AclFilter]
                          ) -> list[list[AclBinding] | MetadataError]:
        """Delete the ACLs each filter matches; per filter, those deleted or its error."""
        response = await self._call(lambda s: s.DeleteAcls, pb.DeleteAclsRequest(
            filters=[acl_message(f) for f in filters]))
        return [MetadataError(ErrorCode(r.error.code), r.error.message)
                if r.error.code != ErrorCode.none else [acl_binding(m) for m in r.deleted]
                for r in response.results]

    async def alter_user_scram_credentials(
        self, deletions: Sequence[tuple[str, int]],
        upsertions: Sequence[tuple[str, int, int, bytes, bytes]],
    ) -> list[tuple[str, ErrorCode, str | None]]:
        """Delete (user, mechanism) and upsert (user, mechanism, iterations, salt, salted
        password) SCRAM credentials; the outcome per user."""
        response = await self._call(
            lambda s: s.AlterUserScramCredentials,
            pb.AlterUserScramCredentialsRequest(
                deletions=[pb.ScramCredentialDeletion(name=n, mechanism=m) for n, m in deletions],
                upsertions=[pb.ScramCredentialUpsertion(
                    name=n, mechanism=m, iterations=i, salt=salt, salted_password=salted)
                    for n, m, i, salt, salted in upsertions]))
        return [(r.user, ErrorCode(r.error.code), r.error.message or None)
                for r in response.results]
