"""A structural walk of a request body before kio's native decoder reads it.

kio's native reader sizes arrays by their declared count before reading them, and a
garbage count (say 2**31) makes it abort the whole process on a failed allocation. This
walk, compiled once per schema from kio's own dataclasses, proves that every length and
count in the body fits inside the frame; only then does kio decode it.
"""

from __future__ import annotations

import struct
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

Buffer = bytes | bytearray | memoryview
Step = Callable[[Buffer, int], int]


class StructureError(Exception):
    """The body's lengths do not fit its frame."""


_FIXED_SIZES = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "timedelta_i32": 4,
    "int64": 8, "timedelta_i64": 8, "float64": 8, "uuid": 16,
}
_NONE: Mapping[int, Step] = {}
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def read_uvarint(buf: Buffer, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(buf):
            raise StructureError("truncated varint")
        byte = buf[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
        if shift > 28:
            raise StructureError("varint longer than 5 bytes")


def _advance(buf: Buffer, position: int, size: int) -> int:
    end = position + size
    if end > len(buf):
        raise StructureError(f"{size} bytes declared at {position}, frame ends at {len(buf)}")
    return end


def _fixed(size: int) -> Step:
    return lambda buf, position: _advance(buf, position, size)


def _length_prefixed(flexible: bool, wide: bool) -> Step:
    """string (int16 length), bytes/records (int32), or their compact forms."""

    def step(buf: Buffer, position: int) -> int:
        if flexible:
            length, position = read_uvarint(buf, position)
            return _advance(buf, position, max(length - 1, 0))
        prefix = _INT32 if wide else _INT16
        _advance(buf, position, prefix.size)
        (length,) = prefix.unpack_from(buf, position)
        return _advance(buf, position + prefix.size, max(length, 0))

    return step


def _primitive(kafka_type: str, flexible: bool) -> Step:
    if kafka_type in _FIXED_SIZES:
        return _fixed(_FIXED_SIZES[kafka_type])
    if kafka_type == "string":
        return _length_prefixed(flexible, wide=False)
    if kafka_type in ("bytes", "records"):
        return _length_prefixed(flexible, wide=True)
    raise TypeError(f"unknown kafka_type {kafka_type!r}")


def _array(element: Step, flexible: bool) -> Step:
    def step(buf: Buffer, position: int) -> int:
        if flexible:
            count, position = read_uvarint(buf, position)
            count -= 1
        else:
            _advance(buf, position, 4)
            (count,) = _INT32.unpack_from(buf, position)
            position += 4
        if count > len(buf) - position:
            raise StructureError(f"array of {count} at {position} cannot fit the frame")
        for _ in range(count):
            position = element(buf, position)
        return position

    return step


def _nullable_struct(inner: Step) -> Step:
    """A nullable struct: an int8 presence marker (-1 null), then the struct."""

    def step(buf: Buffer, position: int) -> int:
        _advance(buf, position, 1)
        return position + 1 if buf[position] == 0xFF else inner(buf, position + 1)

    return step


def _field_step(kind: Any, kafka_type: str | None, flexible: bool) -> Step:
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        if isinstance(kind, type) and is_dataclass(kind):
            return _nullable_struct(entity_step(kind))
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        element = (
            entity_step(item)
            if isinstance(item, type) and is_dataclass(item)
            else _primitive(str(kafka_type), flexible)
        )
        return _array(element, flexible)
    if isinstance(kind, type) and is_dataclass(kind):
        return entity_step(kind)
    return _primitive(str(kafka_type), flexible)


def skip_tagged_fields(buf: Buffer, position: int, known: Mapping[int, Step] = _NONE) -> int:
    """Past a tagged-field section; the content of each `known` tag is walked too."""
    count, position = read_uvarint(buf, position)
    for _ in range(count):
        tag, position = read_uvarint(buf, position)
        size, position = read_uvarint(buf, position)
        end = _advance(buf, position, size)
        step = known.get(tag)
        if step is not None and step(memoryview(buf)[:end], position) != end:
            raise StructureError(f"tagged field {tag} does not fill its {size} bytes")
        position = end
    return position


def _is_array(kind: Any) -> bool:
    """An array field, nullable (`tuple[...] | None`) or not."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return any(typing.get_origin(arg) is tuple for arg in typing.get_args(kind))
    return typing.get_origin(kind) is tuple


@cache
def entity_step(cls: type) -> Step:
    """The walk over one entity (request body or nested struct) of kio's schemas."""
    flexible = bool(getattr(cls, "__flexible__", False))
    hints = typing.get_type_hints(cls)
    plan: list[Step | int] = []
    tagged: dict[int, Step] = {}
    for item in fields(cls):
        kind, kafka_type = hints[item.name], item.metadata.get("kafka_type")
        if "tag" in item.metadata:
            tagged[item.metadata["tag"]] = _field_step(kind, kafka_type, flexible)
        elif kafka_type in _FIXED_SIZES and not _is_array(kind):
            size = _FIXED_SIZES[kafka_type]
            if plan and isinstance(plan[-1], int):
                plan[-1] += size
            else:
                plan.append(size)
        else:
            plan.append(_field_step(kind, kafka_type, flexible))
    steps = [_fixed(item) if isinstance(item, int) else item for item in plan]

    def walk(buf: Buffer, position: int) -> int:
        for step in steps:
            position = step(buf, position)
        return skip_tagged_fields(buf, position, tagged) if flexible else position

    return walk
