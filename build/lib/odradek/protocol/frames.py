"""Sans-IO splitting of a byte stream into Kafka's size-prefixed frames.

A frame that arrives whole is sliced out of the chunk (one copy). A frame spread over
several chunks is grown as its bytes arrive, never allocated from the announced size alone,
so a peer that sends only a size prefix costs no memory.
"""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The stream cannot be framed: the connection must be closed."""


class FrameDecoder:
    """Feed bytes as they arrive; collect whole frames (the bytes after each size prefix)."""

    __slots__ = ("max_size", "_prefix", "_frame", "_size")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        """The largest frame accepted (it may change between feeds)."""
        self._prefix = bytearray()
        self._frame: bytearray | None = None
        self._size = 0

    def _check(self, size: int) -> int:
        if size < 0 or size > self.max_size:
            raise FrameError(
                f"frame size {size} outside 0..{self.max_size} (socket.request.max.bytes, or "
                "sasl.server.max.receive.size before authentication)"
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
                    frame = self._frame = bytearray()
                    self._size = size
                take = min(self._size - len(frame), end - position)
                frame += view[position : position + take]
                position += take
                if len(frame) == self._size:
                    frames.append(frame)
                    self._frame = None
        return frames

    @property
    def buffered(self) -> int:
        """Bytes held for a frame not yet complete."""
        return len(self._prefix) + (4 + len(self._frame) if self._frame is not None else 0)
