"""Control records: the transaction markers (EndTransactionMarker) a coordinator has partition
leaders write to end a transaction.

A marker is a batch with the transactional and control attribute bits holding one record
whose key is (int16 version 0, int16 type) and whose value is (int16 version 0, int32
coordinator epoch).
"""

from __future__ import annotations

import enum
import struct

from kio.schema.errors import ErrorCode

from odradek.protocol.record_codec import build_batch, decode_records
from odradek.protocol.records import Buffer, InvalidRecordsError

CONTROL_VERSION = 0
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


def build_marker_batch(producer_id: int, producer_epoch: int, coordinator_epoch: int,
                       commit: bool, timestamp_ms: int) -> bytearray:
    """A marker batch at base offset 0, ready for `PartitionLog.append`."""
    key = _KEY.pack(CONTROL_VERSION, ControlType.COMMIT if commit else ControlType.ABORT)
    value = _VALUE.pack(CONTROL_VERSION, coordinator_epoch)
    return bytearray(build_batch([(key, value)], timestamp_ms=timestamp_ms,
                                 producer_id=producer_id, producer_epoch=producer_epoch,
                                 is_transactional=True, is_control=True))


def read_marker(batch: Buffer) -> tuple[ControlType, int]:
    """(type, coordinator epoch) of a marker batch; InvalidRecordsError for anything else
    (other control records, such as KRaft's, are not transaction markers)."""
    records = decode_records(batch)
    if len(records) != 1 or records[0].key is None or len(records[0].key) < _KEY.size:
        raise InvalidRecordsError(ErrorCode.corrupt_message,
                                  "a control batch without a marker key")
    version, control = _KEY.unpack_from(records[0].key)
    if control not in (ControlType.ABORT, ControlType.COMMIT):
        raise InvalidRecordsError(ErrorCode.corrupt_message,
                                  f"control record type {control} is not a marker")
    value = records[0].value
    coordinator_epoch = -1
    if value is not None and len(value) >= _VALUE.size:
        _, coordinator_epoch = _VALUE.unpack_from(value)
    return ControlType(control), coordinator_epoch
