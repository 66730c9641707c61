"""The coordinators' record schemas: generated from Kafka's own definitions (the JSON in the
pinned Kafka jars), and one reader and writer that lays out any of them as Kafka's
generated classes do."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from odradek.group.record_schema import GROUP_METADATA_VALUE
from odradek.protocol.coordinator_serde import RecordFormatError, UnknownRecordType
from odradek.protocol.message_schema import (
    build,
    by_record_type,
    read_key,
    read_versioned,
    struct_of,
    write_key,
    write_versioned,
)
from tests.jvm_toolchain import KAFKA_CLASSPATH, require
from tests.kafka_message_schemas import main, message, parse_definition, snake_case

DEFINITION = """
// A definition with every shape the coordinators' records use.
{
  "apiKey": 7,
  "type": "coordinator-value",
  "name": "ExampleValue",
  "validVersions": "0-2",
  "flexibleVersions": "1+",
  "fields": [
    { "name": "ProducerId", "type": "int64", "versions": "0+" },
    { "name": "GroupInstanceId", "type": "string", "versions": "1+", "nullableVersions": "1+",
      "default": "null" },
    { "name": "NextEpoch", "type": "int16", "taggedVersions": "1+", "tag": 1, "default": -1 },
    { "name": "Flag", "type": "bool", "versions": "2+", "taggedVersions": "2+", "tag": 0 },
    { "name": "Topics", "type": "[]TopicData", "versions": "0+", "nullableVersions": "1+" },
    { "name": "Assignment", "type": "bytes", "versions": "0+" }
  ],
  "commonStructs": [
    { "name": "TopicData", "versions": "0+", "fields": [
      { "name": "TopicId", "type": "uuid", "versions": "0+" },
      { "name": "Partitions", "type": "[]int32", "versions": "0+" }
    ]}
  ]
}
"""
EXAMPLE = message(parse_definition(DEFINITION))
TOPIC_ID = "7e0b1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"


def test_names_are_the_definitions_in_snake_case() -> None:
    assert [snake_case(n) for n in ("ProducerId", "TopicID", "TransactionLastUpdateTimestampMs",
                                    "GroupInstanceId")] == [
        "producer_id", "topic_id", "transaction_last_update_timestamp_ms", "group_instance_id"]


def test_a_non_flexible_version_has_fixed_lengths_and_no_tags() -> None:
    data = write_versioned(EXAMPLE, 0, {
        "producer_id": 5, "topics": ({"topic_id": TOPIC_ID, "partitions": (1, 2)},),
        "assignment": b"ab"})
    assert data.hex() == ("0000" "0000000000000005" "00000001" + TOPIC_ID.replace("-", "")
                          + "00000002" "00000001" "00000002" "00000002" "6162")
    assert read_versioned(EXAMPLE, data) == (0, {
        "producer_id": 5, "group_instance_id": None, "next_epoch": -1, "flag": False,
        "topics": ({"topic_id": TOPIC_ID, "partitions": (1, 2)},), "assignment": b"ab"})


def test_a_flexible_version_writes_a_tagged_field_only_off_its_default() -> None:
    quiet = write_versioned(EXAMPLE, 1, {"producer_id": 5, "group_instance_id": "i",
                                         "topics": None, "assignment": b""})
    assert quiet.hex() == "0001" "0000000000000005" "0269" "00" "01" "00"
    tagged = write_versioned(EXAMPLE, 2, {"producer_id": 5, "group_instance_id": None,
                                          "next_epoch": 3, "flag": True, "topics": (),
                                          "assignment": b"x"})
    assert tagged.hex() == ("0002" "0000000000000005" "00" "01" "0278"
                            "02" "00" "01" "01" "01" "02" "0003")
    assert read_versioned(EXAMPLE, tagged)[1]["next_epoch"] == 3
    assert read_versioned(EXAMPLE, tagged)[1]["flag"] is True


def test_values_a_version_cannot_hold_are_refused() -> None:
    with pytest.raises(ValueError, match="not nullable in version 0"):
        write_versioned(EXAMPLE, 0, {"producer_id": 1, "topics": None})
    with pytest.raises(ValueError, match="out of range"):
        write_versioned(EXAMPLE, 0, {"producer_id": 1 << 64})
    with pytest.raises(ValueError, match="no version 3"):
        write_versioned(EXAMPLE, 3, {})
    with pytest.raises(ValueError, match="group_instance_id is not in version 0"):
        write_versioned(EXAMPLE, 0, {"group_instance_id": "i"})


@pytest.mark.parametrize("data, error", [
    ("0003", "ExampleValue has no version 3"),
    ("0000" "00000000000000", "truncated"),
    ("0000" "0000000000000005" "00000000" "00000000" "ff", "1 trailing bytes"),
    ("0001" "0000000000000005" "00" "00" "01" "01" "00" "05" "0003", "truncated"),
])
def test_bytes_kafka_could_not_have_written_are_refused(data: str, error: str) -> None:
    with pytest.raises(RecordFormatError, match=error):
        read_versioned(EXAMPLE, bytes.fromhex(data))


def test_a_key_is_its_record_type_and_version_0() -> None:
    key = message(parse_definition("""{"apiKey": 3, "type": "coordinator-key",
        "name": "ExampleKey", "validVersions": "0", "flexibleVersions": "none",
        "fields": [{"name": "GroupId", "type": "string", "versions": "0"}]}"""))
    data = write_key(key, {"group_id": "g"})
    assert data.hex() == "0003" "0001" "67"
    assert read_key(by_record_type(key), data) == (key, {"group_id": "g"})
    with pytest.raises(UnknownRecordType):
        read_key(by_record_type(key), bytes.fromhex("0004" "0001" "67"))


def test_the_generated_modules_are_what_the_pinned_kafka_jars_define(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A module edited by hand, or a Kafka upgrade not regenerated, fails here."""
    require()
    status = main(["--check", "--classpath", str(KAFKA_CLASSPATH)])
    assert status == 0, capsys.readouterr().out


def test_null_strings_of_a_non_flexible_version_as_kafka_writes_them() -> None:
    """GroupMetadataValue v3 with a null protocol and leader: the bytes Kafka 4.3.1's
    generated class writes (MessageUtil.toVersionPrefixedByteBuffer)."""
    kafka_bytes = bytes.fromhex("0003" "0008636f6e73756d6572" "00000005" "ffff" "ffff"
                                "ffffffffffffffff" "00000000")
    values = {"protocol_type": "consumer", "generation": 5, "protocol": None, "leader": None,
              "current_state_timestamp": -1, "members": ()}
    assert write_versioned(GROUP_METADATA_VALUE, 3, values) == kafka_bytes
    assert read_versioned(GROUP_METADATA_VALUE, kafka_bytes) == (3, values)


ENDPOINT = message(parse_definition("""{"apiKey": 9, "type": "coordinator-value",
    "name": "EndpointValue", "validVersions": "0", "flexibleVersions": "0+", "fields": [
      {"name": "Endpoint", "type": "Endpoint", "versions": "0+", "nullableVersions": "0+",
       "default": null, "fields": [{"name": "Host", "type": "string", "versions": "0+"}]},
      {"name": "Epochs", "type": "[]int32", "versions": "0+", "nullableVersions": "0+",
       "taggedVersions": "0+", "tag": 0, "default": null}]}"""))


def test_nullable_structs_and_json_null_defaults_as_kafkas_generated_classes_have_them() -> None:
    """A nullable struct in place is marked by an int8 (-1 null, 1 present), in flexible
    versions too; a JSON null default is no default: an empty tagged array is left out and a
    null one written."""
    assert write_versioned(ENDPOINT, 0, {"endpoint": None}).hex() == "0000" "ff" "00"
    present = write_versioned(ENDPOINT, 0, {"endpoint": {"host": "h"}, "epochs": []})
    assert present.hex() == "0000" "01" "0268" "00" "00"
    assert read_versioned(ENDPOINT, present) == (0, {"endpoint": {"host": "h"}, "epochs": ()})
    null_epochs = write_versioned(ENDPOINT, 0, {"endpoint": None, "epochs": None})
    assert null_epochs.hex() == "0000" "ff" "01" "00" "01" "00"
    assert read_versioned(ENDPOINT, null_epochs) == (0, {"endpoint": None, "epochs": None})


@dataclass(frozen=True)
class Host:
    host: str


@dataclass(frozen=True)
class Endpoint:
    endpoint: Host | None


def test_dataclasses_convert_by_field_name_optional_nested_ones_too() -> None:
    for value in (Endpoint(Host("h")), Endpoint(None)):
        _, fields = read_versioned(ENDPOINT, write_versioned(ENDPOINT, 0, struct_of(value)))
        assert build(Endpoint, fields) == value
