"""Odradek's Grafana dashboards, written as code: `python observability/grafana/generate.py`
rewrites dashboards/*.json beside this file, which Grafana's provisioning loads and which are
committed (tests/unit/project/test_observability.py checks they equal this file's output).

A dashboard is a list of rows of panels; a panel is a title, a unit and PromQL queries over
Kafka's metric names (as Prometheus' JMX exporter and Strimzi name them). Every query selects
with the `cluster` and `instance` template variables (`sel`), so that one Grafana serves
several clusters. Layout (grid positions, ids, refIds) is computed, never written by hand."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odradek.exporter.audit_series import (
    BUCKETS,
    EXTRA_RECORDS,
    FAILED,
    LAST_RUN,
    MISSING_RECORDS,
)

DASHBOARDS_DIR = Path(__file__).parent / "dashboards"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24
STAT_WIDTH, STAT_HEIGHT = 4, 4
GRAPH_WIDTH, GRAPH_HEIGHT = 12, 8
RATE = "$__rate_interval"


def sel(metric: str, matchers: str = "") -> str:
    """`metric{cluster=~"$cluster",instance=~"$instance",<matchers>}`."""
    extra = f",{matchers}" if matchers else ""
    return f'{metric}{{cluster=~"$cluster",instance=~"$instance"{extra}}}'


def rate(metric: str, matchers: str = "") -> str:
    return f"rate({sel(metric, matchers)}[{RATE}])"


@dataclass(frozen=True, slots=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    queries: tuple[Query, ...]
    unit: str = "short"
    kind: str = "timeseries"
    description: str = ""


def graph(title: str, *queries: tuple[str, str], unit: str = "short",
          description: str = "") -> Panel:
    """A time series panel; each query is (PromQL, legend format)."""
    return Panel(title, tuple(Query(e, legend) for e, legend in queries), unit,
                 description=description)


def stat(title: str, expr: str, unit: str = "short", description: str = "") -> Panel:
    return Panel(title, (Query(expr),), unit, "stat", description)


@dataclass(slots=True)
class Dashboard:
    uid: str
    title: str
    description: str
    rows: list[tuple[str, list[Panel]]]
    variables: list[dict[str, Any]] = field(default_factory=list)


def query_variable(name: str, label: str, expr: str, multi: bool = True) -> dict[str, Any]:
    """A variable from `label_values(...)`; multi-valued ones offer All (`.*`)."""
    return {
        "name": name, "label": label, "type": "query", "datasource": DATASOURCE,
        "query": expr, "definition": expr, "refresh": 2, "sort": 1,
        "multi": multi, "includeAll": multi, **({"allValue": ".*"} if multi else {}),
        "current": {},
    }


STANDARD_VARIABLES = [
    {"name": "datasource", "label": "Data source", "type": "datasource",
     "query": "prometheus", "current": {}},
    query_variable("cluster", "Cluster", 'label_values(up{role!=""}, cluster)', multi=False),
    query_variable("instance", "Instance",
                   'label_values(up{cluster=~"$cluster",role!=""}, instance)'),
]


def panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    width, height = ((STAT_WIDTH, STAT_HEIGHT) if panel.kind == "stat"
                     else (GRAPH_WIDTH, GRAPH_HEIGHT))
    targets = [{"datasource": DATASOURCE, "expr": q.expr, "legendFormat": q.legend or "__auto",
                "refId": chr(ord("A") + i)} for i, q in enumerate(panel.queries)]
    data: dict[str, Any] = {
        "id": panel_id, "type": panel.kind, "title": panel.title, "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": width, "h": height},
        "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
        "targets": targets,
    }
    if panel.description:
        data["description"] = panel.description
    if panel.kind == "stat":
        data["options"] = {"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "value",
                           "graphMode": "area"}
    else:
        data["options"] = {"legend": {"displayMode": "list", "placement": "bottom"},
                           "tooltip": {"mode": "multi"}}
    return data


def dashboard_json(dashboard: Dashboard) -> dict[str, Any]:
    """Rows stack vertically; within a row, panels fill the 24-column grid left to right."""
    panels: list[dict[str, Any]] = []
    y = 0
    for row_title, row_panels in dashboard.rows:
        panels.append({"id": len(panels) + 1, "type": "row", "title": row_title,
                       "collapsed": False, "gridPos": {"x": 0, "y": y, "w": GRID_WIDTH, "h": 1},
                       "panels": []})
        y += 1
        x = row_height = 0
        for panel in row_panels:
            item = panel_json(panel, len(panels) + 1, x, y)
            width, height = item["gridPos"]["w"], item["gridPos"]["h"]
            if x + width > GRID_WIDTH:
                x, y = 0, y + row_height
                item["gridPos"].update(x=x, y=y)
                row_height = 0
            panels.append(item)
            x += width
            row_height = max(row_height, height)
        y += row_height
    return {
        "uid": dashboard.uid, "title": dashboard.title, "description": dashboard.description,
        "tags": ["odradek", "kafka"], "timezone": "browser", "editable": True,
        "schemaVersion": 39, "version": 1, "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": STANDARD_VARIABLES + dashboard.variables},
        "annotations": {"list": []}, "links": [], "panels": panels,
    }


def process_health() -> tuple[str, list[Panel]]:
    """The row every process's own figures fill (prometheus-client's process collector and
    the event loop's lag), on the dashboards of brokers and of controllers."""
    by = "sum by (instance)"
    return ("Process health", [
        graph("Event loop lag p99",
              ("histogram_quantile(0.99, sum by (le, instance) "
               f"({rate('odradek_event_loop_lag_seconds_bucket')}))", "{{instance}}"),
              unit="s", description="How late the event loop ran a timer that was due."),
        graph("CPU", (f"{by} ({rate('process_cpu_seconds_total')})", "{{instance}}"),
              unit="percentunit"),
        graph("Resident memory", (f"{by} ({sel('process_resident_memory_bytes')})",
                                  "{{instance}}"), unit="bytes"),
        graph("Open file descriptors", (f"{by} ({sel('process_open_fds')})", "{{instance}}")),
    ])


def overview() -> Dashboard:
    return Dashboard("odradek-overview", "Odradek / Cluster overview",
                     "Health and throughput of one cluster at a glance.", [
        ("Health", [
            stat("Brokers online", f"count({sel('kafka_server_replicamanager_leadercount')})"),
            stat("Active controllers",
                 f"sum({sel('kafka_controller_kafkacontroller_activecontrollercount')})",
                 description="Exactly 1 is healthy."),
            stat("Fenced brokers",
                 f"max({sel('kafka_controller_kafkacontroller_fencedbrokercount')})"),
            stat("Topics", f"max({sel('kafka_controller_kafkacontroller_globaltopiccount')})"),
            stat("Partitions",
                 f"max({sel('kafka_controller_kafkacontroller_globalpartitioncount')})"),
            stat("Online replicas", f"sum({sel('kafka_server_replicamanager_partitioncount')})"),
            stat("Under-replicated partitions",
                 f"sum({sel('kafka_server_replicamanager_underreplicatedpartitions')})"),
            stat("Partitions at min ISR", f"sum({sel('kafka_cluster_partition_atminisr')})"),
            stat("Partitions under min ISR",
                 f"sum({sel('kafka_cluster_partition_underminisr')})"),
            stat("Offline partitions",
                 f"sum({sel('kafka_controller_kafkacontroller_offlinepartitionscount')})"),
            stat("Offline log directories",
                 f"sum({sel('kafka_log_logmanager_offlinelogdirectorycount')})"),
            stat("Unclean leader elections / s",
                 f"sum({rate('kafka_controller_controllerstats_uncleanleaderelections_total')})",
                 unit="ops"),
        ]),
        ("Throughput", [
            graph("Bytes in / out",
                  (f"sum({rate('kafka_server_brokertopicmetrics_bytesin_total')})", "in"),
                  (f"sum({rate('kafka_server_brokertopicmetrics_bytesout_total')})", "out"),
                  unit="Bps"),
            graph("Messages in",
                  (f"sum({rate('kafka_server_brokertopicmetrics_messagesin_total')})",
                   "messages/s"), unit="cps"),
            graph("Produce and fetch requests",
                  (f"sum({rate('kafka_server_brokertopicmetrics_totalproducerequests_total')})",
                   "produce"),
                  (f"sum({rate('kafka_server_brokertopicmetrics_totalfetchrequests_total')})",
                   "fetch"), unit="reqps"),
            graph("Consumer group lag",
                  (f"sum by (consumergroup) ({sel('kafka_consumergroup_lag')})",
                   "{{consumergroup}}"),
                  description="Records behind the log end, summed over a group's partitions."),
        ]),
    ])


def brokers() -> Dashboard:
    by = "sum by (instance)"
    return Dashboard("odradek-brokers", "Odradek / Brokers",
                     "Per-broker traffic, requests, replication and resources.", [
        ("Traffic", [
            graph("Bytes in", (f"{by} ({rate('kafka_server_brokertopicmetrics_bytesin_total')})",
                               "{{instance}}"), unit="Bps"),
            graph("Bytes out",
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_bytesout_total')})",
                   "{{instance}}"), unit="Bps"),
            graph("Messages in",
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_messagesin_total')})",
                   "{{instance}}"), unit="cps"),
            graph("Replication bytes in / out",
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_replicationbytesin_total')})",
                   "{{instance}} in"),
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_replicationbytesout_total')})",
                   "{{instance}} out"), unit="Bps"),
        ]),
        ("Requests", [
            graph("Produce requests (total / failed)",
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_totalproducerequests_total')})",
                   "{{instance}} total"),
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_failedproducerequests_total')})",
                   "{{instance}} failed"), unit="reqps"),
            graph("Fetch requests (total / failed)",
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_totalfetchrequests_total')})",
                   "{{instance}} total"),
                  (f"{by} ({rate('kafka_server_brokertopicmetrics_failedfetchrequests_total')})",
                   "{{instance}} failed"), unit="reqps"),
            graph("Requests by API",
                  (f"sum by (request) ({rate('kafka_network_requestmetrics_requests_total')})",
                   "{{request}}"), unit="reqps"),
            graph("Request time p99 by API",
                  ("histogram_quantile(0.99, sum by (le, request) "
                   f"({rate('kafka_network_requestmetrics_totaltimems_bucket')}))",
                   "{{request}}"), unit="ms",
                  description="From the request's arrival to its response being ready."),
            graph("Errors by API and code",
                  ("sum by (request, error) "
                   f"({rate('kafka_network_requestmetrics_errors_total')})",
                   "{{request}} {{error}}"), unit="cps"),
            graph("Connections per listener",
                  ("sum by (instance, listener) "
                   f"({sel('kafka_server_socket_server_metrics_connection_count')})",
                   "{{instance}} {{listener}}")),
        ]),
        ("Capacity", [
            graph("Network processor idle",
                  (f"{by} ({sel('kafka_network_socketserver_networkprocessoravgidle_percent')})",
                   "{{instance}}"), unit="percentunit"),
            graph("Request handler idle",
                  (f"{by} ("
                   f"{sel('kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent')})",
                   "{{instance}}"), unit="percentunit"),
            graph("Disk reads / writes",
                  (f"{by} ({rate('kafka_server_kafkaserver_linux_disk_read_bytes')})",
                   "{{instance}} read"),
                  (f"{by} ({rate('kafka_server_kafkaserver_linux_disk_write_bytes')})",
                   "{{instance}} write"), unit="Bps"),
            graph("Log size", (f"{by} ({sel('kafka_log_log_size')})", "{{instance}}"),
                  unit="bytes"),
            graph("Log cleaner: dirtiest log",
                  (f"max by (instance) ({sel('kafka_log_logcleanermanager_max_dirty_percent')})",
                   "{{instance}}"), unit="percent"),
        ]),
        ("Replication", [
            graph("Partitions and leaders",
                  (f"{by} ({sel('kafka_server_replicamanager_partitioncount')})",
                   "{{instance}} partitions"),
                  (f"{by} ({sel('kafka_server_replicamanager_leadercount')})",
                   "{{instance}} leaders")),
            graph("Under-replicated / under min ISR",
                  (f"{by} ({sel('kafka_server_replicamanager_underreplicatedpartitions')})",
                   "{{instance}} under-replicated"),
                  (f"{by} ({sel('kafka_server_replicamanager_underminisrpartitioncount')})",
                   "{{instance}} under min ISR")),
            graph("ISR shrinks / expands",
                  (f"{by} ({rate('kafka_server_replicamanager_isrshrinks_total')})",
                   "{{instance}} shrinks"),
                  (f"{by} ({rate('kafka_server_replicamanager_isrexpands_total')})",
                   "{{instance}} expands"), unit="ops"),
            graph("Replica fetcher max lag",
                  (f"max by (instance) ({sel('kafka_server_replicafetchermanager_maxlag')})",
                   "{{instance}}"), description="Records the most lagging followed "
                  "partition is behind its leader."),
        ]),
        process_health(),
    ])


def quorum() -> Dashboard:
    by = "max by (instance)"
    channel = "kafka_server_raftchannelmetrics_"
    return Dashboard("odradek-quorum", "Odradek / Controller quorum",
                     "The KRaft controller quorum and the metadata log.", [
        ("Quorum", [
            stat("Active controllers",
                 f"sum({sel('kafka_controller_kafkacontroller_activecontrollercount')})"),
            stat("Quorum leader", f"max({sel('kafka_server_raftmetrics_current_leader')})",
                 description="Node id of the leader (-1: none known)."),
            stat("Epoch", f"max({sel('kafka_server_raftmetrics_current_epoch')})"),
            stat("Active brokers",
                 f"max({sel('kafka_controller_kafkacontroller_activebrokercount')})"),
            stat("Fenced brokers",
                 f"max({sel('kafka_controller_kafkacontroller_fencedbrokercount')})"),
            stat("Metadata high watermark",
                 f"max({sel('kafka_server_raftmetrics_high_watermark')})"),
            graph("Raft state", (f"{sel('kafka_server_raftmetrics_current_state')} == 1",
                                 "{{instance}} {{state}}{{current_state}}")),
            graph("Voted for", (f"{by} ({sel('kafka_server_raftmetrics_current_vote')})",
                                "{{instance}}")),
        ]),
        ("Metadata log", [
            graph("Log end offset / high watermark / applied",
                  (f"{by} ({sel('kafka_server_raftmetrics_log_end_offset')})",
                   "{{instance}} log end"),
                  (f"{by} ({sel('kafka_server_raftmetrics_high_watermark')})",
                   "{{instance}} high watermark"),
                  (f"{by} ({sel('kafka_server_raftmetrics_applied_offset')})",
                   "{{instance}} applied")),
            graph("Brokers' applied metadata offset",
                  (f"{by} "
                   f"({sel('kafka_server_brokermetadatametrics_last_applied_record_offset')})",
                   "{{instance}}")),
            graph("Commit latency",
                  (f"{by} ({sel('kafka_server_raftmetrics_commit_latency_avg')})",
                   "{{instance}} avg"),
                  (f"{by} ({sel('kafka_server_raftmetrics_commit_latency_max')})",
                   "{{instance}} max"), unit="ms"),
            graph("Records appended / fetched",
                  (f"{by} ({sel('kafka_server_raftmetrics_append_records_rate')})",
                   "{{instance}} appended"),
                  (f"{by} ({sel('kafka_server_raftmetrics_fetch_records_rate')})",
                   "{{instance}} fetched"), unit="cps"),
        ]),
        ("Raft channel", [
            graph("Bytes in / out",
                  (f"sum by (instance) ({rate(channel + 'incoming_byte_total')})",
                   "{{instance}} in"),
                  (f"sum by (instance) ({rate(channel + 'outgoing_byte_total')})",
                   "{{instance}} out"), unit="Bps"),
            graph("Requests / responses",
                  (f"sum by (instance) ({rate(channel + 'request_total')})",
                   "{{instance}} requests"),
                  (f"sum by (instance) ({rate(channel + 'response_total')})",
                   "{{instance}} responses"), unit="reqps"),
        ]),
        process_health(),
    ])


def topics() -> Dashboard:
    topic = 'topic=~"$topic"'
    return Dashboard("odradek-topics", "Odradek / Topics and partitions",
                     "Topics, partitions, replicas and offsets.", [
        ("Summary", [
            stat("Topics", f"count({sel('kafka_topic_partitions', topic)})"),
            stat("Partitions", f"sum({sel('kafka_topic_partitions', topic)})"),
            stat("Replicas", f"sum({sel('kafka_topic_partition_replicas', topic)})"),
            stat("In-sync replicas",
                 f"sum({sel('kafka_topic_partition_in_sync_replica', topic)})"),
            stat("Under-replicated",
                 f"sum({sel('kafka_topic_partition_under_replicated_partition', topic)})"),
            stat("Not on preferred leader",
                 f"sum({sel('kafka_topic_partition_leader_is_preferred', topic)} < bool 1)"),
        ]),
        ("Topics", [
            graph("Messages in per topic",
                  (f"sum by (topic) ({rate('kafka_topic_partition_current_offset', topic)})",
                   "{{topic}}"), unit="cps"),
            graph("Bytes in per topic",
                  ("sum by (topic) "
                   f"({rate('kafka_server_brokertopicmetrics_bytesin_total', topic)})",
                   "{{topic}}"), unit="Bps"),
            graph("Log size per topic",
                  (f"sum by (topic) ({sel('kafka_log_log_size', topic)})", "{{topic}}"),
                  unit="bytes", description="Summed over replicas."),
            graph("Min ISR per topic",
                  (f"sum by (topic) ({sel('kafka_cluster_partition_atminisr', topic)})",
                   "{{topic}} at min ISR"),
                  (f"sum by (topic) ({sel('kafka_cluster_partition_underminisr', topic)})",
                   "{{topic}} under min ISR")),
        ]),
        ("Partitions", [
            graph("Latest offsets",
                  (f"max by (topic, partition) "
                   f"({sel('kafka_topic_partition_current_offset', topic)})",
                   "{{topic}}-{{partition}}")),
            graph("Oldest offsets",
                  (f"max by (topic, partition) "
                   f"({sel('kafka_topic_partition_oldest_offset', topic)})",
                   "{{topic}}-{{partition}}")),
            graph("Replicas per partition",
                  (f"max by (topic, partition) "
                   f"({sel('kafka_cluster_partition_replicascount', topic)})",
                   "{{topic}}-{{partition}}")),
            graph("In-sync replicas per partition",
                  (f"max by (topic, partition) "
                   f"({sel('kafka_topic_partition_in_sync_replica', topic)})",
                   "{{topic}}-{{partition}}")),
        ]),
    ], [query_variable("topic", "Topic",
                       'label_values(kafka_topic_partitions{cluster=~"$cluster"}, topic)')])


def consumer_groups() -> Dashboard:
    group = 'consumergroup=~"$consumergroup",topic=~"$topic"'
    members = 'consumergroup=~"$consumergroup"'
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    return Dashboard("odradek-consumer-groups", "Odradek / Consumer groups and lag",
                     "Groups, their members, commits and lag.", [
        ("Groups", [
            stat("Groups", f"sum({sel(prefix + 'numgroups')})"),
            stat("Stable", f"sum({sel(prefix + 'numgroupsstable')})"),
            stat("Rebalancing",
                 f"sum({sel(prefix + 'numgroupspreparingrebalance')}) + "
                 f"sum({sel(prefix + 'numgroupscompletingrebalance')})"),
            stat("Empty", f"sum({sel(prefix + 'numgroupsempty')})"),
            stat("Committed offsets", f"sum({sel(prefix + 'numoffsets')})"),
            stat("Total lag", f"sum({sel('kafka_consumergroup_lag', group)})"),
            graph("Members",
                  (f"sum by (consumergroup) "
                   f"({sel('kafka_consumergroup_members', members)})",
                   "{{consumergroup}}")),
            graph("Rebalances",
                  ("sum by (protocol) "
                   f"({rate('kafka_server_group_coordinator_metrics_group_rebalance_total')})",
                   "{{protocol}}"), unit="ops"),
        ]),
        ("Lag", [
            graph("Lag by group and topic",
                  (f"sum by (consumergroup, topic) ({sel('kafka_consumergroup_lag', group)})",
                   "{{consumergroup}} {{topic}}")),
            graph("Lag by partition",
                  ("sum by (consumergroup, topic, partition) "
                   f"({sel('kafka_consumergroup_lag', group)})",
                   "{{consumergroup}} {{topic}}-{{partition}}")),
            graph("Messages consumed",
                  ("sum by (consumergroup, topic) "
                   f"({rate('kafka_consumergroup_current_offset', group)})",
                   "{{consumergroup}} {{topic}}"), unit="cps",
                  description="The rate at which committed offsets advance."),
            graph("Committed offsets",
                  ("sum by (consumergroup, topic, partition) "
                   f"({sel('kafka_consumergroup_current_offset', group)})",
                   "{{consumergroup}} {{topic}}-{{partition}}")),
        ]),
    ], [query_variable("consumergroup", "Consumer group",
                       'label_values(kafka_consumergroup_current_offset{cluster=~"$cluster"}, '
                       "consumergroup)"),
        query_variable("topic", "Topic",
                       'label_values(kafka_consumergroup_current_offset{cluster=~"$cluster",'
                       'consumergroup=~"$consumergroup"}, topic)')])


def mirror() -> Dashboard:
    source = "kafka_connect_mirror_mirrorsourceconnector_"
    flow = "sum by (source, target, topic)"
    partition = "max by (source, target, topic, partition)"
    return Dashboard("odradek-mirror", "Odradek / Mirror flows",
                     "The mirror service (odradek mirror), under MirrorMaker 2's metric names "
                     "(topic: the target's topic), and its lag per partition. `cluster` is the "
                     "scrape label of the mirror process.", [
        ("Flows", [
            graph("Records mirrored", (f"{flow} ({sel(source + 'record_rate')})",
                                       "{{source}}->{{target}} {{topic}}"), unit="cps"),
            graph("Bytes mirrored", (f"{flow} ({sel(source + 'byte_rate')})",
                                     "{{source}}->{{target}} {{topic}}"), unit="Bps"),
            graph("Records mirrored (total)", (f"{flow} ({sel(source + 'record_count')})",
                                               "{{source}}->{{target}} {{topic}}")),
            graph("Checkpoint latency",
                  ("max by (source, target, group) "
                   f"({sel('kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms')})",
                   "{{source}}->{{target}} {{group}}"), unit="ms"),
        ]),
        ("Lag and latency", [
            graph("Lag (records)", (f"{partition} ({sel('odradek_mirror_lag_records')})",
                                    "{{source}}->{{target}} {{topic}}-{{partition}}"),
                  description="Committed source records not yet copied."),
            graph("Lag (seconds)", (f"{partition} ({sel('odradek_mirror_lag_seconds')})",
                                    "{{source}}->{{target}} {{topic}}-{{partition}}"), unit="s",
                  description="How long the copy has been behind the source (0: caught up)."),
            graph("Replication latency (avg / max)",
                  (f"{partition} ({sel(source + 'replication_latency_ms_avg')})",
                   "{{topic}}-{{partition}} avg"),
                  (f"{partition} ({sel(source + 'replication_latency_ms_max')})",
                   "{{topic}}-{{partition}} max"), unit="ms",
                  description="From a record's timestamp to its write on the target."),
            graph("Record age (avg / max)",
                  (f"{partition} ({sel(source + 'record_age_ms_avg')})",
                   "{{topic}}-{{partition}} avg"),
                  (f"{partition} ({sel(source + 'record_age_ms_max')})",
                   "{{topic}}-{{partition}} max"), unit="ms",
                  description="Age of records when the mirror reads them from the source."),
        ]),
    ])


def audit() -> Dashboard:
    failed = sel(BUCKETS, f'status=~"{"|".join(FAILED)}",in_grace="false"')
    return Dashboard("odradek-audit", "Odradek / Audit results",
                     "The latest results of the mirroring audit (odradek audit) per source "
                     "topic, as the active controller of the audited (target) cluster reads "
                     "them from the odradek-audit topic. A topic's latest results are the "
                     "buckets of its newest run.", [
        ("Latest run", [
            stat("Buckets failed", f"sum({failed})",
                 description="Buckets outside the grace period that are missing, extra or "
                 "mismatched (complete and compacted buckets pass)."),
            stat("Records missing", f"sum({sel(MISSING_RECORDS)})"),
            stat("Records extra", f"sum({sel(EXTRA_RECORDS)})"),
            stat("Last run", f"max({sel(LAST_RUN)}) * 1000", unit="dateTimeFromNow"),
        ]),
        ("By topic", [
            graph("Buckets by status", (f"sum by (topic, status) ({sel(BUCKETS)})",
                                        "{{topic}} {{status}}"),
                  description="Buckets of each topic's latest run, the grace period's too."),
            graph("Failed buckets", (f"sum by (topic, status) ({failed})",
                                     "{{topic}} {{status}}"),
                  description="Missing, extra or mismatched buckets outside the grace "
                  "period: MirrorAuditDiscrepancy fires on any."),
            graph("Records missing and extra",
                  (f"sum by (topic) ({sel(MISSING_RECORDS)})", "{{topic}} missing"),
                  (f"sum by (topic) ({sel(EXTRA_RECORDS)})", "{{topic}} extra")),
            graph("Time since the last run", (f"time() - max({sel(LAST_RUN)})", "last run"),
                  unit="s", description="MirrorAuditStale fires past 26 hours."),
        ]),
    ])


DASHBOARDS = (overview, brokers, quorum, topics, consumer_groups, mirror, audit)


def render() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    out = {}
    for build in DASHBOARDS:
        dashboard = build()
        out[f"{dashboard.uid}.json"] = json.dumps(dashboard_json(dashboard), indent=2) + "\n"
    return out


def main() -> None:
    DASHBOARDS_DIR.mkdir(exist_ok=True)
    rendered = render()
    for stale in set(p.name for p in DASHBOARDS_DIR.glob("*.json")) - set(rendered):
        (DASHBOARDS_DIR / stale).unlink()
    for name, text in rendered.items():
        (DASHBOARDS_DIR / name).write_text(text)
    print(f"wrote {len(rendered)} dashboards to {DASHBOARDS_DIR}", file=sys.stderr)


if __name__ == "__main__":
    main()
