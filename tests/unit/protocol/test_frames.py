"""FrameDecoder: Kafka's size-prefixed framing, fed whole, byte by byte and split anywhere."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.frames import FrameDecoder, FrameError

MAX = 1024


def framed(*payloads: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


PAYLOADS = [b"first", b"", b"\x00\x00\x00\x05", bytes(range(256)) * 3, b"last"]


def test_whole_stream_in_one_feed() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(framed(*PAYLOADS)) == PAYLOADS
    assert decoder.buffered == 0


def test_byte_by_byte() -> None:
    decoder = FrameDecoder(MAX)
    frames: list[bytes | bytearray] = []
    completed_at = []
    stream = framed(*PAYLOADS)
    for index in range(len(stream)):
        got = decoder.feed(stream[index : index + 1])
        if got:
            completed_at.append(index)
        frames += got
    assert frames == PAYLOADS
    ends = []
    position = 0
    for payload in PAYLOADS:
        position += 4 + len(payload)
        ends.append(position - 1)
    assert completed_at == ends, "each frame is released by the feed that completes it"
    assert decoder.buffered == 0


@given(
    payloads=st.lists(st.binary(max_size=64), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=12),
)
@settings(max_examples=200, deadline=None)
def test_split_anywhere(payloads: list[bytes], cuts: list[int]) -> None:
    stream = framed(*payloads)
    points = sorted({c for c in cuts if c <= len(stream)} | {0, len(stream)})
    decoder = FrameDecoder(MAX)
    frames: list[bytes | bytearray] = []
    for start, end in zip(points, points[1:], strict=False):
        frames += decoder.feed(stream[start:end])
    assert frames == payloads
    assert decoder.buffered == 0


@pytest.mark.parametrize("cut", [1, 3, 4, 7, 12])
def test_trailing_partial_frame_is_kept_for_the_next_feed(cut: int) -> None:
    decoder = FrameDecoder(MAX)
    last = framed(b"123456789")
    assert decoder.feed(framed(b"one", b"two") + last[:cut]) == [b"one", b"two"]
    assert decoder.buffered == cut
    assert decoder.feed(last[cut:]) == [b"123456789"]
    assert decoder.buffered == 0


def test_empty_feed_returns_nothing() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(b"") == []
    decoder.feed(b"\x00\x00")
    assert decoder.feed(b"") == []
    assert decoder.buffered == 2


def test_accepts_bytearray_and_memoryview_and_does_not_alias_the_input() -> None:
    """The caller may reuse its read buffer once feed returns."""
    decoder = FrameDecoder(MAX)
    source = bytearray(framed(b"abc", b"defg", b"hijkl"))
    frames = decoder.feed(memoryview(source)[:13]) + decoder.feed(memoryview(source)[13:])
    source[:] = bytes(len(source))
    assert frames == [b"abc", b"defg", b"hijkl"]


def test_size_equal_to_max_is_accepted() -> None:
    decoder = FrameDecoder(8)
    assert decoder.feed(framed(b"12345678")) == [b"12345678"]


@pytest.mark.parametrize("size", [-1, -(2**31), 9, 2**31 - 1])
def test_bad_size_raises_as_soon_as_the_prefix_is_complete(size: int) -> None:
    decoder = FrameDecoder(8)
    prefix = struct.pack(">i", size)
    assert decoder.feed(prefix[:3]) == []
    with pytest.raises(FrameError):
        decoder.feed(prefix[3:])


def test_bad_size_after_good_frames_raises() -> None:
    decoder = FrameDecoder(8)
    with pytest.raises(FrameError):
        decoder.feed(framed(b"ok") + struct.pack(">i", -5))


def test_max_size_is_per_decoder() -> None:
    stream = framed(b"x" * 100)
    assert FrameDecoder(100).feed(stream) == [b"x" * 100]
    with pytest.raises(FrameError):
        FrameDecoder(99).feed(stream)


def test_size_prefix_alone_allocates_nothing_for_the_announced_size() -> None:
    """A peer announcing a large frame and sending little costs what it sent, not the size."""
    decoder = FrameDecoder(64 << 20)
    tracemalloc.start()
    try:
        decoder.feed(struct.pack(">i", 64 << 20) + b"x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert decoder.buffered == 5
