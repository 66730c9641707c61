"""Quotas of authenticated users: a broker with a SASL_PLAINTEXT listener (PLAIN users alice
and bob) beside its PLAINTEXT one. A user quota holds every client of that user; a
user+client-id quota only that client of that user; the gauges carry the user. Before
authenticating, a SASL connection's requests are capped at sasl.server.max.receive.size."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker_metrics import sample, scrape
from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.clients import create_topic, unique
from tests.integration.raw_client import RawClient
from tests.integration.test_quotas import (
    MEASURED_BYTES,
    MEASURED_S,
    apply_quota,
    assert_held_to_quota,
    produce_for_rate,
    quota_below,
)

pytestmark = pytest.mark.quotas

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret" user_bob="bob-secret";')
PRE_AUTH_CAP = 4096


class SaslBroker(BrokerProcess):
    def __init__(self, root: Path) -> None:
        self.sasl_port = free_port()
        port = free_port()
        super().__init__(root / "data", root / "broker.log", {
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:"
                         f"{self.sasl_port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "sasl.server.max.receive.size": str(PRE_AUTH_CAP),
            "quota.window.num": "3"}, port=port)

    def as_user(self, user: str) -> dict[str, str]:
        return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                "sasl.username": user, "sasl.password": f"{user}-secret"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    process = SaslBroker(tmp_path_factory.mktemp("user-quotas"))
    process.start()
    yield process
    if process.alive():
        process.stop()


def test_a_user_quota_holds_each_of_its_clients_and_user_client_quotas_one(
        broker: SaslBroker) -> None:
    topic = unique("user-quota")
    create_topic(broker.bootstrap, topic)
    sasl = f"127.0.0.1:{broker.sasl_port}"
    free_rate, free_throttle = produce_for_rate(sasl, topic, "other", MEASURED_BYTES,
                                                **broker.as_user("bob"))
    quota = quota_below(free_rate)
    apply_quota(broker, ["--user", "alice"], "producer_byte_rate", quota)
    apply_quota(broker, ["--user", "bob", "--client", "bulk"], "producer_byte_rate", quota)
    rate, throttle = produce_for_rate(sasl, topic, unique("any"), MEASURED_S * quota,
                                      **broker.as_user("alice"))
    assert_held_to_quota(rate, quota, free_rate)
    assert throttle > 0 and free_throttle == 0
    _, bulk_throttle = produce_for_rate(sasl, topic, "bulk", 4 * quota, **broker.as_user("bob"))
    assert bulk_throttle > 0
    gauges = scrape(broker)
    # alice's quota is a user quota: all her clients are measured together, without client id
    # (the gauges read 0 once the 3 s of samples have passed)
    assert sample(gauges, "kafka_server_quota_throttle_time", resource="Produce", user="alice",
                  clientId="") > 0
    assert sample(gauges, "kafka_server_quota_throttle_time", resource="Produce", user="bob",
                  clientId="bulk") > 0
    assert not [labels for name, labels in gauges if name == "kafka_server_quota_byte_rate"
                and ("user", "alice") in labels and ("clientId", "") not in labels]


def test_before_authentication_large_requests_close_the_connection(broker: SaslBroker) -> None:
    client = RawClient(f"127.0.0.1:{broker.sasl_port}")
    try:
        client.send_raw(struct.pack(">i", PRE_AUTH_CAP + 1) + b"\0" * 64)
        assert client.closed_by_peer()
    finally:
        client.close()
    create_topic(broker.bootstrap, topic := unique("big-after-auth"))
    # authenticated, the same listener takes requests of socket.request.max.bytes
    produce_for_rate(f"127.0.0.1:{broker.sasl_port}", topic, unique("big"), 16 * PRE_AUTH_CAP,
                     **broker.as_user("bob"))
