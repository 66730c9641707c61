"""The structural walk that keeps garbage counts away from kio's native decoder."""

from __future__ import annotations

import pytest
from kio.index import load_request_schema

from odradek.protocol import codec
from odradek.protocol.guard import StructureError, entity_step

# DeleteRecords v2 whose topics array claims 2**32 - 2 elements: kio's native reader would
# try to allocate 32 GiB for it and abort the process.
HUGE_ARRAY = bytes.fromhex("0015000200000001000466757a7a00ffffffff0f69632d610300000003")


def test_huge_array_count_is_refused_before_kio_sees_it() -> None:
    header, offset = codec.decode_header(HUGE_ARRAY)
    with pytest.raises(StructureError, match="cannot fit the frame"):
        entity_step(load_request_schema(21, 2))(HUGE_ARRAY, offset)
    with pytest.raises(codec.RequestDecodeError):
        codec.decode_body(header, HUGE_ARRAY, offset)


def test_walk_ends_where_kio_ends_for_a_nullable_struct() -> None:
    # DescribeTopicPartitions v0 with a present cursor (nullable struct, int8 marker 1)
    body = bytes.fromhex("02" "027400" "000007d0" "01" "0274" "00000003" "00" "00")
    schema = load_request_schema(75, 0)
    assert entity_step(schema)(body, 0) == len(body)
    decoded = codec._request_reader(75, 0)(body, 0)
    assert decoded[1] == len(body)
    assert decoded[0].cursor.partition_index == 3


@pytest.mark.parametrize("replicas", ["030000000200000003", "00"])
def test_walk_ends_where_kio_ends_for_a_nullable_int_array(replicas: str) -> None:
    # AlterPartitionReassignments v1 as kafka-python sends it: replicas [2, 3], or null
    body = bytes.fromhex("00007530" "01" "02" "066d6f766564" "02" "00000000" + replicas
                         + "00" "00" "00")
    schema = load_request_schema(45, 1)
    assert entity_step(schema)(body, 0) == len(body)
    assert codec._request_reader(45, 1)(body, 0)[1] == len(body)


@pytest.mark.parametrize("cut", [1, 5, 9, 12])
def test_truncated_body_is_refused(cut: int) -> None:
    body = bytes.fromhex("02" "027400" "000007d0" "01" "0274" "00000003" "00" "00")
    with pytest.raises(StructureError):
        entity_step(load_request_schema(75, 0))(body[:-cut], 0)
