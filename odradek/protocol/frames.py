"""Sans-IO splitting of a byte stream into Kafka's size-prefixed frames.

Every byte is copied once: a frame that arrives whole is sliced out of the chunk, and a
frame spread over several chunks is filled into a buffer of its announced size.
"""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The stream cannot be framed: the connection must be closed."""


class FrameDecoder:
    """Feed bytes as they arrive; collect whole frames (the bytes after each size prefix)."""

    __slots__ = ("_max_size", "_prefix", "_frame", "_filled")

    def __init__(self, max_size: int) -> None:
        self._max_size = max_size
        self._prefix = bytearray()
        self._frame: bytearray | None = None
        self._filled = 0

    def _check(self, size: int) -> int:
        if size < 0 or size > self._max_size:
            raise FrameError(
                f"frame size {size} outside 0..{self._max_size} (socket.request.max.bytes)"
            )
        return size

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | bytearray]:
        """Return every frame completed by `data`; raises FrameError on a bad size prefix."""
        frames: list[bytes | bytearray] = []
        with memoryview(data) as view:
            position, end = 0, len(view)
            while position < end:
                frame = self._frame
                if frame is None:
                    prefix = self._prefix
                    if not prefix and end - position >= 4:
                        (size,) = _SIZE.unpack_from(view, position)
                        size = self._check(size)
                        position += 4
                        if end - position >= size:
                            frames.append(bytes(view[position : position + size]))
                            position += size
                            continue
                    else:
                        take = min(4 - len(prefix), end - position)
                        prefix += view[position : position + take]
                        position += take
                        if len(prefix) < 4:
                            break
                        size = self._check(_SIZE.unpack(prefix)[0])
                        prefix.clear()
                    frame = self._frame = bytearray(size)
                    self._filled = 0
                take = min(len(frame) - self._filled, end - position)
                frame[self._filled : self._filled + take] = view[position : position + take]
                self._filled += take
                position += take
                if self._filled == len(frame):
                    frames.append(frame)
                    self._frame = None
        return frames

    @property
    def buffered(self) -> int:
        """Bytes held for a frame not yet complete."""
        return len(self._prefix) + (4 + self._filled if self._frame is not None else 0)
