"""Share sessions without IO, as Kafka's ShareSessionCache: the partitions a share-group
member fetches from one broker, carried from one ShareFetch to the next.

A member opens its session with epoch 0 (any earlier session of the member is dropped), names
partitions to add and to forget in later requests, each with the next epoch, and closes it with
epoch -1. A session belongs to the connection that opened it: when that connection goes, the
member has left this broker, and the caller releases the records it had acquired here; when
no session of its group is left here, the caller drops the group's share-partitions, to be
read again from their persisted state (Kafka's ShareGroupListener.onGroupEmpty).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1

SessionKey = tuple[str, str]
"""(group id, member id)."""
SharePartitionId = tuple[str, int]
"""(topic id, partition)."""


def next_epoch(epoch: int) -> int:
    """The epoch a member sends next: FINAL_EPOCH stays final, MAX_EPOCH wraps to 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


class ShareSessionError(Exception):
    """A ShareFetch or ShareAcknowledge refused as a whole, with Kafka's error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class ShareSession:
    key: SessionKey
    connection: str
    epoch: int
    """The epoch the member's next request must carry."""
    partitions: dict[SharePartitionId, None] = field(default_factory=dict)
    """The session's partitions, in the order they were added (a dict as an ordered set)."""


@dataclass(frozen=True, slots=True)
class ShareContext:
    """What a ShareFetch works on once its epoch is accepted."""

    partitions: tuple[SharePartitionId, ...]
    """The partitions to fetch from: the session's, or the request's own for a final one."""
    final: bool
    """The session was closed by this request (epoch -1): acknowledge, fetch nothing."""


class ShareSessionCache:
    """Every share session of this broker, at most `group.share.max.share.sessions`."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self.sessions: dict[SessionKey, ShareSession] = {}
        self._by_connection: dict[str, SessionKey] = {}
        self._group_by_connection: dict[str, str] = {}
        """The group of the last session each open connection opened, kept past the
        session's close until the connection's (Kafka's connectionIdToSessionMap)."""

    def new_context(self, key: SessionKey, epoch: int, connection: str,
                    to_fetch: Iterable[SharePartitionId], to_forget: Iterable[SharePartitionId],
                    acknowledging: bool) -> ShareContext:
        """Kafka's SharePartitionManager.newContext: open, use or close the member's session,
        or raise ShareSessionError (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
        SHARE_SESSION_LIMIT_REACHED, INVALID_REQUEST)."""
        fetch = list(dict.fromkeys(to_fetch))
        if epoch == FINAL_EPOCH:
            if key not in self.sessions:
                raise ShareSessionError(ErrorCode.share_session_not_found,
                                        f"no share session of member {key[1]}")
            return ShareContext(tuple(fetch), final=True)
        if epoch == INITIAL_EPOCH:
            if acknowledging:
                raise ShareSessionError(ErrorCode.invalid_request,
                                        "acknowledgements in a request opening a share session")
            self.remove(key)
            if len(self.sessions) >= self.max_sessions:
                raise ShareSessionError(ErrorCode.share_session_limit_reached,
                                        "the broker's share session cache is full")
            session = ShareSession(key, connection, next_epoch(INITIAL_EPOCH),
                                   dict.fromkeys(fetch))
            self.sessions[key] = session
            self._by_connection[connection] = key
            self._group_by_connection[connection] = key[0]
            return ShareContext(tuple(session.partitions), final=False)
        session = self.checked(key, epoch)
        session.partitions.update(dict.fromkeys(fetch))
        for forgotten in to_forget:
            session.partitions.pop(forgotten, None)
        session.epoch = next_epoch(session.epoch)
        return ShareContext(tuple(session.partitions), final=False)

    def checked(self, key: SessionKey, epoch: int) -> ShareSession:
        """The member's session if `epoch` is the one it expects, else ShareSessionError."""
        session = self.sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.share_session_not_found,
                                    f"no share session of member {key[1]}")
        if session.epoch != epoch:
            raise ShareSessionError(
                ErrorCode.invalid_share_session_epoch,
                f"share session epoch {epoch}, expected {session.epoch}")
        return session

    def acknowledged(self, key: SessionKey, epoch: int) -> None:
        """A ShareAcknowledge with a session epoch: checks it and moves the epoch on, or closes
        the session for FINAL_EPOCH (Kafka's acknowledgeSessionUpdate)."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(ErrorCode.invalid_share_session_epoch,
                                    "a ShareAcknowledge cannot open a share session")
        if epoch == FINAL_EPOCH:
            if key not in self.sessions:
                raise ShareSessionError(ErrorCode.share_session_not_found,
                                        f"no share session of member {key[1]}")
            return
        session = self.checked(key, epoch)
        session.epoch = next_epoch(session.epoch)

    def remove(self, key: SessionKey) -> ShareSession | None:
        session = self.sessions.pop(key, None)
        if session is not None and self._by_connection.get(session.connection) == key:
            del self._by_connection[session.connection]
        return session

    def disconnected(self, connection: str) -> tuple[ShareSession | None, str | None]:
        """The session the closed connection held, removed (its member has left this
        broker), and the group it had a session of if that group now has none here (Kafka's
        checkAndNotifyListenersOnGroupEmpty, on every disconnect)."""
        key = self._by_connection.pop(connection, None)
        session = None if key is None else self.sessions.pop(key, None)
        group = self._group_by_connection.pop(connection, None)
        if group is not None and self.holds_group(group):
            group = None
        return session, group

    def holds_group(self, group_id: str) -> bool:
        """Whether a member of the group has a session here."""
        return any(group == group_id for group, _ in self.sessions)

    def partition_count(self) -> int:
        return sum(len(s.partitions) for s in self.sessions.values())
