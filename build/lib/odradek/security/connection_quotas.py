"""Connection limits without IO, after Kafka's ConnectionQuotas: `max.connections` for the
broker (a new connection waits for a free slot; the inter-broker listener is exempt, as
KIP-402 protects it), `max.connections.per.ip` with `max.connections.per.ip.overrides` (a
connection over its address's limit is closed), and `connections.max.idle.ms`."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping


class Admission(enum.Enum):
    ACCEPT = "accept"
    WAIT = "wait"
    """No broker-wide slot is free: the connection waits, unread, until one is."""
    REFUSE = "refuse"
    """The address has its limit of connections: close this one."""


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,ip:count` (max.connections.per.ip.overrides) by host or address."""
    overrides = {}
    for entry in filter(None, (item.strip() for item in text.split(","))):
        host, _, count = entry.rpartition(":")
        overrides[host.strip("[]")] = int(count)
    return overrides


class ConnectionQuotas:
    """Counts of open connections by address and in total; `overrides` are keyed by IP
    address (the shell resolves host names, as Kafka does once at configuration)."""

    def __init__(self, max_connections: int, max_per_ip: int, overrides: Mapping[str, int],
                 protected_listener: str | None) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides)
        self.protected_listener = protected_listener
        self.by_ip: Counter[str] = Counter()
        self.total = 0

    def slot_free(self, listener: str) -> bool:
        return listener == self.protected_listener or self.total < self.max_connections

    def admit(self, listener: str, ip: str) -> Admission:
        """Count a new connection in (unless it must wait or is refused)."""
        if not self.slot_free(listener):
            return Admission.WAIT
        if self.by_ip[ip] >= self.overrides.get(ip, self.max_per_ip):
            return Admission.REFUSE
        self.by_ip[ip] += 1
        self.total += 1
        return Admission.ACCEPT

    def release(self, ip: str) -> None:
        """An admitted connection closed."""
        self.by_ip[ip] -= 1
        if self.by_ip[ip] <= 0:
            del self.by_ip[ip]
        self.total -= 1


def idle_expired(last_active_s: float, now_s: float, max_idle_ms: int) -> bool:
    """Whether a connection without activity since `last_active_s` is past
    connections.max.idle.ms."""
    return (now_s - last_active_s) * 1000 >= max_idle_ms
