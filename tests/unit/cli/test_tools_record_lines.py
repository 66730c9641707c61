"""Records as lines: Kafka's line reader and message formatter, and JSON lines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.cli.tools.common import ToolError
from odradek.cli.tools.record_lines import (
    ConsumerRecord,
    LineReader,
    MessageFormatter,
    ProducerRecord,
    decode_bytes,
    encode_bytes,
    format_json,
    parse_json,
    split_property,
)


def reader(**properties: str) -> LineReader:
    return LineReader.from_properties({k.replace("_", "."): v for k, v in properties.items()})


def consumed(**fields: object) -> ConsumerRecord:
    record = ConsumerRecord("t", 3, 42, 1_700_000_000_000, "CreateTime", b"k", b"v",
                            (("h1", b"a"), ("h2", None)), 7)
    return record._replace(**fields)


# --- split_property ---------------------------------------------------------------------------


def test_a_property_keeps_its_value_as_given() -> None:
    assert split_property("key.separator=\t") == ("key.separator", "\t")
    assert split_property("null.marker= = ") == ("null.marker", " = ")
    assert split_property("key.separator=") == ("key.separator", "")


@pytest.mark.parametrize("text", ["parse.key", "=true", " =x"])
def test_a_property_needs_a_key_and_an_equals_sign(text: str) -> None:
    with pytest.raises(ToolError, match="expected key=value"):
        split_property(text)


# --- LineReader -------------------------------------------------------------------------------


def test_by_default_the_whole_line_is_the_value() -> None:
    assert LineReader().parse(b"a\tb:c,d", 1) == ProducerRecord(None, b"a\tb:c,d")
    assert LineReader().parse(b"", 1) == ProducerRecord(None, b"")


def test_parse_key_splits_at_the_first_separator() -> None:
    assert reader(parse_key="true").parse(b"k\tv\tw", 1) == ProducerRecord(b"k", b"v\tw")
    assert reader(parse_key="TRUE ", key_separator="::").parse(b"a::b", 1) == \
        ProducerRecord(b"a", b"b")


def test_headers_then_key_then_value() -> None:
    record = reader(parse_key="true", parse_headers="true").parse(
        b"h1:v1,h1:v2,h2:\tkey\tvalue", 1)
    assert record == ProducerRecord(b"key", b"value", (("h1", b"v1"), ("h1", b"v2"),
                                                       ("h2", b"")))


def test_header_values_may_hold_the_key_separator() -> None:
    record = reader(parse_headers="true").parse(b"url:http://x\tvalue", 1)
    assert record.headers == (("url", b"http://x"),)


def test_trailing_empty_header_pairs_are_dropped_as_java_split_does() -> None:
    assert reader(parse_headers="true").parse(b"a:1,,\tv", 1).headers == (("a", b"1"),)


def test_the_null_marker_makes_nulls() -> None:
    read = reader(parse_key="true", parse_headers="true", null_marker="<null>")
    assert read.parse(b"h:<null>\t<null>\t<null>", 1) == \
        ProducerRecord(None, None, (("h", None),))
    assert read.parse(b"<null>\tk\tv", 1) == ProducerRecord(b"k", b"v")


def test_a_header_key_may_not_be_the_null_marker() -> None:
    with pytest.raises(ToolError, match="null marker"):
        reader(parse_headers="true", null_marker="N").parse(b"N:x\tv", 4)


def test_a_missing_separator_is_an_error_naming_the_line() -> None:
    with pytest.raises(ToolError, match="no key separator found on line 7: 'novalue'"):
        reader(parse_key="true").parse(b"novalue", 7)
    with pytest.raises(ToolError, match="no headers delimiter found on line 2"):
        reader(parse_headers="true").parse(b"v", 2)
    with pytest.raises(ToolError, match="no header key separator found in pair 'h' on line 3"):
        reader(parse_headers="true").parse(b"h\tv", 3)


def test_ignore_error_makes_the_best_of_a_bad_line() -> None:
    read = reader(parse_key="true", parse_headers="true", ignore_error="true")
    assert read.parse(b"novalue", 1) == ProducerRecord(None, b"novalue")
    assert read.parse(b"h\tk\tv", 1) == ProducerRecord(b"k", b"v", (("h", None),))


def test_values_need_not_be_utf8() -> None:
    assert reader(parse_key="true").parse(b"\xff\t\xfe\x00", 1) == \
        ProducerRecord(b"\xff", b"\xfe\x00")


def test_header_keys_must_be_utf8() -> None:
    with pytest.raises(ToolError, match="not UTF-8"):
        reader(parse_headers="true").parse(b"\xff:1\tv", 1)


@pytest.mark.parametrize(("properties", "message"), [
    ({"headers.separator": "\t"}, "headers.delimiter and headers.separator"),
    ({"headers.key.separator": "\t"}, "headers.delimiter and headers.key.separator"),
    ({"headers.key.separator": ","}, "headers.separator and headers.key.separator"),
    ({"null.marker": "\t"}, "null.marker and key.separator"),
    ({"null.marker": ","}, "null.marker and headers.separator"),
    ({"null.marker": ":"}, "null.marker and headers.key.separator"),
    ({"parse.keys": "true"}, "unknown reader property parse.keys"),
])
def test_conflicting_or_unknown_reader_properties(properties: dict[str, str],
                                                  message: str) -> None:
    with pytest.raises(ToolError, match=message):
        LineReader.from_properties(properties)


def test_the_key_separator_may_equal_a_header_separator() -> None:
    read = reader(parse_key="true", parse_headers="true", key_separator=",",
                  headers_delimiter="|")
    assert read.parse(b"a:1|k,v", 1) == ProducerRecord(b"k", b"v", (("a", b"1"),))


# --- MessageFormatter -------------------------------------------------------------------------


def test_the_default_prints_the_value_alone() -> None:
    assert MessageFormatter().format(consumed()) == b"v\n"
    assert MessageFormatter().format(consumed(value=None)) == b"null\n"


def test_every_field_in_kafkas_order() -> None:
    formatter = MessageFormatter.from_properties({
        name: "true" for name in ("print.timestamp", "print.partition", "print.offset",
                                  "print.delivery", "print.epoch", "print.headers",
                                  "print.key")})
    assert formatter.format(consumed()) == (
        b"CreateTime:1700000000000\tPartition:3\tOffset:42\tDelivery:NOT_PRESENT\tEpoch:7\t"
        b"h1:a,h2:null\tk\tv\n")


def test_separators_and_null_literal() -> None:
    formatter = MessageFormatter.from_properties({
        "print.key": "true", "print.headers": "true", "key.separator": " | ",
        "line.separator": "\r\n", "headers.separator": ";", "null.literal": "NULL"})
    assert formatter.format(consumed(key=None)) == b"h1:a;h2:NULL | NULL | v\r\n"


def test_no_headers_no_timestamp_no_epoch() -> None:
    formatter = MessageFormatter.from_properties(
        {"print.timestamp": "true", "print.headers": "true", "print.epoch": "true"})
    record = consumed(timestamp=-1, timestamp_type="NoTimestampType", headers=(),
                      leader_epoch=None)
    assert formatter.format(record) == b"NO_TIMESTAMP\tEpoch:NOT_PRESENT\tNO_HEADERS\tv\n"
    assert formatter.format(consumed(timestamp_type="LogAppendTime")).startswith(
        b"LogAppendTime:1700000000000\t")


def test_the_line_ends_after_the_last_printed_field() -> None:
    key_only = MessageFormatter.from_properties({"print.key": "true", "print.value": "false"})
    assert key_only.format(consumed()) == b"k\n"
    nothing = MessageFormatter.from_properties({"print.value": "false"})
    assert nothing.format(consumed()) == b""


def test_bytes_are_printed_as_they_are() -> None:
    assert MessageFormatter().format(consumed(value=b"\x00\xff")) == b"\x00\xff\n"


def test_an_unknown_formatter_property_is_refused() -> None:
    with pytest.raises(ToolError, match="unknown formatter property print.keys"):
        MessageFormatter.from_properties({"print.keys": "true"})


# --- JSON lines -------------------------------------------------------------------------------


def test_utf8_is_a_string_other_bytes_are_base64() -> None:
    assert encode_bytes(b"h\xc3\xa9") == "hé"
    assert encode_bytes(b"\xff\x00") == {"base64": "/wA="}
    assert encode_bytes(None) is None
    assert encode_bytes(b"") == ""


def test_a_consumed_record_as_json() -> None:
    line = format_json(consumed(value=b"\x80"))
    assert b"\n" not in line
    assert json.loads(line) == {
        "topic": "t", "partition": 3, "offset": 42, "timestamp": 1_700_000_000_000,
        "timestampType": "CreateTime", "key": "k", "value": {"base64": "gA=="},
        "headers": [["h1", "a"], ["h2", None]]}


def test_a_json_line_as_a_record_to_produce() -> None:
    line = (b'{"topic": "ignored", "offset": 9, "timestampType": "LogAppendTime", '
            b'"partition": 1, "timestamp": 5, "key": null, "value": {"base64": "AAE="}, '
            b'"headers": [["a", "1"], ["a", null]]}')
    assert parse_json(line, 1) == ProducerRecord(None, b"\x00\x01", (("a", b"1"), ("a", None)),
                                                 partition=1, timestamp=5)


def test_every_json_field_is_optional() -> None:
    assert parse_json(b"{}", 1) == ProducerRecord(None, None)
    assert parse_json(b'{"value": "x", "partition": null, "timestamp": null}', 1) == \
        ProducerRecord(None, b"x")


@pytest.mark.parametrize(("line", "message"), [
    (b"{bad", "line 3 is not valid JSON"),
    (b"\xff", "line 3 is not valid JSON"),
    (b"[1]", "line 3: expected a JSON object"),
    (b'{"vaule": "x"}', "line 3: unknown field vaule"),
    (b'{"value": 1}', "line 3, value: expected a string"),
    (b'{"key": {"base64": "!!"}}', "line 3, key: invalid base64"),
    (b'{"key": {"base64": "AA==", "x": 1}}', "line 3, key: expected a string"),
    (b'{"value": "\\ud800"}', "line 3, value: a lone surrogate"),
    (b'{"headers": {"a": "b"}}', "line 3, headers: expected a list"),
    (b'{"headers": [["a"]]}', r"line 3, headers\[0\]: expected a \[key, value\] pair"),
    (b'{"headers": [[1, "x"]]}', r"line 3, headers\[0\]"),
    (b'{"headers": [["a", 2]]}', r"line 3, headers\[0\]: expected a string"),
    (b'{"partition": -1}', "line 3, partition: expected an integer >= 0"),
    (b'{"partition": "1"}', "line 3, partition"),
    (b'{"timestamp": true}', "line 3, timestamp"),
    (b'{"timestamp": 1.5}', "line 3, timestamp"),
])
def test_malformed_json_lines(line: bytes, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_json(line, 3)


def test_decode_bytes_is_the_inverse_of_encode_bytes_for_strings_and_base64() -> None:
    assert decode_bytes("hé", "x") == b"h\xc3\xa9"
    assert decode_bytes({"base64": "/wA="}, "x") == b"\xff\x00"
    assert decode_bytes(None, "x") is None


optional_bytes = st.none() | st.binary(max_size=64) | st.text(max_size=16).map(str.encode)
headers = st.lists(st.tuples(st.text(max_size=8), optional_bytes), max_size=5).map(tuple)


@given(key=optional_bytes, value=optional_bytes, headers=headers,
       partition=st.integers(0, 2**31 - 1), timestamp=st.integers(0, 2**62))
def test_json_lines_round_trip_any_record(key: bytes | None, value: bytes | None,
                                          headers: tuple[tuple[str, bytes | None], ...],
                                          partition: int, timestamp: int) -> None:
    record = ConsumerRecord("topic", partition, 12, timestamp, "CreateTime", key, value,
                            headers)
    line = format_json(record)
    assert b"\n" not in line
    assert parse_json(line, 1) == ProducerRecord(key, value, headers, partition, timestamp)


@given(key=st.binary(max_size=32), value=st.binary(max_size=32),
       header_values=st.lists(st.binary(max_size=8), min_size=1, max_size=4))
def test_text_lines_round_trip_when_separators_are_absent(
        key: bytes, value: bytes, header_values: list[bytes]) -> None:
    """What the formatter prints with keys and headers, the reader reads back."""
    separators = (b"\t", b"\n", b"\r", b",", b":")
    key = bytes(b for b in key if bytes([b]) not in separators)
    value = bytes(b for b in value if bytes([b]) not in separators)
    pairs = tuple((f"h{i}", bytes(b for b in v if bytes([b]) not in separators))
                  for i, v in enumerate(header_values))
    printed = MessageFormatter(print_headers=True, print_key=True).format(
        consumed(key=key, value=value, headers=pairs))
    read = reader(parse_key="true", parse_headers="true").parse(printed.rstrip(b"\n"), 1)
    assert read == ProducerRecord(key, value, pairs)
