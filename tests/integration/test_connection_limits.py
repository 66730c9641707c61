"""Connection limits against a real broker with two listeners (INTERNAL, the inter-broker
one, and EXTERNAL), each connection a plain socket from a chosen loopback address:
max.connections.per.ip (and its overrides) closes the extra connection while the others are
served; max.connections leaves the extra one unserved until a slot frees, but not on the
inter-broker listener; connections.max.idle.ms closes idle connections."""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.raw_client import RawClient
from tests.waiting import wait_until

PER_IP = 3
OVERRIDDEN_IP, OVERRIDE = "127.0.0.2", 5
"""max.connections.per.ip, and an address allowed more."""
MAX_CONNECTIONS = 12
EXTERNAL_IP = "127.0.0.3"
"""The max.connections test connects from here, an address allowed all the connections."""


class LimitedBroker(BrokerProcess):
    def __init__(self, root: Path, overrides: dict[str, str]) -> None:
        self.external_port = free_port()
        port = free_port()
        super().__init__(root / "data", root / "broker.log", {
            "listeners": f"INTERNAL://127.0.0.1:{port},EXTERNAL://127.0.0.1:{self.external_port}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL", **overrides}, port=port)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LimitedBroker]:
    process = LimitedBroker(tmp_path_factory.mktemp("limits"), {
        "max.connections.per.ip": str(PER_IP),
        "max.connections.per.ip.overrides": f"{OVERRIDDEN_IP}:{OVERRIDE},{EXTERNAL_IP}:100",
        "max.connections": str(MAX_CONNECTIONS)})
    process.start()
    yield process
    if process.alive():
        process.stop()


class Connection(RawClient):
    """A RawClient from a chosen source address."""

    def __init__(self, port: int, source: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10,
                                             source_address=(source, 0))
        self._correlation_id = 0

    def served(self) -> bool:
        response = self.request(ApiVersionsRequest[0](), ApiVersionsResponse, 0)
        return bool(response.error_code == 0)

    def send_api_versions(self) -> None:
        self.send_raw(struct.pack(">ihhih", 10, 18, 0, 99, 0))

    def answered_within(self, timeout: float) -> bool:
        self.sock.settimeout(timeout)
        try:
            return len(self.recv_frame()) > 0
        except TimeoutError:
            return False


@contextlib.contextmanager
def connections(port: int, source: str, count: int) -> Iterator[list[Connection]]:
    opened = [Connection(port, source) for _ in range(count)]
    try:
        yield opened
    finally:
        for connection in opened:
            connection.close()


def test_connections_over_the_per_ip_limit_are_closed(broker: LimitedBroker) -> None:
    with connections(broker.port, "127.0.0.1", PER_IP) as allowed:
        assert all(c.served() for c in allowed)
        with connections(broker.port, "127.0.0.1", 1) as (extra,):
            assert extra.closed_by_peer()
        assert all(c.served() for c in allowed)
        allowed.pop().close()
        with connections(broker.port, "127.0.0.1", 1) as (again,):
            wait_until(again.served, 10, "a connection once one closed")


def test_an_overridden_address_gets_its_own_limit(broker: LimitedBroker) -> None:
    with connections(broker.port, OVERRIDDEN_IP, OVERRIDE) as allowed:
        assert all(c.served() for c in allowed)
        with connections(broker.port, OVERRIDDEN_IP, 1) as (extra,):
            assert extra.closed_by_peer()


def test_past_max_connections_a_connection_waits_for_a_free_slot(broker: LimitedBroker) -> None:
    """One more connection than max.connections: those past the limit are not served (the
    broker reads nothing from them) until a served one closes; the inter-broker listener is
    served all along."""
    with connections(broker.external_port, EXTERNAL_IP, MAX_CONNECTIONS + 1) as opened:
        for connection in opened:
            connection.send_api_versions()
        answered = [c for c in opened if c.answered_within(1.0)]
        waiting = [c for c in opened if c not in answered]
        assert waiting and len(answered) <= MAX_CONNECTIONS
        with connections(broker.port, "127.0.0.1", 1) as (inter_broker,):
            assert inter_broker.served()
        answered[0].close()
        assert waiting[0].answered_within(10)


def test_idle_connections_are_closed(tmp_path: Path) -> None:
    process = BrokerProcess(tmp_path / "data", tmp_path / "broker.log",
                            {"connections.max.idle.ms": "1000"})
    process.start()
    try:
        with connections(process.port, "127.0.0.1", 1) as (idle,):
            assert idle.served()
            assert idle.closed_by_peer(timeout=10)
    finally:
        process.stop()
