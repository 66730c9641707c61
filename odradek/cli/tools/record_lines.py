"""Records as lines of text, both ways: what `odradek produce` reads and `odradek consume`
prints. Pure: bytes in, records out, and back.

Two formats:

* `text`, Kafka's own: the console producer's LineMessageReader (`parse.key`,
  `key.separator`, `parse.headers`, `headers.delimiter`, `headers.separator`,
  `headers.key.separator`, `null.marker`, `ignore.error`) and the console consumer's
  DefaultMessageFormatter (`print.key`, `print.value`, `print.headers`, `print.timestamp`,
  `print.partition`, `print.offset`, `print.epoch`, `print.delivery`, `key.separator`,
  `line.separator`, `headers.separator`, `null.literal`). Separators are literal strings.

* `json`, one JSON object per line: `topic`, `partition`, `offset`, `timestamp` (ms),
  `timestampType` (`CreateTime`, `LogAppendTime` or `NoTimestampType`), `key`, `value` and
  `headers`, a list of `[key, value]` pairs in record order (duplicates kept). A null key,
  value or header value is JSON `null`. Bytes that are valid UTF-8 are a JSON string of that
  text; any other bytes are an object `{"base64": "<standard base64>"}`, so every byte
  string survives the trip exactly. Read back, `key`, `value`, `headers`, and `partition`
  and `timestamp` when present, make the record; `topic`, `offset` and `timestampType` are
  ignored, so a consumed line can be produced again as it is.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, NamedTuple

from odradek.cli.tools.common import ToolError

Header = tuple[str, bytes | None]
TIMESTAMP_TYPES = ("NoTimestampType", "CreateTime", "LogAppendTime")
"""Kafka's TimestampType names, indexed as confluent-kafka numbers them (0, 1, 2)."""
JSON_FIELDS = ("topic", "partition", "offset", "timestamp", "timestampType", "key", "value",
               "headers")


class ProducerRecord(NamedTuple):
    """A record to produce; None partition or timestamp lets the producer choose."""

    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    partition: int | None = None
    timestamp: int | None = None


class ConsumerRecord(NamedTuple):
    """A consumed record, with where it was and what the broker says about it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    leader_epoch: int | None = None


def split_property(text: str) -> tuple[str, str]:
    """A `--property key=value` item; the value is kept as given (a separator may be a
    space or a tab)."""
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise ToolError(f"expected key=value, got {text!r}")
    return key.strip(), value


def _flag(properties: Mapping[str, str], name: str, default: bool) -> bool:
    return properties[name].strip().lower() == "true" if name in properties else default


def _check_known(properties: Mapping[str, str], known: Sequence[str], what: str) -> None:
    unknown = sorted(set(properties) - set(known))
    if unknown:
        raise ToolError(f"unknown {what} propert{'y' if len(unknown) == 1 else 'ies'} "
                        f"{', '.join(unknown)} (known: {', '.join(known)})")


# --- text, read ------------------------------------------------------------------------------

READER_PROPERTIES = ("parse.key", "key.separator", "parse.headers", "headers.delimiter",
                     "headers.separator", "headers.key.separator", "null.marker",
                     "ignore.error")


@dataclass(frozen=True)
class LineReader:
    """Kafka's LineMessageReader: `[headers<delimiter>][key<separator>]value` per line."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LineReader:
        _check_known(properties, READER_PROPERTIES, "reader")

        def text(name: str, default: bytes) -> bytes:
            return properties[name].encode() if name in properties else default

        marker = properties.get("null.marker")
        reader = cls(
            parse_key=_flag(properties, "parse.key", False),
            key_separator=text("key.separator", b"\t"),
            parse_headers=_flag(properties, "parse.headers", False),
            headers_delimiter=text("headers.delimiter", b"\t"),
            headers_separator=text("headers.separator", b","),
            headers_key_separator=text("headers.key.separator", b":"),
            null_marker=None if marker is None else marker.encode(),
            ignore_error=_flag(properties, "ignore.error", False),
        )
        reader._check_distinct()
        return reader

    def _check_distinct(self) -> None:
        """Kafka's rule: the headers' separators differ, and none of the separators is the
        null marker."""
        separators = {"headers.delimiter": self.headers_delimiter,
                      "headers.separator": self.headers_separator,
                      "headers.key.separator": self.headers_key_separator}
        for (first, first_value), (second, second_value) in combinations(separators.items(), 2):
            if first_value == second_value:
                raise ToolError(f"{first} and {second} may not be equal")
        for name, value in {"key.separator": self.key_separator, **separators}.items():
            if value == self.null_marker:
                raise ToolError(f"null.marker and {name} may not be equal")

    def parse(self, line: bytes, line_number: int) -> ProducerRecord:
        """One input line, its line ending already removed."""
        headers = self._field(self.parse_headers, line, 0, self.headers_delimiter,
                              "headers delimiter", line_number)
        start = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._field(self.parse_key, line, start, self.key_separator, "key separator",
                          line_number)
        start += 0 if key is None else len(key) + len(self.key_separator)
        value = line[start:]
        return ProducerRecord(
            key=None if key == self.null_marker else key,
            value=None if value == self.null_marker else value,
            headers=() if headers is None or headers == self.null_marker
            else self._headers(headers, line_number),
        )

    def _field(self, enabled: bool, line: bytes, start: int, separator: bytes, name: str,
               line_number: int) -> bytes | None:
        if not enabled:
            return None
        end = line.find(separator, start)
        if end == -1:
            if self.ignore_error:
                return None
            raise ToolError(f"no {name} found on line {line_number}: {_shown(line)}")
        return line[start:end]

    def _headers(self, text: bytes, line_number: int) -> tuple[Header, ...]:
        pairs = text.split(self.headers_separator)
        while len(pairs) > 1 and not pairs[-1]:
            pairs.pop()  # as Java's String.split, which drops trailing empty strings
        return tuple(self._header(pair, line_number) for pair in pairs)

    def _header(self, pair: bytes, line_number: int) -> Header:
        key, separator, value = pair.partition(self.headers_key_separator)
        if not separator:
            if self.ignore_error:
                return _header_key(pair, line_number), None
            raise ToolError(f"no header key separator found in pair {_shown(pair)} on line "
                            f"{line_number}")
        if key == self.null_marker:
            raise ToolError(f"header keys may not equal the null marker "
                            f"{_shown(key)} (line {line_number})")
        return _header_key(key, line_number), None if value == self.null_marker else value


def _header_key(key: bytes, line_number: int) -> str:
    try:
        return key.decode()
    except UnicodeDecodeError:
        raise ToolError(f"header key {_shown(key)} on line {line_number} is not UTF-8"
                        ) from None


def _shown(data: bytes) -> str:
    return repr(data.decode(errors="replace"))


# --- text, write -----------------------------------------------------------------------------

FORMATTER_PROPERTIES = ("print.timestamp", "print.key", "print.value", "print.partition",
                        "print.offset", "print.delivery", "print.epoch", "print.headers",
                        "key.separator", "line.separator", "headers.separator",
                        "null.literal")


@dataclass(frozen=True)
class MessageFormatter:
    """Kafka's DefaultMessageFormatter: the chosen fields, in Kafka's order, each but the
    last followed by `key.separator`, the record ended by `line.separator`."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> MessageFormatter:
        _check_known(properties, FORMATTER_PROPERTIES, "formatter")
        defaults = cls()

        def text(name: str, default: bytes) -> bytes:
            return properties[name].encode() if name in properties else default

        return cls(
            print_timestamp=_flag(properties, "print.timestamp", False),
            print_partition=_flag(properties, "print.partition", False),
            print_offset=_flag(properties, "print.offset", False),
            print_delivery=_flag(properties, "print.delivery", False),
            print_epoch=_flag(properties, "print.epoch", False),
            print_headers=_flag(properties, "print.headers", False),
            print_key=_flag(properties, "print.key", False),
            print_value=_flag(properties, "print.value", True),
            key_separator=text("key.separator", defaults.key_separator),
            line_separator=text("line.separator", defaults.line_separator),
            headers_separator=text("headers.separator", defaults.headers_separator),
            null_literal=text("null.literal", defaults.null_literal),
        )

    def format(self, record: ConsumerRecord) -> bytes:
        fields = []
        if self.print_timestamp:
            fields.append(b"NO_TIMESTAMP" if record.timestamp_type == TIMESTAMP_TYPES[0]
                          else f"{record.timestamp_type}:{record.timestamp}".encode())
        if self.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_delivery:
            fields.append(b"Delivery:NOT_PRESENT")
        if self.print_epoch:
            epoch = record.leader_epoch
            fields.append(b"Epoch:" + (b"NOT_PRESENT" if epoch is None else b"%d" % epoch))
        if self.print_headers:
            fields.append(self.headers_separator.join(
                key.encode() + b":" + self._bytes(value) for key, value in record.headers)
                or b"NO_HEADERS")
        if self.print_key:
            fields.append(self._bytes(record.key))
        if self.print_value:
            fields.append(self._bytes(record.value))
        return self.key_separator.join(fields) + self.line_separator if fields else b""

    def _bytes(self, data: bytes | None) -> bytes:
        return self.null_literal if data is None else data


# --- JSON lines ------------------------------------------------------------------------------


def encode_bytes(data: bytes | None) -> str | dict[str, str] | None:
    """Bytes as JSON: UTF-8 text as a string, anything else as `{"base64": ...}`."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(value: Any, what: str) -> bytes | None:
    """The inverse of `encode_bytes`; `what` names the field in the error."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            raise ToolError(f"{what}: a lone surrogate is not text") from None
    if isinstance(value, dict) and set(value) == {"base64"} and isinstance(value["base64"], str):
        try:
            return base64.b64decode(value["base64"], validate=True)
        except binascii.Error:
            raise ToolError(f"{what}: invalid base64") from None
    raise ToolError(f"{what}: expected a string, {{\"base64\": ...}} or null")


def format_json(record: ConsumerRecord) -> bytes:
    """One JSON line (without its line ending) for a consumed record."""
    return json.dumps({
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestampType": record.timestamp_type,
        "key": encode_bytes(record.key),
        "value": encode_bytes(record.value),
        "headers": [[key, encode_bytes(value)] for key, value in record.headers],
    }, ensure_ascii=False).encode("utf-8")


def parse_json(line: bytes, line_number: int) -> ProducerRecord:
    """A record to produce from one JSON line, in the form `format_json` writes."""
    where = f"line {line_number}"
    try:
        document = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ToolError(f"{where} is not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise ToolError(f"{where}: expected a JSON object")
    unknown = sorted(set(document) - set(JSON_FIELDS))
    if unknown:
        raise ToolError(f"{where}: unknown field {', '.join(unknown)} "
                        f"(known: {', '.join(JSON_FIELDS)})")
    return ProducerRecord(
        key=decode_bytes(document.get("key"), f"{where}, key"),
        value=decode_bytes(document.get("value"), f"{where}, value"),
        headers=_json_headers(document.get("headers"), where),
        partition=_optional_int(document.get("partition"), f"{where}, partition", 0),
        timestamp=_optional_int(document.get("timestamp"), f"{where}, timestamp", 0),
    )


def _json_headers(headers: Any, where: str) -> tuple[Header, ...]:
    if headers is None:
        return ()
    if not isinstance(headers, list):
        raise ToolError(f"{where}, headers: expected a list of [key, value] pairs")
    pairs = []
    for index, pair in enumerate(headers):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise ToolError(f"{where}, headers[{index}]: expected a [key, value] pair with a "
                            f"string key")
        pairs.append((pair[0], decode_bytes(pair[1], f"{where}, headers[{index}]")))
    return tuple(pairs)


def _optional_int(value: Any, what: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError(f"{what}: expected an integer >= {minimum} or null")
    return value
