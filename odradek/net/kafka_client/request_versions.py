"""The one table of the (api key, version) of every Kafka request Odradek sends as a client:
the operator tools, the `groups`/`transactions` commands, the mirror, the Kafka Exporter and
the broker's own inter-broker clients (replica fetchers, transaction markers and
verification). Each name is Kafka's API name, upper case, with a suffix where one API is sent
at two versions for two purposes; each version is one the broker serves
(tests/unit/net/test_request_versions.py checks both against odradek/broker/apis.py).

The share coordinator's state requests (odradek/broker/share_persister.py) keep their own."""

from __future__ import annotations

ApiVersion = tuple[int, int]
"""(api key, version), as `odradek.protocol.codec.build_request` takes them."""

PRODUCE: ApiVersion = (0, 9)
FETCH: ApiVersion = (1, 12)
"""Fetch v12: topic names (v13 on names topic ids), flexible, KIP-951 leader hints; the
replica fetchers put replica_id in the body, as Kafka's did before KIP-903."""
LIST_OFFSETS: ApiVersion = (2, 7)
METADATA: ApiVersion = (3, 12)
OFFSET_COMMIT: ApiVersion = (8, 9)
OFFSET_FETCH: ApiVersion = (9, 8)
FIND_COORDINATOR: ApiVersion = (10, 4)
DESCRIBE_GROUPS: ApiVersion = (15, 5)
LIST_GROUPS: ApiVersion = (16, 5)
"""v5 has the types filter (KIP-848); Kafka's Admin client sends it to a 4.x broker."""
SASL_HANDSHAKE: ApiVersion = (17, 1)
API_VERSIONS: ApiVersion = (18, 0)
CREATE_TOPICS: ApiVersion = (19, 5)
INIT_PRODUCER_ID: ApiVersion = (22, 4)
OFFSET_FOR_LEADER_EPOCH: ApiVersion = (23, 4)
ADD_PARTITIONS_TO_TXN: ApiVersion = (24, 3)
"""A producer's AddPartitionsToTxn: v3 is the last a client sends (v4+ are inter-broker)."""
ADD_PARTITIONS_TO_TXN_VERIFY: ApiVersion = (24, 4)
"""A partition leader's verification of a transactional produce (KIP-890)."""
END_TXN: ApiVersion = (26, 3)
WRITE_TXN_MARKERS: ApiVersion = (27, 1)
DESCRIBE_ACLS: ApiVersion = (29, 3)
CREATE_ACLS: ApiVersion = (30, 3)
DESCRIBE_CONFIGS: ApiVersion = (32, 4)
DESCRIBE_LOG_DIRS: ApiVersion = (35, 4)
SASL_AUTHENTICATE: ApiVersion = (36, 2)
INCREMENTAL_ALTER_CONFIGS: ApiVersion = (44, 1)
ALTER_PARTITION_REASSIGNMENTS: ApiVersion = (45, 0)
LIST_PARTITION_REASSIGNMENTS: ApiVersion = (46, 0)
DESCRIBE_CLIENT_QUOTAS: ApiVersion = (48, 1)
ALTER_CLIENT_QUOTAS: ApiVersion = (49, 1)
DESCRIBE_USER_SCRAM_CREDENTIALS: ApiVersion = (50, 0)
ALTER_USER_SCRAM_CREDENTIALS: ApiVersion = (51, 0)
DESCRIBE_QUORUM: ApiVersion = (55, 1)
DESCRIBE_PRODUCERS: ApiVersion = (61, 0)
DESCRIBE_TRANSACTIONS: ApiVersion = (65, 0)
LIST_TRANSACTIONS: ApiVersion = (66, 1)
CONSUMER_GROUP_DESCRIBE: ApiVersion = (69, 0)
LIST_CONFIG_RESOURCES: ApiVersion = (74, 1)
SHARE_GROUP_DESCRIBE: ApiVersion = (77, 1)
DESCRIBE_SHARE_GROUP_OFFSETS: ApiVersion = (90, 1)
ALTER_SHARE_GROUP_OFFSETS: ApiVersion = (91, 0)
DELETE_SHARE_GROUP_OFFSETS: ApiVersion = (92, 0)
