"""The compression codecs of record batches (attributes bits 0-2), as Kafka's clients write
and read them: gzip, snappy (raw, or snappy-java's xerial framing), lz4 (Kafka's frame
settings) and zstd."""

from __future__ import annotations

import struct

import cramjam

from odradek.protocol.records import GZIP, LZ4, SNAPPY, ZSTD, InvalidRecordsError

_INT32 = struct.Struct(">i")
_XERIAL_HEADER = b"\x82SNAPPY\x00"
_XERIAL_PREAMBLE = _XERIAL_HEADER + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024


def decompress(codec: int, data: bytes) -> bytes:
    """The records section `data` compressed with `codec`, decompressed; CORRUPT_MESSAGE
    (InvalidRecordsError) when it does not decompress."""
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            if data.startswith(_XERIAL_HEADER):
                return _xerial_decompress(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as error:
        raise InvalidRecordsError.corrupt(f"cannot decompress records: {error}") from error
    raise InvalidRecordsError.corrupt(f"unknown compression codec {codec}")


def _xerial_decompress(data: bytes) -> bytes:
    """snappy-java's SnappyOutputStream framing: preamble, then (int32 length, block)*."""
    chunks: list[bytes] = []
    position = len(_XERIAL_PREAMBLE)
    while position < len(data):
        if len(data) - position < 4:
            raise InvalidRecordsError.corrupt("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, position)
        position += 4
        if length < 0 or position + length > len(data):
            raise InvalidRecordsError.corrupt(
                f"xerial snappy block of {length} bytes runs past the end")
        chunks.append(bytes(cramjam.snappy.decompress_raw(data[position : position + length])))
        position += length
    return b"".join(chunks)


def compress(codec: int, data: bytes) -> bytes:
    """`data` compressed with `codec` as Kafka's Java producer frames it."""
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        parts = [_XERIAL_PREAMBLE]
        for start in range(0, len(data), _XERIAL_BLOCK_SIZE):
            block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK_SIZE]))
            parts += (_INT32.pack(len(block)), block)
        return b"".join(parts)
    if codec == LZ4:
        # Independent blocks and no content checksum, as KafkaLZ4BlockOutputStream writes.
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")
