from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RaftMessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRE_VOTE: _ClassVar[RaftMessageType]
    PRE_VOTE_RESPONSE: _ClassVar[RaftMessageType]
    VOTE: _ClassVar[RaftMessageType]
    VOTE_RESPONSE: _ClassVar[RaftMessageType]
    APPEND: _ClassVar[RaftMessageType]
    APPEND_RESPONSE: _ClassVar[RaftMessageType]
    INSTALL_SNAPSHOT: _ClassVar[RaftMessageType]
    TIMEOUT_NOW: _ClassVar[RaftMessageType]
PRE_VOTE: RaftMessageType
PRE_VOTE_RESPONSE: RaftMessageType
VOTE: RaftMessageType
VOTE_RESPONSE: RaftMessageType
APPEND: RaftMessageType
APPEND_RESPONSE: RaftMessageType
INSTALL_SNAPSHOT: RaftMessageType
TIMEOUT_NOW: RaftMessageType

class RaftEntry(_message.Message):
    __slots__ = ("term", "index", "data")
    TERM_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    term: int
    index: int
    data: bytes
    def __init__(self, term: _Optional[int] = ..., index: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class RaftSnapshot(_message.Message):
    __slots__ = ("index", "term", "data", "voters")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    index: int
    term: int
    data: bytes
    voters: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, index: _Optional[int] = ..., term: _Optional[int] = ..., data: _Optional[bytes] = ..., voters: _Optional[_Iterable[int]] = ...) -> None: ...

class RaftMessage(_message.Message):
    __slots__ = ("type", "source", "target", "term", "log_term", "index", "entries", "commit", "reject", "reject_hint", "snapshot", "force")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    LOG_TERM_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    REJECT_FIELD_NUMBER: _ClassVar[int]
    REJECT_HINT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    type: RaftMessageType
    source: int
    target: int
    term: int
    log_term: int
    index: int
    entries: _containers.RepeatedCompositeFieldContainer[RaftEntry]
    commit: int
    reject: bool
    reject_hint: int
    snapshot: RaftSnapshot
    force: bool
    def __init__(self, type: _Optional[_Union[RaftMessageType, str]] = ..., source: _Optional[int] = ..., target: _Optional[int] = ..., term: _Optional[int] = ..., log_term: _Optional[int] = ..., index: _Optional[int] = ..., entries: _Optional[_Iterable[_Union[RaftEntry, _Mapping]]] = ..., commit: _Optional[int] = ..., reject: _Optional[bool] = ..., reject_hint: _Optional[int] = ..., snapshot: _Optional[_Union[RaftSnapshot, _Mapping]] = ..., force: _Optional[bool] = ...) -> None: ...

class RaftBatch(_message.Message):
    __slots__ = ("cluster_id", "messages")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    messages: _containers.RepeatedCompositeFieldContainer[RaftMessage]
    def __init__(self, cluster_id: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[RaftMessage, _Mapping]]] = ...) -> None: ...

class RaftAck(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
