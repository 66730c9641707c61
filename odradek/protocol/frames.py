"""Sans-IO splitting of a byte stream into Kafka's size-prefixed frames."""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The stream cannot be framed: the connection must be closed."""


class FrameDecoder:
    """Feed bytes as they arrive; collect whole frames (the bytes after each size prefix)."""

    __slots__ = ("_buffer", "_max_size")

    def __init__(self, max_size: int) -> None:
        self._buffer = bytearray()
        self._max_size = max_size

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Return every frame completed by `data`; raises FrameError on a bad size prefix."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        position = 0
        end = len(buffer)
        while end - position >= 4:
            (size,) = _SIZE.unpack_from(buffer, position)
            if size < 0 or size > self._max_size:
                raise FrameError(
                    f"frame size {size} outside 0..{self._max_size} (socket.request.max.bytes)"
                )
            if end - position - 4 < size:
                break
            frames.append(bytes(buffer[position + 4 : position + 4 + size]))
            position += 4 + size
        if position:
            del buffer[:position]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buffer)
