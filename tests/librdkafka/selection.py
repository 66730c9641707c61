"""Which of librdkafka's regression tests CI runs against Odradek (the full suite runs by
hand: scripts/librdkafka_suite.sh run). CI_SUBSET passed in the full runs of both
configurations and takes seconds each; each test is alone under its number (the runner
selects tests by number). EXCLUDED_FAMILIES says why the rest are not in CI."""

from __future__ import annotations

TIMEOUT = 120.0
"""Per test, seconds: generous, for a shared 2-core machine."""

CI_SUBSET = {
    "0001_multiobj": "producers created and destroyed around one topic",
    "0012_produce_consume": "produce to and consume from every partition, by both interfaces",
    "0013_null_msgs": "null keys and values round trip",
    "0029_assign_offset": "assign() at stored, logical and absolute offsets",
    "0031_get_offsets": "ListOffsets (query_watermark_offsets, offsets_for_times)",
    "0019_list_groups": "ListGroups and DescribeGroups of live consumer groups",
    "0052_msg_timestamps": "CreateTime and LogAppendTime topics made by KAFKA_PATH's kafka-topics",
    "0063_clusterid": "the cluster id and controller id from Metadata",
    "0073_headers": "record headers round trip",
    "0099_commit_metadata": "committed offsets keep their metadata",
    "0103_transactions": "transactional producer: commit, abort, fencing, send offsets",
    "0109_auto_create_topics": "auto creation, and a topic denied by KAFKA_PATH's kafka-acls",
    "0115_producer_auth": "produce to a topic denied by kafka-acls fails TOPIC_AUTHORIZATION",
    "0130_store_offsets": "offsets_store for assigned partitions only",
}
"""Name -> what it covers."""

EXCLUDED_FAMILIES = {
    "017": "share consumers (0170-0185, KIP-932): Odradek has no share groups yet",
    "0038": "a throughput benchmark (performance, not compatibility)",
    "0041": "GBs of 5 MB messages: minutes on a shared 2-core machine",
    "0045": "five subscription-update tests under one number, minutes together",
    "0113": "cooperative rebalancing scenarios: many minutes, and a Java helper",
}
"""Name prefix -> why CI leaves those tests to the hand run."""
