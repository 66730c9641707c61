"""The primitives of the records Kafka's coordinators keep in their internal topics
(`__consumer_offsets`, `__transaction_state`): fixed-width integers, strings, bytes and
arrays, with compact lengths and tagged fields in flexible versions, as Kafka's generated
message classes write them."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

_I8, _I16, _I32, _I64, _U8, _U16, _F64 = (
    struct.Struct(f) for f in (">b", ">h", ">i", ">q", ">B", ">H", ">d"))


class RecordFormatError(ValueError):
    """Bytes that are not a record Kafka's coordinators could have written."""


class UnknownRecordType(RecordFormatError):
    """A key of a record type the codec does not know (a newer Kafka's: share or streams
    groups, ...); loading skips it."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown coordinator record type {record_type}")
        self.record_type = record_type


class RecordReader:
    """Reads a coordinator record struct; `flexible` switches to compact lengths and
    tagged fields."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0
        self.flexible = False

    def _take(self, size: int) -> bytes:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise RecordFormatError("truncated record")
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def _unpack(self, fmt: struct.Struct) -> int:
        value: int = fmt.unpack(self._take(fmt.size))[0]
        return value

    def int8(self) -> int:
        return self._unpack(_I8)

    def int16(self) -> int:
        return self._unpack(_I16)

    def int32(self) -> int:
        return self._unpack(_I32)

    def int64(self) -> int:
        return self._unpack(_I64)

    def uint16(self) -> int:
        return self._unpack(_U16)

    def float64(self) -> float:
        value: float = _F64.unpack(self._take(_F64.size))[0]
        return value

    def bool_(self) -> bool:
        return self._unpack(_I8) != 0

    @property
    def position(self) -> int:
        return self._pos

    @position.setter
    def position(self, position: int) -> None:
        self._pos = position

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self._unpack(_U8)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise RecordFormatError("unsigned varint longer than 5 bytes")

    def _length(self, legacy: struct.Struct) -> int:
        """A length prefix; negative means null."""
        return self.uvarint() - 1 if self.flexible else self._unpack(legacy)

    def nullable_string(self) -> str | None:
        size = self._length(_I16)
        if size < 0:
            return None
        try:
            return self._take(size).decode()
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"string is not UTF-8: {exc}") from None

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise RecordFormatError("null in a non-nullable string")
        return value

    def bytes_(self) -> bytes:
        size = self._length(_I32)
        if size < 0:
            raise RecordFormatError("null in a non-nullable bytes field")
        return self._take(size)

    def array(self, item: Callable[[], T]) -> tuple[T, ...]:
        count = self._length(_I32)
        if count < 0:
            raise RecordFormatError("null in a non-nullable array")
        if count > len(self._data) - self._pos:
            raise RecordFormatError("truncated record")
        return tuple(item() for _ in range(count))

    def uuid(self) -> str:
        return str(uuid.UUID(bytes=self._take(16)))

    def tagged_fields(self) -> dict[int, bytes]:
        """A flexible struct's tagged fields, by tag (none in a non-flexible one)."""
        tagged: dict[int, bytes] = {}
        if self.flexible:
            for _ in range(self.uvarint()):
                tag = self.uvarint()
                tagged[tag] = self._take(self.uvarint())
        return tagged

    def end_struct(self) -> None:
        self.tagged_fields()

    def end(self) -> None:
        if self._pos != len(self._data):
            raise RecordFormatError(f"{len(self._data) - self._pos} trailing bytes")


class RecordWriter:
    def __init__(self, flexible: bool) -> None:
        self._out = bytearray()
        self.flexible = flexible

    def getvalue(self) -> bytes:
        return bytes(self._out)

    def int8(self, value: int) -> None:
        self._out += _I8.pack(value)

    def int16(self, value: int) -> None:
        self._out += _I16.pack(value)

    def int32(self, value: int) -> None:
        self._out += _I32.pack(value)

    def int64(self, value: int) -> None:
        self._out += _I64.pack(value)

    def uint16(self, value: int) -> None:
        self._out += _U16.pack(value)

    def float64(self, value: float) -> None:
        self._out += _F64.pack(value)

    def bool_(self, value: bool) -> None:
        self._out += _I8.pack(1 if value else 0)

    def null_length(self) -> None:
        """The length of a null array or bytes."""
        self._length(-1, _I32)

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self._out.append(value & 0x7F | 0x80)
            value >>= 7
        self._out.append(value)

    def _length(self, size: int, legacy: struct.Struct) -> None:
        if self.flexible:
            self.uvarint(size + 1)
        else:
            self._out += legacy.pack(size)

    def string(self, value: str | None) -> None:
        """A string, or null where the schema makes it nullable."""
        if value is None:
            self._length(-1, _I16)
            return
        data = value.encode()
        self._length(len(data), _I16)
        self._out += data

    def bytes_(self, value: bytes) -> None:
        self._length(len(value), _I32)
        self._out += value

    def array(self, items: Sequence[T], item: Callable[[T], None]) -> None:
        self._length(len(items), _I32)
        for each in items:
            item(each)

    def uuid(self, value: str) -> None:
        self._out += uuid.UUID(value).bytes

    def end_struct(self, tagged: Sequence[tuple[int, bytes]] = ()) -> None:
        """Close a struct: its tagged fields (flexible versions only), ascending by tag."""
        if self.flexible:
            self.uvarint(len(tagged))
            for tag, data in tagged:
                self.uvarint(tag)
                self.uvarint(len(data))
                self._out += data
