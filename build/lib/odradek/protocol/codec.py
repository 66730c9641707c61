"""Facade over kio, the codec generated from Kafka's JSON message schemas.

Requests decode to kio's frozen dataclasses. Handlers describe responses as plain mappings
named after the schema's fields; `encode_response` projects such a mapping onto the
response schema of the version the client asked for, so one handler serves every version.
"""

from __future__ import annotations

import datetime
import io
import struct
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer

from odradek.protocol.guard import StructureError, entity_step, skip_tagged_fields

API_VERSIONS_KEY = 18
_HEADER = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")


class RequestDecodeError(Exception):
    """A request body or header that does not parse: the connection is closed."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def api_name(api_key: int) -> str:
    return api_key_map.get(api_key, f"unknown_{api_key}")


@cache
def schema_versions(api_key: int) -> tuple[int, int] | None:
    """The version range kio has schemas for, or None for an API it does not know."""
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = schema_name_map[name]
    return min(versions), max(versions)


@cache
def is_flexible(api_key: int, version: int) -> bool:
    return bool(load_request_schema(api_key, version).__flexible__)


def decode_header(frame: bytes | bytearray) -> tuple[RequestHeader, int]:
    """Parse the request header (v1, or v2 for flexible versions); returns it and the body offset.

    An API key or version the codec has no schema for still yields a header, so that the
    caller can answer ApiVersions with v0 and others with UNSUPPORTED_VERSION.
    """
    if len(frame) < 10:
        raise RequestDecodeError(f"request header needs 10 bytes, got {len(frame)}")
    api_key, api_version, correlation_id = _HEADER.unpack_from(frame, 0)
    (length,) = _INT16.unpack_from(frame, 8)
    position = 10
    client_id: str | None = None
    if length >= 0:
        if position + length > len(frame):
            raise RequestDecodeError("truncated client id")
        try:
            client_id = frame[position : position + length].decode()
        except UnicodeDecodeError:
            raise RequestDecodeError("client id is not UTF-8") from None
        position += length
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    known = schema_versions(api_key)
    if known and known[0] <= api_version <= known[1] and is_flexible(api_key, api_version):
        try:
            position = skip_tagged_fields(frame, position)
        except StructureError as error:
            raise RequestDecodeError(f"request header: {error}") from None
    return header, position


Reader = Callable[[bytes | memoryview, int], tuple[Any, int]]


@cache
def _request_reader(api_key: int, version: int) -> Reader:
    return entity_reader(load_request_schema(api_key, version))  # type: ignore[return-value]


def decode_body(header: RequestHeader, frame: bytes | bytearray, offset: int) -> Any:
    """Decode the request body with the schema of the header's API version.

    Bytes after the body are ignored, as Kafka's request parser ignores them (librdkafka
    sends some)."""
    known = schema_versions(header.api_key)
    if not known or not known[0] <= header.api_version <= known[1]:
        raise RequestDecodeError(
            f"no schema for API key {header.api_key} version {header.api_version}"
        )
    try:
        entity_step(load_request_schema(header.api_key, header.api_version))(frame, offset)
    except StructureError as error:
        raise RequestDecodeError(
            f"{api_name(header.api_key)} v{header.api_version}: {error}"
        ) from None
    # kio's native reader refuses writable buffers; a read-only view avoids copying
    readable = memoryview(frame).toreadonly() if isinstance(frame, bytearray) else frame
    try:
        body, _ = _request_reader(header.api_key, header.api_version)(readable, offset)
    except RequestDecodeError:
        raise
    except Exception as error:  # kio raises several types on garbage; all mean the same here
        raise RequestDecodeError(
            f"{api_name(header.api_key)} v{header.api_version}: {type(error).__name__}: {error}"
        ) from None
    return body


def response_header(header: RequestHeader) -> bytes:
    """Response header v0 (correlation id), or v1 (plus empty tagged fields) for flexible
    versions; ApiVersions always answers with v0 (KIP-511)."""
    correlation = INT32.pack(header.correlation_id)
    if header.api_key != API_VERSIONS_KEY and is_flexible(header.api_key, header.api_version):
        return correlation + b"\x00"
    return correlation


# --- projecting plain mappings onto response schemas -------------------------------------

Converter = Callable[[Any], Any]


def _zero(kind: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return None
    if origin is tuple:
        return ()
    if isinstance(kind, type):
        if issubclass(kind, ErrorCode):
            return ErrorCode.none
        if issubclass(kind, datetime.timedelta):
            return datetime.timedelta(0)
        if issubclass(kind, datetime.datetime):
            return datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
        if issubclass(kind, bool):
            return False
        if issubclass(kind, int):
            return 0
        if issubclass(kind, float):
            return 0.0
        if issubclass(kind, str):
            return ""
        if issubclass(kind, bytes):
            return b""
        if issubclass(kind, uuid.UUID):
            return uuid.UUID(int=0)
        if is_dataclass(kind):
            return _project(kind)({})
    raise TypeError(f"no zero value for {kind!r}")


@cache
def _converter(kind: Any) -> Converter:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        inner = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        convert = _converter(inner)
        return lambda value: None if value is None else convert(value)
    if origin is tuple:
        item = _converter(typing.get_args(kind)[0])
        return lambda value: tuple(item(v) for v in value)
    if isinstance(kind, type):
        if is_dataclass(kind):
            return _project(kind)
        if issubclass(kind, ErrorCode):
            return lambda value: ErrorCode(int(value))
        if issubclass(kind, datetime.timedelta):
            return lambda value: (
                value
                if isinstance(value, datetime.timedelta)
                else datetime.timedelta(milliseconds=value)
            )
        if issubclass(kind, datetime.datetime):
            return lambda value: value
        if issubclass(kind, uuid.UUID):
            return lambda value: value if isinstance(value, uuid.UUID) else uuid.UUID(value)
        if issubclass(kind, str):
            # a null in a version that cannot carry one is sent as "", as Kafka does
            return lambda value: "" if value is None else value
    return lambda value: value


@cache
def _project(cls: type) -> Converter:
    """A function turning a mapping (or an instance of a sibling version) into `cls`."""
    hints = typing.get_type_hints(cls)
    plan: list[tuple[str, Converter, bool, Any]] = []
    for item in fields(cls):
        kind = hints[item.name]
        has_default = item.default is not MISSING or item.default_factory is not MISSING
        zero = None if has_default else _zero(kind)
        plan.append((item.name, _converter(kind), has_default, zero))

    def build(data: Any) -> Any:
        if isinstance(data, cls):
            return data
        source = data if isinstance(data, Mapping) else _as_mapping(data)
        values = {}
        for name, convert, has_default, zero in plan:
            if name in source:
                values[name] = convert(source[name])
            elif not has_default:
                values[name] = zero
        return cls(**values)

    return build


def _as_mapping(entity: Any) -> Mapping[str, Any]:
    return {item.name: getattr(entity, item.name) for item in fields(entity)}


@cache
def response_schema(api_key: int, version: int) -> type:
    return load_response_schema(api_key, version)


def build_response(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    """Project `data` onto the response schema of (api_key, version)."""
    return _project(response_schema(api_key, version))(data)


def build_request(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    """Project `data` onto the request schema of (api_key, version)."""
    return _project(load_request_schema(api_key, version))(data)


def encode_body(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def encode_response(header: RequestHeader, data: Mapping[str, Any] | Any) -> bytes:
    """The full response frame (size prefix, header, body) for `data`."""
    body = encode_body(build_response(header.api_key, header.api_version, data))
    head = response_header(header)
    return INT32.pack(len(head) + len(body)) + head + body
