"""How brokers and controllers connect to the inter-broker listener: its protocol, its TLS
configs, sasl.mechanism.inter.broker.protocol and its JAAS login, and the one-line errors
that stop start-up when these do not fit together."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.net.inter_broker import inter_broker_security
from odradek.net.kafka_client import PLAINTEXT_CLIENT
from tests.certificates import Authority

SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="broker" password="broker-secret";')


def secured(**extra: str) -> dict[str, str]:
    """A broker whose INTERNAL listener is SASL_PLAINTEXT with SCRAM-SHA-512."""
    return {"listeners": "CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.internal.scram-sha-512.sasl.jaas.config": SCRAM_JAAS, **extra}


def test_a_plaintext_inter_broker_listener_connects_in_plaintext() -> None:
    assert inter_broker_security(BrokerConfig({})) == ("PLAINTEXT", PLAINTEXT_CLIENT)


def test_sasl_logs_in_with_the_mechanism_and_the_listeners_jaas_login() -> None:
    listener, security = inter_broker_security(BrokerConfig(secured()))
    assert listener == "INTERNAL"
    assert security.protocol == "SASL_PLAINTEXT" and security.ssl_context is None
    assert security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username, security.sasl.password) == (
        "SCRAM-SHA-512", "broker", "broker-secret")


def test_the_jaas_config_is_looked_up_as_kafka_does() -> None:
    """listener.name.<l>.<mechanism>.sasl.jaas.config, then listener.name.<l>., then the
    broker's own sasl.jaas.config."""
    raw = secured(**{"sasl.jaas.config": SCRAM_JAAS.replace("broker-secret", "broker-wide")})
    del raw["listener.name.internal.scram-sha-512.sasl.jaas.config"]
    login = inter_broker_security(BrokerConfig(raw))[1].sasl
    assert login is not None and login.password == "broker-wide"


def test_tls_trusts_the_listeners_trust_store_and_presents_its_key_store(
        tmp_path: Path) -> None:
    ca = Authority()
    raw = secured(**{
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SASL_SSL",
        "listener.name.internal.ssl.keystore.type": "PEM",
        "listener.name.internal.ssl.keystore.location":
            str(ca.issue("broker").write(tmp_path / "broker.pem")),
        "listener.name.internal.ssl.truststore.type": "PEM",
        "listener.name.internal.ssl.truststore.location": str(ca.write(tmp_path / "ca.pem"))})
    security = inter_broker_security(BrokerConfig(raw))[1]
    context = security.ssl_context
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "Odradek Test CA"),),)]
    assert security.server_hostname("127.0.0.1") == "127.0.0.1"
    off = inter_broker_security(BrokerConfig({
        **raw, "listener.name.internal.ssl.endpoint.identification.algorithm": ""}))[1]
    assert off.ssl_context is not None and not off.ssl_context.check_hostname


def test_a_controller_reaches_brokers_as_they_reach_each_other() -> None:
    raw = secured(**{"process.roles": "controller",
                     "listeners": "CONTROLLER://127.0.0.1:9093",
                     "controller.listener.names": "CONTROLLER"})
    listener, security = inter_broker_security(BrokerConfig(raw))
    assert listener == "INTERNAL" and security.sasl is not None


@pytest.mark.parametrize(("changes", "message"), [
    ({"sasl.mechanism.inter.broker.protocol": None},
     "sasl.mechanism.inter.broker.protocol GSSAPI is not supported on inter-broker listener "
     "INTERNAL"),
    ({"sasl.enabled.mechanisms": "PLAIN"},
     "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when "
     "SASL is used for inter-broker communication"),
    ({"listener.name.internal.scram-sha-512.sasl.jaas.config": None},
     "listener.name.internal.scram-sha-512.sasl.jaas.config: sasl.jaas.config is required"),
    ({"listener.name.internal.scram-sha-512.sasl.jaas.config":
      'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker";'},
     "sasl.jaas.config needs username and password"),
    ({"inter.broker.listener.name": "ELSEWHERE"},
     "Listener with name ELSEWHERE defined in inter.broker.listener.name not found in "
     "listener.security.protocol.map"),
])
def test_what_does_not_fit_stops_startup_naming_the_config(
        changes: dict[str, str | None], message: str) -> None:
    raw = secured()
    for name, value in changes.items():
        if value is None:
            raw.pop(name)
        else:
            raw[name] = value
    with pytest.raises(InvalidConfigError) as raised:
        inter_broker_security(BrokerConfig(raw))
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
