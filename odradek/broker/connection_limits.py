"""The broker's connection limits over all its listeners (security/connection_quotas.py):
each new connection is admitted, refused (closed) or left waiting, unread, for a free slot;
a closed one frees its slot for the longest waiting; idle connections are closed."""

from __future__ import annotations

import logging
import socket
import time
from collections import deque
from collections.abc import Iterable

from odradek.broker.server import KafkaConnection
from odradek.config.kafka_configs import BrokerConfig
from odradek.security.connection_quotas import (
    Admission,
    ConnectionQuotas,
    idle_expired,
    parse_overrides,
)

log = logging.getLogger("odradek.broker.connections")


def resolve_overrides(config: BrokerConfig) -> dict[str, int]:
    """max.connections.per.ip.overrides by IP address (a name lookup: call it off the loop)."""
    return {socket.gethostbyname(host): count
            for host, count in parse_overrides(config.text("max.connections.per.ip.overrides")
                                               ).items()}


class ConnectionLimits:
    def __init__(self, config: BrokerConfig, overrides: dict[str, int],
                 inter_broker_listener: str) -> None:
        self.quotas = ConnectionQuotas(config.integer("max.connections"),
                                       config.integer("max.connections.per.ip"), overrides,
                                       inter_broker_listener)
        self.max_idle_ms = config.integer("connections.max.idle.ms")
        self._admitted: dict[KafkaConnection, str] = {}
        self._waiting: deque[tuple[str, KafkaConnection]] = deque()

    def gate(self, listener: str) -> ListenerGate:
        return ListenerGate(self, listener)

    def admit(self, listener: str, connection: KafkaConnection) -> bool | None:
        ip = connection.peer_ip
        if self._waiting and listener != self.quotas.protected_listener:
            self._waiting.append((listener, connection))  # first come, first served
            return None
        verdict = self.quotas.admit(listener, ip)
        if verdict is Admission.WAIT:
            self._waiting.append((listener, connection))
            return None
        if verdict is Admission.REFUSE:
            log.info("closing a connection from %s: too many connections from it (%d)",
                     ip, self.quotas.overrides.get(ip, self.quotas.max_per_ip))
            return False
        self._admitted[connection] = ip
        return True

    def release(self, connection: KafkaConnection) -> None:
        ip = self._admitted.pop(connection, None)
        if ip is None:
            self._waiting = deque(w for w in self._waiting if w[1] is not connection)
            return
        self.quotas.release(ip)
        while self._waiting and self.quotas.slot_free(self._waiting[0][0]):
            listener, waiting = self._waiting.popleft()
            verdict = self.quotas.admit(listener, waiting.peer_ip)
            if verdict is Admission.ACCEPT:
                self._admitted[waiting] = waiting.peer_ip
            waiting.admitted(verdict is Admission.ACCEPT)

    def close_idle(self, connections: Iterable[KafkaConnection]) -> None:
        """Close the connections idle for connections.max.idle.ms (none has a request in
        flight)."""
        now = time.monotonic()
        for connection in list(connections):
            if connection.idle and idle_expired(connection.last_active, now, self.max_idle_ms):
                connection.close_idle()


class ListenerGate:
    """The limits as one listener's connections meet them (KafkaConnection's `gate`)."""

    def __init__(self, limits: ConnectionLimits, listener: str) -> None:
        self._limits = limits
        self.listener = listener

    def admit(self, connection: KafkaConnection) -> bool | None:
        """True: serve it; False: close it; None: it waits for `connection.admitted`."""
        return self._limits.admit(self.listener, connection)

    def release(self, connection: KafkaConnection) -> None:
        self._limits.release(connection)
