"""The transaction coordinator's runtime: a shard per partition of `__transaction_state` this
broker leads, in the shell every internal-topic coordinator shares, plus the marker sender
that completes commits and aborts."""

from __future__ import annotations

from odradek.broker.broker import Broker
from odradek.broker.coordinator_runtime import CoordinatorRuntime
from odradek.broker.metadata_writer import MetadataWriter
from odradek.broker.replica_manager import ReplicaManager
from odradek.broker.txn_markers import MarkerSender, MarkerWriter
from odradek.metadata.image import TRANSACTION_STATE_TOPIC
from odradek.runtime.clock import now_ms
from odradek.txn.coordinator import MarkerJob, Output, TransactionCoordinatorShard, TxnConfig
from odradek.txn.log_records import TransactionLogValue, decode, encode


class TransactionCoordinatorRuntime(CoordinatorRuntime[TransactionCoordinatorShard, Output]):
    topic = TRANSACTION_STATE_TOPIC
    name = "transaction"

    def __init__(self, broker: Broker, replicas: ReplicaManager, writer: MetadataWriter,
                 markers: MarkerWriter) -> None:
        super().__init__(broker, replicas, writer)
        config = broker.config
        self.config = TxnConfig(
            transaction_max_timeout_ms=config.integer("transaction.max.timeout.ms"),
            transactional_id_expiration_ms=config.integer("transactional.id.expiration.ms"),
            abort_timed_out_check_interval_ms=config.integer(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            remove_expired_interval_ms=config.integer(
                "transaction.remove.expired.transaction.cleanup.interval.ms"),
        )
        self.markers = MarkerSender(broker, markers, self._markers_written)
        self._job_partition: dict[MarkerJob, int] = {}
        broker.metrics.register_transactions(self._ongoing, self._producer_id_count)

    def new_shard(self, partition: int) -> TransactionCoordinatorShard:
        epoch = self.replicas.leader_epoch((self.topic, partition))
        return TransactionCoordinatorShard(self.config, -1 if epoch is None else epoch)

    def replay(self, shard: TransactionCoordinatorShard, key: bytes, value: bytes | None,
               producer_id: int) -> None:
        shard.replay(*decode(key, value))

    def encode(self, record: tuple[str, TransactionLogValue | None]) -> tuple[bytes, bytes | None]:
        return encode(*record)

    def loaded(self, partition: int, shard: TransactionCoordinatorShard) -> Output:
        return shard.loaded(now_ms())

    def topic_settings(self) -> tuple[int, int, dict[str, str]]:
        config = self.broker.config
        return (config.integer("transaction.state.log.num.partitions"),
                config.integer("transaction.state.log.replication.factor"),
                {"cleanup.policy": "compact", "compression.type": "uncompressed",
                 "min.insync.replicas": str(config.integer("transaction.state.log.min.isr")),
                 "unclean.leader.election.enable": "false",
                 "segment.bytes": str(config.integer("transaction.state.log.segment.bytes"))})

    def released(self, partition: int, out: Output) -> None:
        if out.timed_out:
            self.broker.metrics.timed_out_aborts.inc(out.timed_out)
        for job in out.markers:
            self._job_partition[job] = partition
            self.markers.send(job)

    def acts_on_release(self, out: Output) -> bool:
        return bool(out.markers)

    def _markers_written(self, job: MarkerJob) -> None:
        partition = self._job_partition.pop(job, None)
        shard = None if partition is None else self.shards.get(partition)
        if partition is None or shard is None:
            return  # another broker coordinates it now and resends the markers
        self.write_if_led(partition, shard.markers_written(
            job.transactional_id, job.producer_id, job.producer_epoch, now_ms()))

    def _ongoing(self) -> int:
        return sum(shard.ongoing_count() for shard in list(self.shards.values()))

    def _producer_id_count(self) -> int:
        return sum(len(log_.producers.producers) for _, log_ in self.broker.logs.logs())

    def close(self) -> None:
        self.markers.close()
        super().close()
