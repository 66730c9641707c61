"""Per-listener security configs: `listener.name.<l>.*` precedence, and the one-line errors a
listener's TLS or SASL configuration stops start-up with."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.broker.listener_security import ListenerSecurity
from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.config.listeners import Endpoint
from tests.certificates import Authority


def security(raw: dict[str, str], protocol: str) -> ListenerSecurity:
    return ListenerSecurity(BrokerConfig(raw), Endpoint("EXTERNAL", "", 0, protocol),
                            lambda user, mechanism: None)


def test_listener_and_mechanism_prefixes_override_the_broker_config() -> None:
    config = BrokerConfig({
        "connections.max.reauth.ms": "1", "listener.name.external.connections.max.reauth.ms": "2",
        "listener.name.external.scram-sha-256.connections.max.reauth.ms": "3"})
    assert config.for_listener("INTERNAL", "connections.max.reauth.ms") == 1
    assert config.for_listener("EXTERNAL", "connections.max.reauth.ms") == 2
    assert config.for_listener("EXTERNAL", "connections.max.reauth.ms", "SCRAM-SHA-256") == 3


def test_a_listener_prefix_on_a_config_listeners_cannot_override_is_unknown() -> None:
    with pytest.raises(InvalidConfigError, match="Unknown broker config"):
        BrokerConfig({"listener.name.external.num.partitions": "3"})


@pytest.fixture
def stores(tmp_path: Path) -> dict[str, str]:
    ca = Authority()
    return {"ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(ca.issue("broker").write(tmp_path / "k.pem")),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.write(
                tmp_path / "ca.pem"))}


def test_inline_pem_stores_serve_like_files(stores: dict[str, str]) -> None:
    text = Path(stores.pop("ssl.keystore.location")).read_text()
    key, _, chain = text.partition("-----END PRIVATE KEY-----\n")
    stores.update({"ssl.keystore.key": key + "-----END PRIVATE KEY-----",
                   "ssl.keystore.certificate.chain": chain,
                   "ssl.truststore.certificates": Path(
                       stores.pop("ssl.truststore.location")).read_text(),
                   "ssl.client.auth": "required"})
    assert security(stores, "SSL").ssl_context is not None


@pytest.mark.parametrize(("change", "protocol", "message"), [
    ({"ssl.keystore.location": None}, "SSL", "an SSL listener needs a key store"),
    ({"ssl.keystore.type": "JKS"}, "SASL_SSL", "ssl.keystore.type JKS is not supported"),
    ({"ssl.truststore.location": None, "ssl.client.auth": "required"}, "SSL",
     "ssl.client.auth=required needs a trust store"),
    ({"ssl.keystore.location": "/nonexistent.pem"}, "SSL",
     "^listener EXTERNAL: cannot load the key store /nonexistent.pem: No such file or "
     "directory$"),
    ({"ssl.cipher.suites": "NOT-A-CIPHER"}, "SSL", "names no cipher suite"),
    ({"ssl.principal.mapping.rules": "RULE:x"}, "SSL", "ssl.principal.mapping.rules"),
    ({}, "SASL_PLAINTEXT", "sasl.enabled.mechanisms GSSAPI names no mechanism or one Odradek"),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "SASL_PLAINTEXT",
     "enables PLAIN but has no JAAS config: set listener.name.external.plain.sasl.jaas.config"),
    ({"sasl.enabled.mechanisms": "PLAIN",
      "listener.name.external.plain.sasl.jaas.config": "x required k=;"}, "SASL_PLAINTEXT",
     "plain.sasl.jaas.config: expected key=value"),
])
def test_bad_listener_security_is_refused_in_one_line(
        stores: dict[str, str], change: dict[str, str | None], protocol: str,
        message: str) -> None:
    raw = {**stores, **change}
    with pytest.raises(InvalidConfigError, match=message) as refused:
        security({k: v for k, v in raw.items() if v is not None}, protocol)
    assert "\n" not in str(refused.value)
