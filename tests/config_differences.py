"""The intended differences between Odradek's configs and Kafka's, each with its reason: the
one allow-list that the catalogue's unit tests and the differential test against Apache Kafka
(tests/integration/jvm/test_config_catalogue.py) share."""

from __future__ import annotations

OWN_DEFAULTS = {
    "node.id": "required in Kafka; `odradek dev` runs as node 1 without configuration",
    "process.roles": "required in Kafka; `odradek dev` is a combined node",
    "controller.listener.names": "required in Kafka; Odradek names its gRPC listener CONTROLLER",
    "listeners": "Odradek binds loopback by default, not every interface",
    "log.dir": "Odradek keeps its data under ./data, not /tmp/kafka-logs",
    "log.roll.ms": "Kafka's default is null (log.roll.hours supplies it); Odradek keeps the "
                   "effective value, and describes it as null as Kafka does",
    "log.roll.jitter.ms": "as log.roll.ms, from log.roll.jitter.hours",
    "log.retention.ms": "as log.roll.ms, from log.retention.hours",
    "log.flush.interval.ms": "as log.roll.ms, from log.flush.scheduler.interval.ms",
    "log.flush.scheduler.interval.ms": "Odradek's flusher wakes every second; Kafka's default "
                                       "(Long.MAX_VALUE) never schedules it",
}
"""Odradek's own configs whose default differs from Kafka's."""

APPLIED_AT_START = frozenset({
    "listeners", "listener.security.protocol.map", "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm", "transaction.partition.verification.enable",
    "producer.id.expiration.ms", "max.connections", "max.connections.per.ip",
    "max.connections.per.ip.overrides",
})
"""Configs Kafka updates dynamically that Odradek acts on only at start: it describes them as
read-only and refuses to alter them (INVALID_REQUEST, as Kafka refuses a read-only config)
rather than accept a change it would not apply."""

ODRADEK_ONLY = {
    "cluster.id": "the cluster id `odradek storage format` writes, taken from the config",
    "super.users": "StandardAuthorizer's own config, outside Kafka's broker ConfigDef: Kafka "
                   "describes it only when set",
    "allow.everyone.if.no.acl.found": "as super.users",
    "leader.imbalance.per.broker.percentage": "removed from Kafka 4; Odradek's controller "
                                              "still honours it",
    "metrics.port": "Odradek's Prometheus endpoint (Kafka exports JMX)",
}
"""Odradek's configs outside Kafka's broker ConfigDef; DescribeConfigs lists them always."""

VALUE_DIFFERENCES = {
    "log.dir": "the data directory: Odradek's harness sets it, Kafka's uses log.dirs",
    "log.dirs": "the data directory, a path of each broker's own",
    "listeners": "ports of each broker's own",
    "advertised.listeners": "ports of each broker's own",
    "controller.quorum.voters": "`odradek dev` runs its one controller without a voters list",
    "log.flush.scheduler.interval.ms": OWN_DEFAULTS["log.flush.scheduler.interval.ms"],
    "log.flush.interval.ms": "Kafka's synonym log.flush.scheduler.interval.ms differs (above)",
}
"""Broker configs whose described value or synonyms differ between the two brokers of the
differential test; their type, read-only and sensitive flags are still compared."""

CLUSTER_DEFAULTS = {
    "min.insync.replicas": "kafka-storage format writes it as a cluster-wide dynamic default "
                           "(KIP-966's eligible leader replicas); `odradek storage` does not",
}
"""Entries of the cluster-default broker resource that only Kafka has."""

SMALL_SEGMENTS = ("segment.bytes", "log.segment.bytes")
"""Kafka 4 refuses segments under 1 MiB (tests use internal.segment.bytes); Odradek accepts
down to 14 bytes, which its own tests of rolling and retention use."""

CLASS_NAMES = ("Kafka refuses a CLASS config naming a class its JVM cannot load; Odradek, "
               "without a JVM, accepts any class name for the CLASS configs it does not act on")
