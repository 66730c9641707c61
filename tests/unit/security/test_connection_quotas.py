"""Connection limits: Kafka's ConnectionQuotas decisions, and the broker's limits handing
freed slots to waiting connections first come, first served."""

from __future__ import annotations

from typing import Any

import pytest

from odradek.broker.connection_limits import ConnectionLimits
from odradek.config.kafka_configs import BrokerConfig
from odradek.security.connection_quotas import (
    Admission,
    ConnectionQuotas,
    idle_expired,
    parse_overrides,
)

INTERNAL, EXTERNAL = "INTERNAL", "EXTERNAL"


def test_overrides_parse_hosts_and_addresses() -> None:
    assert parse_overrides("hostName:100, 127.0.0.1:200,[::1]:3") == {
        "hostName": 100, "127.0.0.1": 200, "::1": 3}
    assert parse_overrides("") == {}


def test_an_address_over_its_limit_is_refused_and_a_release_makes_room() -> None:
    quotas = ConnectionQuotas(100, 2, {"10.0.0.9": 3}, INTERNAL)
    assert [quotas.admit(EXTERNAL, "10.0.0.1") for _ in range(3)] == [
        Admission.ACCEPT, Admission.ACCEPT, Admission.REFUSE]
    assert [quotas.admit(EXTERNAL, "10.0.0.9") for _ in range(4)] == [
        Admission.ACCEPT, Admission.ACCEPT, Admission.ACCEPT, Admission.REFUSE]
    quotas.release("10.0.0.1")
    assert quotas.admit(EXTERNAL, "10.0.0.1") is Admission.ACCEPT
    assert quotas.total == 5


def test_the_broker_limit_makes_connections_wait_except_on_the_inter_broker_listener() -> None:
    quotas = ConnectionQuotas(2, 100, {}, INTERNAL)
    assert quotas.admit(EXTERNAL, "a") is Admission.ACCEPT
    assert quotas.admit(INTERNAL, "b") is Admission.ACCEPT
    assert quotas.admit(EXTERNAL, "c") is Admission.WAIT
    assert quotas.admit(INTERNAL, "d") is Admission.ACCEPT
    quotas.release("a")
    assert not quotas.slot_free(EXTERNAL)  # b and d: d went over on the protected listener
    quotas.release("d")
    assert quotas.admit(EXTERNAL, "c") is Admission.ACCEPT


@pytest.mark.parametrize(("idle_s", "expired"), [(0.999, False), (1.0, True)])
def test_idle_expiry(idle_s: float, expired: bool) -> None:
    assert idle_expired(100.0, 100.0 + idle_s, 1000) is expired


class Peer:
    """What the limits use of a KafkaConnection."""

    def __init__(self, ip: str) -> None:
        self.peer_ip = ip
        self.verdicts: list[bool] = []

    def admitted(self, accepted: bool) -> None:
        self.verdicts.append(accepted)


def test_waiting_connections_take_freed_slots_in_arrival_order() -> None:
    limits = ConnectionLimits(BrokerConfig({"max.connections": "1",
                                            "max.connections.per.ip": "1"}), {}, INTERNAL)
    first, second, third, same_ip = Peer("a"), Peer("b"), Peer("c"), Peer("b")
    peers: list[Any] = [first, second, third, same_ip]
    assert limits.admit(EXTERNAL, peers[0]) is True
    assert [limits.admit(EXTERNAL, p) for p in peers[1:]] == [None, None, None]
    limits.release(peers[0])
    assert second.verdicts == [True] and third.verdicts == []
    limits.release(peers[2])  # c left while waiting: it frees nothing
    assert third.verdicts == [] and same_ip.verdicts == []
    limits.release(peers[1])
    assert same_ip.verdicts == [True]
