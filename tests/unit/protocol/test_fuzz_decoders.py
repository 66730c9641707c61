"""Garbage through FrameDecoder.feed, decode_header and decode_body, for every API key and
version the broker serves: the only exceptions that may escape are FrameError and
RequestDecodeError, and the process must survive.

kio's decoder is native code; an input that makes it abort would take pytest down with it, so
each example runs in a forked child and the parent reports how the child ended."""

from __future__ import annotations

import datetime
import os
import struct
import traceback
import types
import typing
import uuid
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from odradek.broker.apis import API_TABLE
from odradek.protocol.codec import (
    RequestDecodeError,
    decode_body,
    decode_header,
    encode_body,
    is_flexible,
)
from odradek.protocol.frames import FrameDecoder, FrameError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork to isolate")

MAX_FRAME = 1 << 16
VERSIONS = [
    (api.key, version)
    for api in API_TABLE
    for version in range(api.min_version, api.max_version + 1)
]
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _consume(stream: bytes, chunk: int, progress: int) -> None:
    """What a connection does with inbound bytes, minus the handlers; each frame's hex is
    written to the `progress` descriptor before it is decoded."""
    decoder = FrameDecoder(MAX_FRAME)
    for start in range(0, len(stream), chunk):
        try:
            frames = decoder.feed(stream[start : start + chunk])
        except FrameError:
            return
        for frame in frames:
            os.write(progress, frame.hex().encode() + b"\n")
            try:
                header, offset = decode_header(frame)
                decode_body(header, frame, offset)
            except RequestDecodeError:
                continue


def outcome_in_child(stream: bytes, chunk: int = 1 << 20) -> str | None:
    """None if decoding `stream` raised nothing but the documented errors, else what went
    wrong: the escaped traceback, or the signal that killed the child and the frame it was
    decoding."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        os.close(read_end)
        os.environ["RUST_BACKTRACE"] = "0"
        try:
            _consume(stream, chunk, write_end)
        except BaseException:
            os.write(write_end, b"escaped " + traceback.format_exc().encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        lines = pipe.read().decode().splitlines()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        last = lines[-1] if lines else "(none)"
        return f"signal {os.WTERMSIG(status)} killed the process while decoding frame {last}"
    escaped = next((i for i, line in enumerate(lines) if line.startswith("escaped ")), None)
    if escaped is None:
        return None
    return f"after frame {lines[escaped - 1]}:\n" + "\n".join(lines[escaped:])


def framed(*frames: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def request_header(api_key: int, version: int, client_id: bytes = b"fuzz") -> bytes:
    head = struct.pack(">hhih", api_key, version, 1, len(client_id)) + client_id
    return head + b"\x00" if is_flexible(api_key, version) else head


def _sample(kind: Any) -> Any:
    """A value of a kio field type with every optional part present and every array holding
    two items, so that mutations land on lengths, strings and nested structs."""
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return _sample(next(arg for arg in typing.get_args(kind) if arg is not type(None)))
    if origin is tuple:
        item = typing.get_args(kind)[0]
        return (_sample(item), _sample(item))
    if isinstance(kind, type) and is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{item.name: _sample(hints[item.name]) for item in fields(kind)})
    if kind is ErrorCode:
        return ErrorCode.none
    if issubclass(kind, uuid.UUID):
        return uuid.UUID(int=0x0123456789ABCDEF)
    if issubclass(kind, datetime.timedelta):
        return datetime.timedelta(milliseconds=1500)
    if issubclass(kind, bool):
        return True
    if issubclass(kind, int):
        return kind(3)
    if issubclass(kind, float):
        return kind(1.5)
    if issubclass(kind, str):
        return kind("topic-a")
    if issubclass(kind, bytes):
        return kind(b"\x00\x01records")
    raise TypeError(f"no sample for {kind!r}")


@cache
def valid_frame(api_key: int, version: int) -> bytes:
    """A well-formed request frame (without size prefix) for the version."""
    entity = _sample(load_request_schema(api_key, version))
    frame = request_header(api_key, version) + encode_body(entity)
    header, offset = decode_header(frame)
    assert decode_body(header, frame, offset) == entity
    return frame


BOUNDARY_PATTERNS = [
    b"\xff\xff\xff\xff\x0f",  # varint 2**32 - 1: a compact array of 2**32 - 2 items
    b"\xfe\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x08",
    b"\x7f\xff\xff\xff",
    b"\x80\x00\x00\x00",
    b"\xff\xff",
    b"\x00\x00\x00\x00",
    b"\x01",
]


Operation = tuple[str, int, bytes]


operations = st.tuples(
    st.sampled_from(["truncate", "flip", "overwrite", "insert", "delete"]),
    st.integers(0, 1 << 12),
    st.one_of(st.sampled_from(BOUNDARY_PATTERNS), st.binary(min_size=1, max_size=8)),
)


def mutate(frame: bytes, plan: list[Operation]) -> bytes:
    """Apply `plan` to `frame`; positions wrap around the frame's length so that one plan
    applies to every version's frame."""
    data = bytearray(frame)
    for operation, where, value in plan:
        position = where % (len(data) + 1)
        if operation == "truncate":
            del data[position:]
        elif operation == "flip":
            if position < len(data):
                data[position] ^= value[0] or 0xFF
        elif operation == "overwrite":
            data[position : position + len(value)] = value
        elif operation == "insert":
            data[position:position] = value
        else:
            del data[position : position + len(value)]
    return bytes(data)


@st.composite
def size_prefixes(draw: st.DrawFn, frame: bytes) -> bytes:
    """The frame with a right or wrong size prefix."""
    size = draw(st.one_of(
        st.just(len(frame)),
        st.integers(-8, 8).map(lambda delta: len(frame) + delta),
        st.sampled_from([-1, -(2**31), 2**31 - 1, MAX_FRAME, MAX_FRAME + 1]),
    ))
    return struct.pack(">i", size) + frame


@given(
    plan=st.lists(operations, min_size=1, max_size=4),
    chunk=st.sampled_from([5, 333, 1 << 20]),  # frames split across feeds arrive as bytearray
)
@FUZZ
def test_mutated_requests_of_every_version(plan: list[Operation], chunk: int) -> None:
    """Each example applies one mutation plan to a valid request of every (api, version)."""
    stream = b"".join(framed(mutate(valid_frame(key, version), plan)) for key, version in VERSIONS)
    assert outcome_in_child(stream, chunk) is None


@given(bodies=st.lists(st.binary(max_size=48), min_size=1, max_size=3))
@FUZZ
def test_garbage_bodies_of_every_version(bodies: list[bytes]) -> None:
    stream = b"".join(
        framed(*(request_header(key, version) + body for body in bodies))
        for key, version in VERSIONS
    )
    assert outcome_in_child(stream) is None


@given(data=st.data())
@settings(FUZZ, max_examples=50)
def test_wrong_size_prefixes(data: st.DataObject) -> None:
    key, version = data.draw(st.sampled_from(VERSIONS))
    frame = valid_frame(key, version)
    stream = data.draw(size_prefixes(frame)) + data.draw(size_prefixes(frame))
    assert outcome_in_child(stream, data.draw(st.integers(1, len(stream)))) is None


@given(stream=st.binary(max_size=512), chunk=st.integers(1, 64))
@settings(FUZZ, max_examples=50)
def test_raw_garbage_streams(stream: bytes, chunk: int) -> None:
    assert outcome_in_child(stream, chunk) is None


def test_valid_frames_decode_for_every_version() -> None:
    """The seeds the mutations start from are themselves accepted."""
    for key, version in VERSIONS:
        frame = valid_frame(key, version)
        header, _ = decode_header(frame)
        assert (header.api_key, header.api_version) == (key, version)


@pytest.mark.parametrize(
    "length",
    [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x10", b"\xff\xff\xff\xff\x7f"],
    ids=["count 2**32-2", "count 2**32-1", "count 2**35-2"],
)
def test_huge_compact_array_length_is_a_decode_error(length: bytes) -> None:
    """A Metadata v9 request whose topics array claims billions of entries in a 5-byte body.
    kio 0.6.5 preallocates the claimed length and the process aborts (Rust alloc failure)."""
    frame = request_header(3, 9) + length
    assert outcome_in_child(framed(frame)) is None
    header, offset = decode_header(frame)  # safe in-process now that the child survived
    with pytest.raises(RequestDecodeError):
        decode_body(header, frame, offset)
