"""Kafka's message definitions as data, and one reader and one writer for all of them.

The records Kafka's coordinators keep in their internal topics are defined by JSON files in
Kafka's jars (`common/message/*.json`); `tests/kafka_message_schemas.py` turns them into
`Message` values in generated modules. This module reads and writes any of them at any of
its versions, as Kafka's generated classes do: the fields present in a version in order,
compact lengths and tagged fields (written only off their default) in flexible versions. A
struct is a dict by the fields' snake_case names; an array of structs, a tuple of dicts."""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from odradek.protocol.coordinator_serde import (
    RecordFormatError,
    RecordReader,
    RecordWriter,
    UnknownRecordType,
)

Struct = dict[str, Any]
T = TypeVar("T")


class _Zero:
    """A field without a JSON default: its type's zero value."""

    def __repr__(self) -> str:
        return "ZERO"


ZERO: Any = _Zero()


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    """snake_case, as the dicts are keyed."""
    type: str
    """Kafka's type: int8, int16, int32, int64, uint16, float64, bool, string, bytes, uuid,
    `[]` followed by one of those, or a struct's name (with `fields`), or `[]` and one."""
    versions: str = "none"
    nullable: str = "none"
    tagged: str = "none"
    tag: int | None = None
    default: Any = ZERO
    """The JSON default (None for "null"), or ZERO: the type's zero value (0, false, "",
    empty, an empty struct)."""
    fields: tuple[Field, ...] = ()
    ignorable: bool = False
    """A value for a version without the field is dropped, not refused."""


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    api_key: int | None
    """A coordinator key's record type, its value's (the value's apiKey), or None."""
    valid: str
    flexible: str
    fields: tuple[Field, ...]

    def versions(self) -> range:
        low, high = _bounds(self.valid)
        return range(low, high + 1)


@cache
def _bounds(spec: str) -> tuple[int, int]:
    """A version range ("0+", "1-3", "2", "none") as (low, high); high is 32767 for "N+"
    and low > high for "none"."""
    if spec == "none":
        return 1, 0
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


@cache
def _within(spec: str, version: int) -> bool:
    low, high = _bounds(spec)
    return low <= version <= high


def read_versioned(message: Message, data: bytes) -> tuple[int, Struct]:
    """An int16 version and the message at that version; RecordFormatError for bytes that
    are not exactly that (an unknown version, truncated, trailing bytes)."""
    reader = RecordReader(data)
    version = reader.int16()
    values = read(message, version, reader)
    reader.end()
    return version, values


def by_record_type(*keys: Message) -> dict[int, Message]:
    """Coordinator key definitions by their record type, as `read_key` takes them."""
    found = {}
    for key in keys:
        assert key.api_key is not None, f"{key.name} is not a coordinator key"
        found[key.api_key] = key
    return found


def read_key(messages: Mapping[int, Message], data: bytes) -> tuple[Message, Struct]:
    """A coordinator record's key: its int16 record type (the key definitions' apiKey, as
    MessageUtil.toCoordinatorTypePrefixedBytes writes it), which picks the definition, and
    the key at version 0. UnknownRecordType for a type not in `messages`."""
    reader = RecordReader(data)
    record_type = reader.int16()
    message = messages.get(record_type)
    if message is None:
        raise UnknownRecordType(record_type)
    values = read(message, 0, reader)
    reader.end()
    return message, values


def write_key(message: Message, values: Mapping[str, Any]) -> bytes:
    """A coordinator record's key: its record type, and the key at version 0."""
    assert message.api_key is not None, f"{message.name} is not a coordinator key"
    writer = RecordWriter(flexible=_within(message.flexible, 0))
    writer.int16(message.api_key)
    return _written(writer, message, 0, values)


def read(message: Message, version: int, reader: RecordReader) -> Struct:
    if version not in message.versions():
        raise RecordFormatError(f"{message.name} has no version {version}")
    reader.flexible = _within(message.flexible, version)
    return _read_struct(reader, message.fields, version)


def write_versioned(message: Message, version: int, values: Mapping[str, Any]) -> bytes:
    """The int16 version and the message; a value missing from `values` is the field's
    default. ValueError for a value its field cannot hold."""
    if version not in message.versions():
        raise ValueError(f"{message.name} has no version {version}")
    writer = RecordWriter(flexible=_within(message.flexible, version))
    writer.int16(version)
    return _written(writer, message, version, values)


def _written(writer: RecordWriter, message: Message, version: int,
             values: Mapping[str, Any]) -> bytes:
    try:
        _write_struct(writer, message.fields, version, values)
    except struct.error as error:
        raise ValueError(f"{message.name}: a field out of range: {error}") from None
    return writer.getvalue()


def default(field: Field, version: int) -> Any:
    """The field's value when a version lacks it or a tagged field is left out: its JSON
    default, else its type's zero, as Kafka's generated classes have it: nullable fields too
    (a nullable struct's default is an empty struct, so a null one is written)."""
    if field.default is not ZERO:
        return field.default
    if field.type.startswith("[]"):
        return ()
    if field.fields:
        return {f.name: default(f, version) for f in field.fields}
    return _ZEROS[field.type]


_ZEROS: Mapping[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "float64": 0.0,
    "bool": False, "string": "", "bytes": b"",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


# A struct's fields at one version: where each is, and its default, worked out once.

_REGULAR, _TAGGED, _ABSENT = range(3)


@dataclass(frozen=True, slots=True)
class _Step:
    field: Field
    place: int
    default: Any
    read: Callable[[RecordReader], Any]
    write: Callable[[RecordWriter, Any], None]


_PLANS: dict[tuple[int, int], tuple[tuple[Field, ...], tuple[_Step, ...]]] = {}


def _plan(fields: tuple[Field, ...], version: int) -> tuple[_Step, ...]:
    """The steps of `fields` at `version`, cached by the tuple's identity (the generated
    schemas live as long as the process)."""
    cached = _PLANS.get((id(fields), version))
    if cached is not None and cached[0] is fields:
        return cached[1]
    steps = tuple(_step(field, version) for field in fields)
    _PLANS[(id(fields), version)] = (fields, steps)
    return steps


def _step(field: Field, version: int) -> _Step:
    place = (_TAGGED if field.tag is not None and _within(field.tagged, version)
             else _REGULAR if _within(field.versions, version) else _ABSENT)
    nullable = _within(field.nullable, version)
    tagged = place == _TAGGED
    return _Step(field, place, default(field, version),
                 _value_reader(field, version, nullable, tagged),
                 _value_writer(field, version, nullable, tagged))


# Reading.

def _read_struct(reader: RecordReader, fields: tuple[Field, ...], version: int) -> Struct:
    values: Struct = {}
    tagged: list[_Step] = []
    for step in _plan(fields, version):
        if step.place == _REGULAR:
            values[step.field.name] = step.read(reader)
        elif step.place == _TAGGED:
            tagged.append(step)
        else:
            values[step.field.name] = step.default
    found = reader.tagged_fields()
    for step in tagged:
        data = found.get(step.field.tag)  # type: ignore[arg-type]
        if data is None:
            values[step.field.name] = step.default
            continue
        inner = RecordReader(data)
        inner.flexible = True
        values[step.field.name] = step.read(inner)
        inner.end()
    return values


def _value_reader(field: Field, version: int, nullable: bool, tagged: bool
                  ) -> Callable[[RecordReader], Any]:
    if field.type.startswith("[]"):
        item = _item_reader(field, version)

        def read_array(reader: RecordReader) -> Any:
            if nullable and _null_length(reader):
                return None
            return reader.array(lambda: item(reader))
        return read_array
    if field.fields:
        fields = field.fields

        def read_struct(reader: RecordReader) -> Any:
            if nullable and not _present(reader, tagged):
                return None
            return _read_struct(reader, fields, version)
        return read_struct
    if field.type == "string":
        return RecordReader.nullable_string if nullable else RecordReader.string
    if field.type == "bytes" and nullable:
        return lambda reader: None if _null_length(reader) else reader.bytes_()
    return _PRIMITIVE_READS[field.type]


def _item_reader(field: Field, version: int) -> Callable[[RecordReader], Any]:
    if field.fields:
        fields = field.fields
        return lambda reader: _read_struct(reader, fields, version)
    element = field.type[2:]
    return RecordReader.string if element == "string" else _PRIMITIVE_READS[element]


def _present(reader: RecordReader, tagged: bool) -> bool:
    """A nullable struct's marker, as Kafka's generated readers take it: inside a tagged
    field an unsigned varint, 0 for null; elsewhere an int8, negative for null."""
    return reader.uvarint() > 0 if tagged else reader.int8() >= 0


def _null_length(reader: RecordReader) -> bool:
    """Whether a nullable array's or bytes' length is null; if not, it stays to be read."""
    mark = reader.position
    length = reader.uvarint() - 1 if reader.flexible else reader.int32()
    if length < 0:
        return True
    reader.position = mark
    return False


_PRIMITIVE_READS: Mapping[str, Callable[[RecordReader], Any]] = {
    "int8": RecordReader.int8, "int16": RecordReader.int16, "int32": RecordReader.int32,
    "int64": RecordReader.int64, "uint16": RecordReader.uint16,
    "float64": RecordReader.float64, "bool": RecordReader.bool_,
    "bytes": RecordReader.bytes_, "uuid": RecordReader.uuid,
}


# Writing.

def _write_struct(writer: RecordWriter, fields: tuple[Field, ...], version: int,
                  values: Mapping[str, Any]) -> None:
    tagged: list[tuple[int, bytes]] = []
    for step in _plan(fields, version):
        value = values.get(step.field.name, step.default)
        if isinstance(value, list):
            value = tuple(value)
        if step.place == _REGULAR:
            step.write(writer, value)
        elif step.place == _TAGGED:
            if value != step.default:
                inner = RecordWriter(flexible=True)
                step.write(inner, value)
                tagged.append((step.field.tag, inner.getvalue()))  # type: ignore[arg-type]
        elif value != step.default and not step.field.ignorable:
            raise ValueError(f"{step.field.name} is not in version {version}: {value!r}")
    writer.end_struct(sorted(tagged))


def _value_writer(field: Field, version: int, nullable: bool, tagged: bool
                  ) -> Callable[[RecordWriter, Any], None]:
    present: Callable[[RecordWriter, Any], None]
    null: Callable[[RecordWriter], None]
    if field.type.startswith("[]"):
        item = _item_writer(field, version)

        def present(writer: RecordWriter, value: Any) -> None:
            writer.array(value, lambda each: item(writer, each))
        null = RecordWriter.null_length
    elif field.fields:
        fields = field.fields

        def present(writer: RecordWriter, value: Any) -> None:
            if nullable:
                _mark(writer, True, tagged)
            _write_struct(writer, fields, version, value)

        def null(writer: RecordWriter) -> None:
            _mark(writer, False, tagged)
    else:
        present = _PRIMITIVE_WRITES[field.type]

        def null(writer: RecordWriter) -> None:
            if field.type == "string":
                writer.string(None)
            else:
                writer.null_length()

    def write(writer: RecordWriter, value: Any) -> None:
        if value is not None:
            present(writer, value)
        elif nullable:
            null(writer)
        else:
            raise ValueError(f"{field.name} is not nullable in version {version}")
    return write


def _mark(writer: RecordWriter, present: bool, tagged: bool) -> None:
    """A nullable struct's marker (see `_present`)."""
    if tagged:
        writer.uvarint(1 if present else 0)
    else:
        writer.int8(1 if present else -1)


def _item_writer(field: Field, version: int) -> Callable[[RecordWriter, Any], None]:
    if field.fields:
        fields = field.fields
        return lambda writer, item: _write_struct(writer, fields, version, item)
    return _PRIMITIVE_WRITES[field.type[2:]]


_PRIMITIVE_WRITES: Mapping[str, Callable[[RecordWriter, Any], None]] = {
    "int8": RecordWriter.int8, "int16": RecordWriter.int16, "int32": RecordWriter.int32,
    "int64": RecordWriter.int64, "uint16": RecordWriter.uint16,
    "float64": RecordWriter.float64, "bool": RecordWriter.bool_,
    "string": RecordWriter.string, "bytes": RecordWriter.bytes_, "uuid": RecordWriter.uuid,
}


# Dataclasses whose fields are named as a definition's.

def struct_of(value: Any) -> Struct:
    """A dataclass as the struct of a definition whose fields it names (some or all), with
    its nested dataclasses and tuples of them."""
    nested: dict[str, type | None] = _nested(type(value))  # type: ignore[arg-type]
    return {name: getattr(value, name) if kind is None else _plain(getattr(value, name))
            for name, kind in nested.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(struct_of(item) for item in value)
    return None if value is None else struct_of(value)


def build(cls: type[T], values: Struct) -> T:
    """The dataclass `cls` from a struct read by a definition that has all its fields;
    nested dataclasses (and tuples of them) are built by the fields' annotations."""
    nested: dict[str, type | None] = _nested(cls)  # type: ignore[arg-type]
    return cls(**{name: _built(kind, values[name]) for name, kind in nested.items()})


def _built(kind: type | None, value: Any) -> Any:
    if kind is None or value is None:
        return value
    if isinstance(value, tuple):
        return tuple(build(kind, item) for item in value)
    return build(kind, value)


@cache
def _nested(cls: type) -> dict[str, type | None]:
    """Each field of `cls`: the dataclass it holds (alone or in a tuple), or None."""
    hints = typing.get_type_hints(cls)
    found: dict[str, type | None] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        hint = hints[field.name]
        if typing.get_origin(hint) in (types.UnionType, typing.Union):
            hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
        args = typing.get_args(hint)
        inner = args[0] if typing.get_origin(hint) is tuple and args else hint
        found[field.name] = inner if isinstance(inner, type) and dataclasses.is_dataclass(
            inner) else None
    return found
