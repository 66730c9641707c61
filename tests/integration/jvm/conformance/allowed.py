"""The allow-list: every difference between Kafka's and Odradek's responses that the suite
accepts, each with its reason, and the lists whose elements are matched by a key rather than
by position. A difference found by the suite is either fixed in Odradek (then listed in
FIXED) or entered here.

Kinds: NORMALISED, values that legitimately differ between any two clusters (ids, ports,
times); DIFFERENCE, a divergence from Kafka not fixed (yet), with why. Config describes are
compared entry by entry in test_config_catalogue.py, with its own list of differences
(tests/config_differences.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

NORMALISED, DIFFERENCE = "normalised", "difference"


@dataclass(frozen=True)
class Allowed:
    path: str
    """A pattern (fnmatch: `*` spans dots too) over a difference's path, which starts with
    the API's name."""
    reason: str
    kind: str = NORMALISED
    versions: tuple[int, int] | None = None
    scenario: str | None = None
    """Only in this scenario (a behaviour that one sequence of requests shows)."""

    def covers(self, scenario: str, path: str, version: int) -> bool:
        if self.versions is not None and not self.versions[0] <= version <= self.versions[1]:
            return False
        if self.scenario is not None and self.scenario != scenario:
            return False
        return fnmatchcase(path, self.path)


KEYED: list[tuple[str, tuple[str, ...]]] = [
    ("api_versions.api_keys", ("api_key",)),
    ("*.brokers", ("node_id",)),
    ("*.topics", ("name", "topic")),
    ("*alter_configs.responses", ("resource_type", "resource_name")),
    ("*.responses", ("name", "topic")),
    ("*.configs", ("name",)),
    ("*.partitions", ("partition_index", "partition")),
    ("*.partition_responses", ("index",)),
    ("*.groups", ("group_id",)),
    ("delete_groups.results", ("group_id",)),
    ("*.acls", ("principal", "operation", "permission_type")),
    ("*.matching_acls", ("resource_name", "principal", "operation", "permission_type")),
    ("describe_transactions.transaction_states", ("transactional_id",)),
]
"""Lists compared element by element by these fields (the first one present), where Kafka
builds them from hash maps in no defined order."""


def list_key(path: str, version: int) -> Callable[[dict[str, Any]], Any] | None:
    """The key of a list's elements: the values of the named fields they have, joined."""
    for pattern, names in KEYED:
        if fnmatchcase(path, pattern):
            return lambda item, names=names: "/".join(
                str(item[name]) for name in names if name in item)
    return None


def _not_served(keys: str, what: str) -> list[Allowed]:
    return [Allowed(f"api_versions.api_keys.{key}", f"Odradek does not serve {what} (API "
                    f"{key}) yet", DIFFERENCE) for key in keys.split()]


def _older_max(key: int, version: int, what: str) -> Allowed:
    return Allowed(f"api_versions.api_keys.{key}.max_version",
                   f"Odradek serves up to v{version - 1}; v{version} adds {what}", DIFFERENCE)


ALLOWED: list[Allowed] = [
    # --- values that differ between any two clusters
    Allowed("*.throttle_time_ms", "throttling depends on each broker's own quota state"),
    Allowed("describe_log_dirs.results.*.log_dir", "each broker's own data directory"),
    Allowed("*.cluster_id", "each cluster draws its own id when formatted"),
    Allowed("*.brokers.*.port", "each broker listens on a free port of its own"),
    Allowed("*.topic_id", "topic ids are random UUIDs drawn at creation"),
    Allowed("*.port", "each broker listens on a free port of its own"),
    Allowed("*.producer_id", "producer ids come from each cluster's own id blocks"),
    Allowed("*member_id", "member ids are drawn at random by the coordinator"),
    Allowed("*.leader", "the group leader is a member id, drawn at random"),
    Allowed("describe_groups.groups.*.members.*.member_id", "drawn at random"),
    Allowed("describe_transactions.transaction_states.*.transaction_start_time",
            "the wall-clock time the transaction started on each broker"),
    Allowed("describe_log_dirs.results.*_bytes", "the free and total space of each data "
            "directory's file system at the time"),
    Allowed("describe_quorum.*", "the KRaft metadata log is each implementation's own: its "
            "offsets, fetch times and observers (Odradek's combined node lists its broker as "
            "an observer) differ", DIFFERENCE),
    Allowed("list_groups.groups*", "every group on the broker, among them other scenarios' "
            "groups whose states depend on timing"),
    Allowed("list_transactions.transaction_states*", "every transaction on the broker, among "
            "them other scenarios' whose states depend on timing"),
    Allowed("*error_message", "Odradek words its messages itself (often naming the resource "
            "and value), where Kafka has null, \"\" or its exception's text; clients show "
            "the text and act on the error code, which is compared", DIFFERENCE),
    Allowed("metadata.topics.*auto*", "auto-creation: Kafka answers the Metadata request "
            "before its controller has created the topic (UNKNOWN_TOPIC_OR_PARTITION, then the "
            "client retries), Odradek once the topic exists", DIFFERENCE,
            scenario="metadata_auto_create"),
    Allowed("metadata.topics.*unknown*", "the same auto-creation timing: Metadata v0-v3 "
            "always auto-create", DIFFERENCE, versions=(0, 3), scenario="metadata"),
    Allowed("produce.*", "a gzip batch whose payload is not gzip: Kafka decompresses every "
            "compressed batch on produce and answers UNKNOWN_SERVER_ERROR; Odradek's produce "
            "path checks batch headers and CRCs only and never decompresses (README: the hot "
            "paths never decode records), so the consumer gets the batch it was sent",
            DIFFERENCE, scenario="produce_compressed_garbage"),
    Allowed("create_acls", "an ACL creation with pattern type ANY: Kafka fails parsing the "
            "request and closes the connection; Odradek answers INVALID_REQUEST per ACL",
            DIFFERENCE, scenario="acls"),
    *(Allowed(api, "a filter of resource type UNKNOWN: Kafka closes the connection; Odradek "
              "answers INVALID_REQUEST", DIFFERENCE, scenario=api)
      for api in ("describe_acls", "delete_acls")),
    Allowed("consumer_group_describe.groups.*", "KIP-848 assignment: Kafka's coordinator "
            "computes target assignments asynchronously (the group shows Assigning, and bumps "
            "the group epoch once more), Odradek's in the heartbeat that triggers them, so the "
            "epochs and per-member assignments a describe sees right after differ",
            DIFFERENCE, scenario="consumer_group_heartbeat"),
    Allowed("consumer_group_heartbeat.member_epoch", "the same asynchronous assignment",
            DIFFERENCE, scenario="consumer_group_heartbeat"),
    Allowed("*.subscribed_topic_regex", "a member without a regex: Kafka \"\", Odradek null; "
            "clients read both as none", DIFFERENCE),
    Allowed("describe_transactions.*", "Kafka writes a commit's markers asynchronously (the "
            "transaction is still PrepareCommit, with its partitions, right after EndTxn), "
            "Odradek before answering EndTxn (CompleteCommit)", DIFFERENCE, scenario="end_txn"),
    Allowed("end_txn.error_code", "the same: a second EndTxn meets Kafka's PrepareCommit "
            "(CONCURRENT_TRANSACTIONS), Odradek's CompleteCommit (INVALID_TXN_STATE)",
            DIFFERENCE, scenario="end_txn"),
    Allowed("txn_offset_commit.topics.*.error_code", "TxnOffsetCommit v5 without "
            "AddOffsetsToTxn: Kafka at transaction.version 2 adds the offsets partition to "
            "the transaction itself (KIP-890 part 2); Odradek advertises no transaction.version "
            "and verifies as in version 1 (TRANSACTION_ABORTABLE)", DIFFERENCE,
            versions=(5, 5), scenario="txn_offset_commit"),
    Allowed("offset_fetch.groups.*.partitions.*.metadata", "an unauthorized partition's "
            "metadata: Kafka \"\", Odradek null", DIFFERENCE, scenario="authorization"),
    Allowed("produce.*", "Produce v12 with transaction.version 2 (KIP-890 part 2) adds the "
            "partition to the transaction implicitly, which Kafka does for any epoch here; "
            "Odradek advertises no transaction.version and verifies as in version 1",
            DIFFERENCE, versions=(12, 12), scenario="produce_fenced_epoch"),
    *(Allowed(path, "both assign a share group's partitions only once the share coordinator "
              "has initialized their state (InitializeShareGroupState), but Kafka recomputes "
              "the target at most every group.share.assignment.interval.ms, its first join "
              "lands at group epoch 2, and Odradek in the heartbeat that finds it due, so the "
              "epochs and assignments right after a join differ", DIFFERENCE,
              scenario=scenario)
      for scenario in ("share_group_heartbeat", "share_group_types")
      for path in ("share_group_heartbeat.member_epoch", "share_group_heartbeat.assignment*",
                   "share_group_describe.groups.*.group_epoch",
                   "share_group_describe.groups.*.assignment_epoch",
                   "share_group_describe.groups.*.members.*.member_epoch",
                   "share_group_describe.groups.*.members.*.assignment*")),
    # --- APIs and versions Kafka 4.3.1 serves and Odradek does not
    *_not_served("38 39 40 41", "delegation tokens"),
    *_not_served("78 79 83 84 85 86 87 90 91 92", "share groups (KIP-932) beyond membership"),
    *_not_served("88 89", "Streams groups (KIP-1071)"),
    *_not_served("80 81", "dynamic KRaft voters (KIP-853) on the broker listener"),
    *_not_served("57", "UpdateFeatures (features are fixed)"),
    *_not_served("64", "UnregisterBroker"),
    *_not_served("34", "AlterReplicaLogDirs (one log directory per broker)"),
    _older_max(0, 13, "topic ids instead of names (KIP-516)"),
    _older_max(1, 18, "the follower's high watermark (KIP-1166)"),
    _older_max(2, 11, "EARLIEST_PENDING_UPLOAD (-6) for tiered storage (KIP-1023)"),
    _older_max(3, 13, "a top-level error code (KIP-1102)"),
    _older_max(8, 10, "topic ids (KIP-848)"),
    _older_max(9, 10, "topic ids (KIP-848)"),
    _older_max(27, 2, "the transaction version of each marker (KIP-890)"),
    _older_max(35, 5, "the error of each log directory's listing (KIP-1101)"),
    _older_max(66, 2, "a transactional id pattern filter (KIP-1152)"),
    Allowed("api_versions.*features*", "Odradek's feature levels are fixed "
            "(odradek/broker/features.py: metadata.version 4.0-IV3, group.version 1, "
            "kraft.version 0, share.version 1, transaction.version 1, not 2, whose KIP-890 "
            "part 2 its leaders do not serve); Kafka 4.3.1 runs higher levels and lists "
            "streams.version and eligible.leader.replicas.version too", DIFFERENCE),
    Allowed("create_topics.topics.*.configs.min.insync.replicas.config_source",
            "Kafka's storage format writes a cluster-wide dynamic min.insync.replicas "
            "(KIP-966's bootstrap records), so Kafka's source is DYNAMIC_DEFAULT_BROKER_CONFIG; "
            "Odradek's format writes none", DIFFERENCE),
]


def explain(scenario: str, path: str, version: int) -> Allowed | None:
    return next((entry for entry in ALLOWED if entry.covers(scenario, path, version)), None)


FIXED: list[str] = [
    "CreateTopics: a new topic's configs as Kafka's controller resolves them (internal configs "
    "left out; the source of each from its broker synonyms under any name, STATIC_BROKER_CONFIG "
    "for retention.ms from a static log.retention.hours; were all DEFAULT_CONFIG)",
    "Metadata: a missing topic's topic_authorized_operations (was -2^31)",
    "Fetch: an out-of-range offset's high watermark, last stable and log start offsets "
    "(-1, as every replica-manager error; were the log's)",
    "Fetch: unknown topic, topic id or partition and refused topics carry an empty list of "
    "aborted transactions (was null)",
    "ListOffsets: MAX_TIMESTAMP before v7, EARLIEST_LOCAL before v8 and LATEST_TIERED "
    "before v9 are UNSUPPORTED_VERSION (were answered)",
    "ListOffsets: LATEST_TIERED without tiered storage is offset -1 (was the high watermark)",
    "ListOffsets: current_leader_epoch is checked (UNKNOWN_LEADER_EPOCH / FENCED_LEADER_EPOCH; "
    "was ignored)",
    "ListOffsets: the leader epoch of the offset found, -1 when none (was always 0)",
    "Produce: the log start offset of a partition whose append failed (sequence, epoch, "
    "timestamp, ISR errors; was -1)",
    "Produce: a duplicate batch's log_append_time is its timestamp (was null)",
    "CreateTopics: a refused topic's configs are an empty list (was null)",
    "OffsetDelete: a topic the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION (was none)",
    "ConsumerGroupDescribe: a missing group's epochs are 0 (were -1)",
    "DescribeTransactions: a missing transaction's start time and epoch are 0 (were -1; -1 "
    "as a start time is not even a valid instant to kio)",
    "InitProducerId before v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn before v2: "
    "PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH, as to clients predating KIP-588",
]
"""Differences this suite found and Odradek now answers as Kafka does."""
