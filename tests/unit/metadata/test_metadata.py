"""The metadata state machine: handlers validate and return records, replay alone changes
state, and the records survive a JSON round trip."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.controller.service import new_topic_id
from odradek.metadata.image import (
    MAX_TOPIC_NAME_LENGTH,
    BrokerRegistration,
    ClusterMetadata,
    MetadataError,
    ReplayError,
    validate_topic_name,
)
from odradek.metadata.records import (
    ConfigRecord,
    ConfigResourceType,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RecordDecodeError,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    decode_batch,
    encode_batch,
    from_json,
    to_json,
)
from tests.unit.controller_harness import plaintext_at

BROKERS = (1, 2, 3)


def with_brokers(*broker_ids: int, fenced: Iterable[int] = ()) -> ClusterMetadata:
    """Metadata with these brokers registered (by default 1, 2, 3), unfenced unless named in
    `fenced`."""
    metadata = ClusterMetadata()
    fenced = set(fenced)
    apply(metadata, [RegisterBrokerRecord(b, f"incarnation-{b}", 10 + b,
                                          plaintext_at("localhost", 9090 + b), None,
                                          fenced=b in fenced)
                     for b in broker_ids or BROKERS])
    return metadata


def apply(metadata: ClusterMetadata, records: Iterable[MetadataRecord]) -> None:
    for record in records:
        metadata.replay(record)


def snapshot(metadata: ClusterMetadata) -> tuple[object, ...]:
    return (
        {name: (s.name, s.topic_id, dict(s.partitions), dict(s.configs))
         for name, s in metadata.topics.items()},
        dict(metadata.topic_names_by_id),
        {name: dict(configs) for name, configs in metadata.broker_configs.items()},
        dict(metadata.brokers),
        metadata.next_producer_id,
    )


def created(name: str = "orders", partitions: int = 3, replication: int = 2,
            configs: Mapping[str, str | None] | None = None) -> ClusterMetadata:
    metadata = with_brokers()
    apply(metadata, metadata.create_topic(name, f"id-{name}", partitions, replication,
                                          configs or {}))
    return metadata


def refused(code: ErrorCode) -> pytest.RaisesExc[MetadataError]:
    return pytest.raises(MetadataError, check=lambda error: error.error_code is code)


# --- topic names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["a", "orders", "Orders.v2", "__consumer_offsetz", "a-b_c.d", "...", ".a", "a..",
     "x" * MAX_TOPIC_NAME_LENGTH, "0123456789"],
)
def test_legal_topic_names(name: str) -> None:
    assert validate_topic_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", None, ".", "..", "x" * (MAX_TOPIC_NAME_LENGTH + 1), "a b", "a/b", "a:b", "a*",
     "naïve", "tab\t", "new\nline", "orders\n", "\u0661"],
)
def test_illegal_topic_names(name: str | None) -> None:
    with refused(ErrorCode.invalid_topic_exception):
        validate_topic_name(name)


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_internal_topics_are_created_only_by_their_coordinators(name: str) -> None:
    with refused(ErrorCode.invalid_request):
        validate_topic_name(name)
    assert validate_topic_name(name, internal=True) == name


def test_internal_topics_keep_their_partitions() -> None:
    metadata = with_brokers()
    for record in metadata.create_topic("__consumer_offsets", "id", 3, 1, {},
                                        internal=True):
        metadata.replay(record)
    with refused(ErrorCode.invalid_request):
        metadata.create_partitions("__consumer_offsets", 4)
    with refused(ErrorCode.invalid_request):
        metadata.delete_topic("__consumer_offsets")


def test_create_topic_refuses_illegal_names_before_anything_else() -> None:
    metadata = with_brokers()
    with refused(ErrorCode.invalid_topic_exception):
        metadata.create_topic("bad name", "id", 0, 0, {"nope": "x"})


# --- create_topic --------------------------------------------------------------------------


def test_create_topic_records() -> None:
    metadata = with_brokers()
    records = metadata.create_topic("orders", "id-1", 4, 2,
                                    {"segment.ms": "1000", "cleanup.policy": "compact"})
    assert records == [
        TopicRecord("orders", "id-1"),
        PartitionRecord("id-1", 0, (1, 2), (1, 2), 1),
        PartitionRecord("id-1", 1, (2, 3), (2, 3), 2),
        PartitionRecord("id-1", 2, (3, 1), (3, 1), 3),
        PartitionRecord("id-1", 3, (1, 3), (1, 3), 1),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "cleanup.policy", "compact"),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "segment.ms", "1000"),
    ]
    assert metadata.topics == {}, "handlers do not change state; replay does"


def test_replaying_create_topic_builds_the_topic() -> None:
    metadata = created("orders", 2, 3, {"retention.ms": "5"})
    state = metadata.topic("orders")
    assert (state.name, state.topic_id) == ("orders", "id-orders")
    assert metadata.topic_names_by_id == {"id-orders": "orders"}
    assert sorted(state.partitions) == [0, 1]
    assert all(len(set(p.replicas)) == 3 and p.leader == p.replicas[0] and p.isr == p.replicas
               for p in state.partitions.values())
    assert state.configs == {"retention.ms": "5"}


def test_topic_already_exists() -> None:
    metadata = created("orders")
    before = snapshot(metadata)
    with refused(ErrorCode.topic_already_exists):
        metadata.create_topic("orders", "id-2", 1, 1, {})
    assert snapshot(metadata) == before


@pytest.mark.parametrize(("existing", "new"), [("a.b", "a_b"), ("a_b", "a.b"), ("x.y_z", "x_y.z")])
def test_names_colliding_on_dot_and_underscore(existing: str, new: str) -> None:
    metadata = created(existing)
    with refused(ErrorCode.invalid_topic_exception):
        metadata.create_topic(new, "id-2", 1, 1, {})


def test_similar_names_that_do_not_collide() -> None:
    metadata = created("a.b")
    apply(metadata, metadata.create_topic("a-b", "id-2", 1, 1, {}))
    apply(metadata, metadata.create_topic("a.bc", "id-3", 1, 1, {}))
    assert set(metadata.topics) == {"a.b", "a-b", "a.bc"}


@pytest.mark.parametrize("partitions", [0, -1, -5])
def test_invalid_partitions(partitions: int) -> None:
    with refused(ErrorCode.invalid_partitions):
        with_brokers().create_topic("t", "id", partitions, 1, {})


@pytest.mark.parametrize(("replication", "metadata"),
                         [(0, with_brokers()), (-1, with_brokers()), (4, with_brokers()),
                          (1, ClusterMetadata()), (2, with_brokers(1, 2, fenced=[2]))])
def test_invalid_replication_factor(replication: int, metadata: ClusterMetadata) -> None:
    with refused(ErrorCode.invalid_replication_factor):
        metadata.create_topic("t", "id", 1, replication, {})


def test_too_few_unfenced_brokers_for_the_replication_factor() -> None:
    """Kafka's message; only unfenced brokers count."""
    metadata = with_brokers(1, 2, 3, fenced=[3])
    with pytest.raises(MetadataError) as raised:
        metadata.create_topic("t", "id", 1, 3, {})
    assert raised.value.message == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 2 broker(s) are registered.")
    with pytest.raises(MetadataError) as raised:
        with_brokers(1, 2, fenced=[1, 2]).create_topic("t", "id", 1, 1, {})
    assert raised.value.message == (
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced.")


def test_new_partitions_are_placed_on_unfenced_brokers_only() -> None:
    metadata = with_brokers(1, 2, 3, 4, fenced=[2])
    records = metadata.create_topic("t", "id", 6, 3, {})
    partitions = [r for r in records if isinstance(r, PartitionRecord)]
    assert len(partitions) == 6
    assert all(2 not in p.replicas for p in partitions)


@pytest.mark.parametrize(
    "configs",
    [{"retention.ms": "soon"}, {"no.such.config": "1"}, {"segment.bytes": "1"},
     {"retention.ms": None},
     {"cleanup.policy": "shred"}, {"log.retention.ms": "1"}, {"retention.ms": "1",
                                                              "min.insync.replicas": "0"}],
)
def test_invalid_config(configs: dict[str, str]) -> None:
    with refused(ErrorCode.invalid_config):
        with_brokers().create_topic("t", "id", 1, 1, configs)


def test_manual_assignment() -> None:
    metadata = with_brokers()
    records = metadata.create_topic("t", "id", -1, -1, {}, {1: [3, 1], 0: [2, 3]})
    assert records[1:] == [PartitionRecord("id", 0, (2, 3), (2, 3), 2),
                           PartitionRecord("id", 1, (3, 1), (3, 1), 3)]


def test_manual_assignment_may_name_fenced_brokers_but_leads_with_an_unfenced_one() -> None:
    metadata = with_brokers(fenced=[2])
    records = metadata.create_topic("t", "id", -1, -1, {}, {0: [2, 3], 1: [1, 2]})
    assert records[1:] == [PartitionRecord("id", 0, (2, 3), (3,), 3),
                           PartitionRecord("id", 1, (1, 2), (1,), 1)]
    with refused(ErrorCode.invalid_replica_assignment):
        metadata.create_topic("t", "id", -1, -1, {}, {0: [1, 3], 1: [2]})


@pytest.mark.parametrize(
    "assignments",
    [
        {0: [1], 2: [2]},  # a gap
        {1: [1]},  # does not start at 0
        {0: [1, 1]},  # duplicate replica
        {0: []},  # no replica
        {0: [1, 2], 1: [3]},  # inconsistent replication factor
        {0: [1, 99]},  # one unknown broker
    ],
)
def test_invalid_manual_assignment(assignments: dict[int, list[int]]) -> None:
    with refused(ErrorCode.invalid_replica_assignment):
        with_brokers().create_topic("t", "id", -1, -1, {}, assignments)


def test_assignment_to_unknown_brokers_only() -> None:
    with pytest.raises(MetadataError) as raised:
        with_brokers().create_topic("t", "id", -1, -1, {}, {0: [98, 99]})
    assert raised.value.error_code == ErrorCode.invalid_replica_assignment


# --- delete_topic --------------------------------------------------------------------------


def test_delete_then_recreate() -> None:
    metadata = created("orders")
    assert metadata.delete_topic("orders") == [RemoveTopicRecord("id-orders")]
    apply(metadata, metadata.delete_topic("orders"))
    assert metadata.topics == {} and metadata.topic_names_by_id == {}
    with refused(ErrorCode.unknown_topic_or_partition):
        metadata.delete_topic("orders")
    apply(metadata, metadata.create_topic("orders", "id-new", 1, 1, {}))
    assert metadata.topic("orders").topic_id == "id-new"


# --- create_partitions ---------------------------------------------------------------------


def test_create_partitions_extends_round_robin_with_the_same_replication() -> None:
    metadata = created("orders", 2, 2)
    records = metadata.create_partitions("orders", 4)
    assert records == [PartitionRecord("id-orders", 2, (3, 1), (3, 1), 3),
                       PartitionRecord("id-orders", 3, (1, 2), (1, 2), 1)]
    apply(metadata, records)
    assert sorted(metadata.topic("orders").partitions) == [0, 1, 2, 3]


@pytest.mark.parametrize("count", [1, 2])
def test_create_partitions_cannot_shrink_or_stay(count: int) -> None:
    metadata = created("orders", 2, 1)
    with refused(ErrorCode.invalid_partitions):
        metadata.create_partitions("orders", count)


def test_create_partitions_of_an_unknown_topic() -> None:
    with refused(ErrorCode.unknown_topic_or_partition):
        with_brokers().create_partitions("nope", 3)


def test_create_partitions_with_assignments() -> None:
    metadata = created("orders", 1, 2)
    records = metadata.create_partitions("orders", 3, [[3, 2], [2, 1]])
    assert records == [PartitionRecord("id-orders", 1, (3, 2), (3, 2), 3),
                       PartitionRecord("id-orders", 2, (2, 1), (2, 1), 2)]


@pytest.mark.parametrize(
    "assignments",
    [[[1, 2]], [[1, 2], [2, 3], [3, 1]], [[1, 1], [2, 3]], [[1], [2, 3]], [[1, 2], [2, 99]]],
)
def test_create_partitions_with_invalid_assignments(assignments: list[list[int]]) -> None:
    metadata = created("orders", 1, 2)
    with refused(ErrorCode.invalid_replica_assignment):
        metadata.create_partitions("orders", 3, assignments)


@pytest.mark.parametrize("fenced", [(2, 3), (1, 2, 3)])
def test_create_partitions_with_fewer_brokers_than_the_replication_factor(
    fenced: tuple[int, ...],
) -> None:
    """Brokers fenced since the topic was created: Kafka refuses rather than placing two
    replicas of a partition on one broker."""
    metadata = created("orders", 1, 2)
    apply(metadata, [FenceBrokerRecord(b, 10 + b) for b in fenced])
    with refused(ErrorCode.invalid_replication_factor):
        metadata.create_partitions("orders", 2)


# --- alter_topic_configs -------------------------------------------------------------------


def test_alter_topic_configs_sets_and_removes() -> None:
    metadata = created("orders", configs={"retention.ms": "1000", "segment.ms": "5000"})
    records = metadata.alter_topic_configs("orders", {"retention.ms": None,
                                                      "cleanup.policy": "compact"})
    assert records == [
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", None),
        ConfigRecord(ConfigResourceType.TOPIC, "orders", "cleanup.policy", "compact")]
    assert metadata.topic("orders").configs == {"retention.ms": "1000", "segment.ms": "5000"}
    apply(metadata, records)
    assert metadata.topic("orders").configs == {"segment.ms": "5000",
                                                "cleanup.policy": "compact"}


@pytest.mark.parametrize(
    "changes",
    [{"retention.ms": "forever"}, {"unknown.name": "1"}, {"unknown.name": None},
     {"segment.ms": "1", "max.message.bytes": "-1"}],
)
def test_alter_topic_configs_refuses_invalid_changes(changes: dict[str, str | None]) -> None:
    metadata = created("orders")
    with refused(ErrorCode.invalid_config):
        metadata.alter_topic_configs("orders", changes)


def test_alter_configs_of_an_unknown_topic() -> None:
    with refused(ErrorCode.unknown_topic_or_partition):
        with_brokers().alter_topic_configs("nope", {"retention.ms": "1"})


def test_broker_config_records_replay_into_broker_configs() -> None:
    metadata = with_brokers()
    apply(metadata, metadata.alter_broker_configs("", {"log.retention.ms": "5", "x": None}))
    assert metadata.broker_configs == {"": {"log.retention.ms": "5"}}
    apply(metadata, metadata.alter_broker_configs("", {"log.retention.ms": None}))
    assert metadata.broker_configs == {}


def test_per_broker_and_cluster_default_configs_replay_apart() -> None:
    metadata = with_brokers()

    records = metadata.alter_broker_configs("1", {"log.retention.ms": "10"})
    records += metadata.alter_broker_configs("", {"log.retention.ms": "20"})
    records += metadata.alter_broker_configs("2", {"log.segment.bytes": "1048576"})
    apply(metadata, records)

    assert [(r.resource_type, r.resource_name) for r in records if isinstance(r, ConfigRecord)] \
        == [(ConfigResourceType.BROKER, "1"), (ConfigResourceType.BROKER, ""),
            (ConfigResourceType.BROKER, "2")]
    assert metadata.broker_configs == {
        "1": {"log.retention.ms": "10"},
        "": {"log.retention.ms": "20"},
        "2": {"log.segment.bytes": "1048576"},
    }
    apply(metadata, metadata.alter_broker_configs("1", {"log.retention.ms": None}))
    assert metadata.broker_configs == {
        "": {"log.retention.ms": "20"},
        "2": {"log.segment.bytes": "1048576"},
    }


# --- records JSON --------------------------------------------------------------------------

SAMPLE_RECORDS: list[MetadataRecord] = [
    TopicRecord("orders", new_topic_id()),
    PartitionRecord("id", 7, (1, 2, 3), (2,), 2, leader_epoch=9),
    RemoveTopicRecord("id"),
    ConfigRecord(ConfigResourceType.TOPIC, "orders", "retention.ms", "1000"),
    ConfigRecord(ConfigResourceType.BROKER, "", "log.retention.ms", None),
    ConfigRecord(ConfigResourceType.BROKER, "1", "log.retention.ms", "60000"),
    PartitionRecord("id", 0, (4,), (4,), 4, leader_epoch=2, partition_epoch=5),
    PartitionChangeRecord("id", 3),
    PartitionChangeRecord("id", 3, leader=-1, isr=(2, 1), replicas=(1, 2, 3)),
    RegisterBrokerRecord(3, "incarnation", 17, plaintext_at("broker-3.local", 9092), "eu-1a"),
    RegisterBrokerRecord(4, "incarnation", 18, plaintext_at("::1", 9093), None, fenced=False),
    UnregisterBrokerRecord(3, 17),
    FenceBrokerRecord(3, 17),
    UnfenceBrokerRecord(3, 17),
    ProducerIdsRecord(3, 17, 2000),
]


@pytest.mark.parametrize("record", SAMPLE_RECORDS, ids=lambda r: type(r).__name__)
def test_records_json_round_trip(record: MetadataRecord) -> None:
    line = to_json(record)
    assert "\n" not in line
    assert json.loads(line)["type"] == type(record).__name__
    back = from_json(line)
    assert back == record
    assert type(back) is type(record)
    if isinstance(back, PartitionRecord | PartitionChangeRecord):
        assert all(type(v) is tuple for v in (back.replicas, back.isr) if v is not None)


def test_a_batch_round_trips_in_order() -> None:
    batch = encode_batch(SAMPLE_RECORDS)
    assert decode_batch(batch) == SAMPLE_RECORDS
    assert [type(r) for r in decode_batch(batch)] == [type(r) for r in SAMPLE_RECORDS]


def test_an_empty_batch_is_empty_bytes() -> None:
    assert encode_batch([]) == b""
    assert decode_batch(b"") == []


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfe", b"not json", b"{}", b"[1]", b'["TopicRecord"]', b'[{"type": "Nope"}]',
     b'[{"type": "TopicRecord", "name": "t"}]',
     b'[{"type": "TopicRecord", "name": "t", "topic_id": "x", "extra": 1}]',
     b'[{"type": "TopicRecord", "name": 5, "topic_id": "x"}]',
     b'[{"type": "PartitionChangeRecord", "topic_id": "x", "partition": true}]',
     b'[{"type": "PartitionChangeRecord", "topic_id": "x", "partition": 0, "isr": [1, "2"]}]',
     b'[{"type": "RegisterBrokerRecord", "broker_id": 1, "incarnation_id": "i", '
     b'"broker_epoch": 1, "host": "h", "port": 1, "rack": null, "fenced": 1}]',
     b'[{"type": "ProducerIdsRecord", "broker_id": 1, "broker_epoch": 1, '
     b'"next_producer_id": null}]'],
)
def test_garbage_batches_are_refused_with_a_decode_error(data: bytes) -> None:
    with pytest.raises(RecordDecodeError):
        decode_batch(data)


@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_a_decode_error(data: bytes) -> None:
    try:
        records = decode_batch(data)
    except RecordDecodeError:
        return
    assert encode_batch(records) == b"" or decode_batch(encode_batch(records)) == records


@pytest.mark.parametrize(
    "line",
    ["", "not json", '{"name": "t", "topic_id": "x"}', '{"type": "Nope"}',
     '{"type": "TopicRecord", "name": "t"}', '{"type": "TopicRecord", "name": "t", '
     '"topic_id": "x", "extra": 1}'],
)
def test_malformed_json_lines(line: str) -> None:
    with pytest.raises(RecordDecodeError):
        from_json(line)


def test_new_topic_ids_are_distinct_uuids() -> None:
    ids = {new_topic_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(i) == 36 and i.count("-") == 4 for i in ids)


# --- replay equivalence --------------------------------------------------------------------


@dataclass
class Model:
    """What the state should be, kept independently of ClusterMetadata."""

    partitions: dict[str, int] = field(default_factory=dict)
    replication: dict[str, int] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)


NAMES = st.sampled_from(["a", "b", "a", "b", "c.d", "c_d", "bad name"])
SETTINGS = [("retention.ms", "1000"), ("retention.ms", "-1"), ("segment.ms", "5000"),
            ("cleanup.policy", "compact"), ("cleanup.policy", "delete")]
REFUSED = [("retention.ms", "x"), ("unknown.key", "1"), ("segment.ms", "0")]
REMOVALS = [("retention.ms", None), ("segment.ms", None), ("unknown.key", None)]
CREATE_CONFIGS = st.lists(st.sampled_from(SETTINGS * 3 + REFUSED[:1]), max_size=3).map(dict)
CONFIG_CHANGES = st.lists(
    st.sampled_from(SETTINGS * 2 + REMOVALS * 2 + REFUSED), min_size=1, max_size=3
).map(dict)
OPERATIONS = st.one_of(
    st.tuples(st.just("create"), NAMES, st.sampled_from([1, 2, 4, 0]),
              st.sampled_from([1, 2, 3, 0, 4]), CREATE_CONFIGS),
    st.tuples(st.just("delete"), NAMES),
    st.tuples(st.just("partitions"), NAMES, st.integers(1, 6)),
    st.tuples(st.just("configs"), NAMES, CONFIG_CHANGES),
    st.tuples(st.just("broker"), st.sampled_from(["", "1", "2"]), st.lists(st.sampled_from(
        [("log.retention.ms", "1000"), ("log.retention.ms", None), ("log.segment.bytes", "2048"),
         ("log.segment.bytes", None)]), min_size=1, max_size=3).map(dict)),
)


def run(metadata: ClusterMetadata, model: Model, operation: tuple, serial: int,
        log: list[MetadataRecord]) -> None:
    kind, name, *args = operation
    before = snapshot(metadata)
    try:
        if kind == "create":
            partitions, replication, configs = args
            records = metadata.create_topic(name, f"id-{serial}", partitions, replication,
                                            configs)
        elif kind == "delete":
            records = metadata.delete_topic(name)
        elif kind == "partitions":
            records = metadata.create_partitions(name, args[0])
        elif kind == "broker":
            records = metadata.alter_broker_configs(name, args[0])
        else:
            records = metadata.alter_topic_configs(name, args[0])
    except MetadataError:
        assert snapshot(metadata) == before, "a refused request must not change state"
        return
    assert snapshot(metadata) == before, "handlers must not change state"
    apply(metadata, records)
    log += records
    if kind == "create":
        model.partitions[name], model.replication[name] = args[0], args[1]
        model.configs[name] = {k: v for k, v in args[2].items() if v is not None}
    elif kind == "delete":
        for table in (model.partitions, model.replication, model.configs):
            del table[name]
    elif kind == "partitions":
        model.partitions[name] = args[0]
    else:
        table = model.broker_configs if kind == "broker" else model.configs
        configs = table.setdefault(name, {})
        for key, value in args[0].items():
            if value is None:
                configs.pop(key, None)
            else:
                configs[key] = value
        if kind == "broker" and not configs:
            del table[name]


def check(metadata: ClusterMetadata, model: Model) -> None:
    assert set(metadata.topics) == set(model.partitions)
    assert set(metadata.topic_names_by_id.values()) == set(model.partitions)
    for name, state in metadata.topics.items():
        assert metadata.topic_names_by_id[state.topic_id] == name
        assert sorted(state.partitions) == list(range(model.partitions[name]))
        for record in state.partitions.values():
            assert record.topic_id == state.topic_id
            assert len(record.replicas) == model.replication[name]
            assert len(set(record.replicas)) == len(record.replicas)
            assert set(record.replicas) <= set(BROKERS)
            assert record.leader == record.replicas[0] and record.isr == record.replicas
        assert state.configs == model.configs[name]
    assert metadata.broker_configs == model.broker_configs


@given(operations=st.lists(OPERATIONS, max_size=30))
@settings(max_examples=150, deadline=None)
def test_replaying_the_returned_records_yields_the_expected_state(
    operations: list[tuple],
) -> None:
    metadata, model = with_brokers(), Model()
    log: list[MetadataRecord] = []
    prelude = [("create", "a", 2, 2, {}), ("create", "b", 1, 3, {"retention.ms": "1000"})]
    for serial, operation in enumerate(prelude + operations):
        run(metadata, model, operation, serial, log)
        check(metadata, model)
    reloaded = with_brokers()
    apply(reloaded, (from_json(to_json(record)) for record in log))
    assert snapshot(reloaded) == snapshot(metadata)
    rebuilt = ClusterMetadata()
    apply(rebuilt, metadata.to_records())
    assert snapshot(rebuilt) == snapshot(metadata)


def test_the_metadata_topic_name_is_reserved() -> None:
    with pytest.raises(MetadataError) as raised:
        with_brokers().create_topic("__cluster_metadata", "id", 1, 1, {})
    assert raised.value.error_code == ErrorCode.invalid_request


def test_excessive_partition_counts_are_a_policy_violation() -> None:
    metadata = with_brokers()
    with pytest.raises(MetadataError) as raised:
        metadata.create_topic("big", "id", 10_001, 1, {})
    assert raised.value.error_code == ErrorCode.policy_violation
    for record in metadata.create_topic("t", "id", 1, 1, {}):
        metadata.replay(record)
    with pytest.raises(MetadataError) as raised:
        metadata.create_partitions("t", 10_002)
    assert raised.value.error_code == ErrorCode.policy_violation
    assert len(metadata.create_partitions("t", 10_001)) == 10_000


# --- brokers, partition changes, producer ids ----------------------------------------------


def test_broker_records_replay_into_registrations() -> None:
    metadata = ClusterMetadata()
    apply(metadata, [RegisterBrokerRecord(1, "a", 5, plaintext_at("h1", 9092), "r1"),
                     RegisterBrokerRecord(2, "b", 6, plaintext_at("h2", 9093), None, fenced=False)])
    assert metadata.brokers == {
        1: BrokerRegistration(1, "a", 5, plaintext_at("h1", 9092), "r1", True),
        2: BrokerRegistration(2, "b", 6, plaintext_at("h2", 9093), None, False)}
    assert [b.broker_id for b in metadata.unfenced_brokers()] == [2]
    assert metadata.racks() == {1: "r1", 2: None}
    apply(metadata, [UnfenceBrokerRecord(1, 5), FenceBrokerRecord(2, 6)])
    assert [b.broker_id for b in metadata.unfenced_brokers()] == [1]
    apply(metadata, [RegisterBrokerRecord(1, "c", 9, plaintext_at("h9", 1), None)])
    assert metadata.brokers[1] == BrokerRegistration(1, "c", 9, plaintext_at("h9", 1), None, True)
    apply(metadata, [UnregisterBrokerRecord(2, 6)])
    assert list(metadata.brokers) == [1]


@pytest.mark.parametrize(
    "record",
    [FenceBrokerRecord(1, 4), UnfenceBrokerRecord(1, 6), UnregisterBrokerRecord(1, 4),
     FenceBrokerRecord(2, 5), UnregisterBrokerRecord(2, 5)],
)
def test_registration_changes_must_name_the_current_epoch(record: MetadataRecord) -> None:
    metadata = ClusterMetadata()
    metadata.replay(RegisterBrokerRecord(1, "a", 5, plaintext_at("h", 1), None))
    with pytest.raises(ReplayError):
        metadata.replay(record)


def partition_of(metadata: ClusterMetadata, name: str = "orders",
                 index: int = 0) -> PartitionRecord:
    return metadata.topic(name).partitions[index]


def test_partition_change_replay_bumps_epochs() -> None:
    metadata = created("orders", 1, 3)
    start = partition_of(metadata)
    assert (start.leader_epoch, start.partition_epoch) == (0, 0)
    topic_id = start.topic_id
    metadata.replay(PartitionChangeRecord(topic_id, 0, isr=(1, 2)))
    assert partition_of(metadata) == replace(start, isr=(1, 2), partition_epoch=1)
    metadata.replay(PartitionChangeRecord(topic_id, 0, leader=start.leader))
    assert partition_of(metadata) == replace(start, isr=(1, 2), partition_epoch=2)
    metadata.replay(PartitionChangeRecord(topic_id, 0, leader=2, isr=(2,)))
    assert partition_of(metadata) == replace(start, leader=2, isr=(2,), leader_epoch=1,
                                             partition_epoch=3)
    metadata.replay(PartitionChangeRecord(topic_id, 0, replicas=(2, 3)))
    assert partition_of(metadata).replicas == (2, 3)
    assert partition_of(metadata).partition_epoch == 4


@pytest.mark.parametrize("record", [PartitionChangeRecord("id-orders", 3, leader=1),
                                    PartitionChangeRecord("nope", 0, leader=1)])
def test_a_change_of_an_unknown_partition_is_a_replay_error(record: MetadataRecord) -> None:
    metadata = created("orders", 1, 1)
    with pytest.raises(ReplayError):
        metadata.replay(record)


def test_partition_lookup_by_topic_id() -> None:
    metadata = created("orders", 2, 1)
    assert metadata.partition("id-orders", 1) is partition_of(metadata, index=1)
    with refused(ErrorCode.unknown_topic_id):
        metadata.partition("nope", 0)
    with refused(ErrorCode.unknown_topic_or_partition):
        metadata.partition("id-orders", 2)


def test_producer_id_blocks_only_move_forward() -> None:
    metadata = ClusterMetadata()
    metadata.replay(ProducerIdsRecord(1, 5, 1000))
    assert metadata.next_producer_id == 1000
    for stale in (1000, 999):
        with pytest.raises(ReplayError):
            metadata.replay(ProducerIdsRecord(1, 5, stale))
    assert metadata.next_producer_id == 1000


def test_to_records_rebuilds_every_part_of_the_state() -> None:
    metadata = created("orders", 3, 2, {"retention.ms": "5"})
    apply(metadata, metadata.create_topic("other", "id-other", 1, 1, {}))
    apply(metadata, [
        RegisterBrokerRecord(7, "x", 30, plaintext_at("h", 1), "rack-7"),
        FenceBrokerRecord(2, 12),
        PartitionChangeRecord("id-orders", 1, leader=3, isr=(3,)),
        ProducerIdsRecord(1, 11, 3000),
        ConfigRecord(ConfigResourceType.BROKER, "", "log.retention.ms", "9"),
        ConfigRecord(ConfigResourceType.BROKER, "1", "log.segment.bytes", "2048"),
    ])
    records = metadata.to_records()
    rebuilt = ClusterMetadata()
    apply(rebuilt, decode_batch(encode_batch(records)))
    assert snapshot(rebuilt) == snapshot(metadata)
    assert partition_of(rebuilt, index=1).leader_epoch == 1
    assert rebuilt.to_records() == records
    assert ClusterMetadata().to_records() == []
