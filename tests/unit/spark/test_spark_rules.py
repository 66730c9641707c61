"""The Spark jobs' rules without Spark: the Kafka source's options, offset ranges and their
split for minPartitions, and the audit's flags, naming and bucket classification."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.spark.audit_rules import (
    Bucket,
    Counts,
    audit,
    classify,
    parse_duration,
    parse_time,
    target_topic,
)
from odradek.spark.kafka_client import consumer_config
from odradek.spark.offset_ranges import (
    DataLossError,
    OffsetRange,
    data_loss_report,
    offset_ranges,
    offsets_from_json,
    offsets_json,
    rate_limit,
    resolve,
    split_ranges,
    stream_ranges,
)
from odradek.spark.source_options import (
    Assign,
    Earliest,
    GlobalTimestamp,
    Latest,
    OptionError,
    SpecificOffsets,
    Subscribe,
    SubscribePattern,
    parse_options,
    parse_write_options,
)

BOOT = {"kafka.bootstrap.servers": "h:1"}
TP = tuple[str, int]


def test_options_follow_sparks_names_defaults_and_precedence() -> None:
    options = parse_options({**BOOT, "Subscribe": "a, b,", "kafka.isolation.level":
                             "read_committed", "startingOffsets": "earliest",
                             "startingTimestamp": "5", "minPartitions": "4"})
    assert options.strategy == Subscribe(("a", "b"))
    assert options.starting == GlobalTimestamp(5)  # the timestamp wins over the offsets
    assert options.ending == Latest()
    assert options.isolation_level == "read_committed"
    assert options.client == {"bootstrap.servers": "h:1", "isolation.level": "read_committed"}
    assert (options.min_partitions, options.include_headers) == (4, False)
    assert parse_options({**BOOT, "assign": '{"t": [1, 0]}'}).strategy == \
        Assign((("t", 0), ("t", 1)))
    assert parse_options({**BOOT, "subscribePattern": "o.*"}).strategy.matches("orders")
    assert not SubscribePattern("o").matches("orders")  # the whole name, as Java's matches()
    ranged = parse_options({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":-2}}',
                            "endingOffsets": '{"t":{"0":7}}'})
    assert ranged.starting == SpecificOffsets({("t", 0): -2})
    assert parse_options({**BOOT, "subscribe": "t"}).starting == Earliest()


def test_an_executor_fetches_again_soon_after_its_queue_fills_unless_told_otherwise() -> None:
    """librdkafka waits a second (`fetch.queue.backoff.ms`) before fetching again once a
    partition's queue is full; a task that drains its queue in a tenth of that would idle."""
    default = consumer_config(parse_options({**BOOT, "assign": '{"t": [0]}'}))
    assert default["fetch.queue.backoff.ms"] < 1000
    assert default["isolation.level"] == "read_uncommitted"
    told = consumer_config(parse_options({**BOOT, "assign": '{"t": [0]}',
                                          "kafka.fetch.queue.backoff.ms": "1000"}))
    assert told["fetch.queue.backoff.ms"] == "1000"


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "t"}, "kafka.bootstrap.servers' must be specified"),
    ({**BOOT}, "One of the following options must be specified"),
    ({**BOOT, "subscribe": "t", "subscribePattern": "x"}, "Only one of"),
    ({**BOOT, "subscribe": " , "}, "No topics to subscribe to"),
    ({**BOOT, "assign": "t"}, "No topicpartitions to assign"),
    ({**BOOT, "subscribe": "t", "endingOffsets": "earliest"}, "can't be earliest"),
    ({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'}, "can't be latest"),
    ({**BOOT, "subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'}, "can't be earliest"),
    ({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":9}}',
      "endingOffsets": '{"t":{"0":3}}'}, "after the end"),
    ({**BOOT, "subscribe": "t", "startingTimestamp": "soon"}, "Expected a single long"),
    ({**BOOT, "subscribe": "t", "minPartitions": "0"}, "must be positive"),
    ({**BOOT, "subscribe": "t", "kafka.value.deserializer": "x"}, "not supported"),
    ({**BOOT, "subscribe": "t", "includeHeaders": "yes"}, "true or false"),
])
def test_bad_options_are_refused_as_spark_refuses_them(options: dict[str, str],
                                                       message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options(options)


def test_stream_and_sink_options() -> None:
    stream = parse_options({**BOOT, "subscribe": "t", "maxOffsetsPerTrigger": "25"},
                           streaming=True)
    assert (stream.starting, stream.max_offsets_per_trigger) == (Latest(), 25)
    assert stream.group_id_prefix == "spark-kafka-source"
    assert parse_options({**BOOT, "subscribe": "t", "startingOffsets": "latest",
                          "maxOffsetsPerTrigger": "25"}, streaming=True).starting == Latest()
    assert parse_options({**BOOT, "subscribe": "t", "maxOffsetsPerTrigger": "25"}
                         ).max_offsets_per_trigger is None  # ignored in batch, as Spark
    sink = parse_write_options({**BOOT, "Topic": " out ", "kafka.acks": "1"})
    assert (sink.topic, sink.client) == ("out", {"bootstrap.servers": "h:1", "acks": "1"})
    assert parse_write_options(BOOT).topic is None


@pytest.mark.parametrize(("options", "message"), [
    ({"endingOffsets": "latest"}, "ending offset not valid in streaming queries"),
    ({"endingTimestamp": "5"}, "ending timestamp not valid in streaming queries"),
    ({"maxOffsetsPerTrigger": "0"}, "must be positive"),
])
def test_bad_stream_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options({**BOOT, "subscribe": "t", **options}, streaming=True)


def test_bad_sink_options() -> None:
    with pytest.raises(OptionError, match="'key.serializer' is not supported"):
        parse_write_options({**BOOT, "kafka.key.serializer": "x"})
    with pytest.raises(OptionError, match="configuring Kafka producer"):
        parse_write_options({"topic": "t"})


def test_offsets_are_sparks_json() -> None:
    offsets = {("b", 10): 5, ("b", 2): 7, ("a", 0): -1}
    data = offsets_json(offsets)
    assert json.dumps(data, separators=(",", ":")) == '{"a":{"0":-1},"b":{"2":7,"10":5}}'
    assert offsets_from_json(json.loads(json.dumps(data))) == offsets


def test_rate_limit_shares_as_spark() -> None:
    start = {("t", 0): 0, ("t", 1): 10, ("t", 2): 5}
    latest = {("t", 0): 100, ("t", 1): 40, ("t", 2): 6, ("t", 3): 4}
    # 100 + 30 + 1 + 4 (new, from 0) = 135 to read; 20 shared: 14.8, 4.4, 0.15 (at least 1), 0.6
    assert rate_limit(20, start, latest, {("t", 3): 0}) == \
        {("t", 0): 14, ("t", 1): 14, ("t", 2): 6, ("t", 3): 1}
    assert rate_limit(1000, start, latest, {("t", 3): 0}) == latest
    caught_up = {("t", 0): 0, ("t", 1): 10}
    assert rate_limit(5, caught_up, caught_up, {}) == caught_up


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 500)), min_size=1, max_size=6),
       st.integers(1, 300))
def test_rate_limit_reads_in_order_to_the_end(bounds: list[tuple[int, int]], limit: int) -> None:
    start = {("t", p): low for p, (low, _) in enumerate(bounds)}
    latest = {("t", p): low + size for p, (low, size) in enumerate(bounds)}
    batches = 0
    while start != latest:
        end = rate_limit(limit, start, latest, {})
        assert all(start[tp] <= end[tp] <= latest[tp] for tp in start)
        assert 0 < sum(end[tp] - start[tp] for tp in start) <= limit + len(start)
        start, batches = end, batches + 1
    assert batches <= sum(size for _, size in bounds)


def test_stream_ranges_report_data_loss_as_spark() -> None:
    start = {("t", 0): 5, ("t", 1): 9, ("gone", 0): 3}
    end = {("t", 0): 8, ("t", 1): 4, ("t", 2): 6, ("t", 3): 2}
    lost: list[tuple[str, str]] = []
    ranges = stream_ranges(start, end, {("t", 2): 1}, lambda *loss: lost.append(loss))
    assert ranges == [OffsetRange("t", 0, 5, 8), OffsetRange("t", 1, 9, 4),
                      OffsetRange("t", 2, 1, 6)]
    assert split_ranges(ranges, None) == [OffsetRange("t", 0, 5, 8), OffsetRange("t", 2, 1, 6)]
    assert [condition for condition, _ in lost] == [
        "INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS",
        "ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO", "PARTITIONS_DELETED",
        "PARTITION_OFFSET_CHANGED"]
    assert lost[3][1] == "Partition t-1 offset was changed from 9 to 4."
    with pytest.raises(DataLossError, match=r"KAFKA_DATA_LOSS.PARTITIONS_DELETED.*failOnDataLoss"
                                            r" to false. Reason: Partitions gone-0 have been"):
        stream_ranges(start, {("t", 0): 8, ("t", 1): 9}, {}, data_loss_report(True))
    assert stream_ranges(start, {("t", 0): 8}, {}, data_loss_report(False)) == \
        [OffsetRange("t", 0, 5, 8)]


class Lookup:
    """Log ends and a time index for partitions of topic t: offset = timestamp // 10."""

    def __init__(self, ends: dict[tuple[str, int], tuple[int, int]]) -> None:
        self.ends = ends

    def earliest(self, partitions: Sequence[TP]) -> dict[TP, int]:
        return {tp: self.ends[tp][0] for tp in partitions}

    def latest(self, partitions: Sequence[TP]) -> dict[TP, int]:
        return {tp: self.ends[tp][1] for tp in partitions}

    def for_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        return {tp: ts // 10 if ts // 10 < self.ends[tp][1] else None
                for tp, ts in times.items()}


def test_limits_resolve_to_offsets() -> None:
    parts = [("t", 0), ("t", 1)]
    lookup = Lookup({("t", 0): (2, 50), ("t", 1): (0, 5)})
    assert resolve(SpecificOffsets({("t", 0): -2, ("t", 1): 3}), parts, lookup,
                   starting=True) == {("t", 0): 2, ("t", 1): 3}
    assert resolve(GlobalTimestamp(100), parts, lookup, starting=False) == \
        {("t", 0): 10, ("t", 1): 5}  # no match at the end: latest
    with pytest.raises(OptionError, match="No offset matched"):
        resolve(GlobalTimestamp(100), parts, lookup, starting=True)
    assert resolve(GlobalTimestamp(100), parts, lookup, starting=True,
                   no_match_latest=True)[("t", 1)] == 5
    with pytest.raises(OptionError, match="must specify all TopicPartitions"):
        resolve(SpecificOffsets({("t", 0): 1}), parts, lookup, starting=True)
    with pytest.raises(OptionError, match="after the end offset"):
        offset_ranges({("t", 0): 9}, {("t", 0): 4})


def test_min_partitions_splits_as_sparks_calculator() -> None:
    ranges = [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 10),
              OffsetRange("t", 2, 5, 5)]
    assert split_ranges(ranges, None) == ranges[:2]  # empty ranges dropped
    assert split_ranges(ranges, 2) == ranges[:2]
    assert split_ranges(ranges, 5) == [
        OffsetRange("t", 0, 0, 25), OffsetRange("t", 0, 25, 50), OffsetRange("t", 0, 50, 75),
        OffsetRange("t", 0, 75, 100), OffsetRange("t", 1, 0, 10)]


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), max_size=8),
       st.integers(1, 40))
def test_split_ranges_cover_every_offset_once(bounds: list[tuple[int, int]],
                                              min_partitions: int) -> None:
    ranges = [OffsetRange("t", p, start, start + size)
              for p, (start, size) in enumerate(bounds)]
    pieces = split_ranges(ranges, min_partitions)
    for r in ranges:
        mine = sorted(p for p in pieces if p.partition == r.partition)
        covered = [o for p in mine for o in range(p.start, p.end)]
        assert covered == list(range(r.start, r.end))
    if len([r for r in ranges if r.size]) < min_partitions and pieces:
        assert len(pieces) >= len([r for r in ranges if r.size])


def test_audit_flags_and_topic_naming() -> None:
    assert parse_duration("10m") == 600_000 and parse_duration("250ms") == 250
    assert parse_duration("1500") == 1500 and parse_duration("2d") == 172_800_000
    assert parse_time("1700000000000") == 1_700_000_000_000
    assert parse_time("2023-11-14T22:13:20Z") == parse_time("2023-11-14T22:13:20") \
        == 1_700_000_000_000
    assert parse_time("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("10 minutes")
    assert target_topic("orders", "east", "default") == "east.orders"
    assert target_topic("orders", "east", "default", "_") == "east_orders"
    assert target_topic("orders", "east", "identity") == "orders"


def test_buckets_are_classified_by_count_then_content() -> None:
    def bucket(s: int, t: int, s_sum: int = 1, t_sum: int = 1) -> Bucket:
        return Bucket("o", "east.o", 0, 10, s, t, 5, 5, s_sum, t_sum)

    assert classify(bucket(3, 3)) == "complete"
    assert classify(bucket(3, 2)) == "missing"
    assert classify(bucket(3, 4)) == "extra"
    assert classify(bucket(3, 3, 1, 2)) == "mismatch"


def test_the_audit_rolls_partitions_up_and_spares_buckets_in_grace() -> None:
    source = [Counts("o", 0, 0, 2, 10, 7, 5), Counts("o", 1, 0, 1, 5, 9, 8),
              Counts("o", 0, 10, 4, 20, 3, 15)]
    target = [Counts("o", 0, 0, 2, 10, 7, 5), Counts("o", 1, 0, 1, 5, 9, 8),
              Counts("o", 0, 10, 3, 15, 2, 12)]
    result = audit(source, target, {"o": "east.o"}, bucket_ms=10, grace_start_ms=100,
                   from_ms=0)
    assert [(b.bucket_start_ms, b.status, b.source_count) for b in result.buckets] == \
        [(0, "complete", 3), (10, "missing", 4)]
    assert not result.complete and result.totals["missing"] == 1
    lag = result.worst_lag
    assert lag is not None and (lag.partition, lag.records, lag.ms) == (0, 1, 3)
    in_flight = audit(source, target, {"o": "east.o"}, bucket_ms=10, grace_start_ms=15,
                      from_ms=0)
    assert in_flight.complete and in_flight.buckets[1].in_grace
