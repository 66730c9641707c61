"""The mirror's client security from MM2's per-cluster configs: our own connections'
`ClientSecurity`, librdkafka's names for the same settings (the translation itself:
test_kafka_client_spelling.py), and one-line errors naming the configs' prefix."""

from __future__ import annotations

import pytest

from odradek.mirror.client_security import check_security, flow_librdkafka_config, flow_security
from odradek.mirror.config import MirrorConfigError, parse_mirror_config
from tests.certificates import Authority

SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
         'username="mirror" password="mirror-secret";')


def config(**settings: str):
    return parse_mirror_config({"clusters": "east, west", "east.bootstrap.servers": "h:1",
                                "west.bootstrap.servers": "h:2", "east->west.enabled": "true",
                                **settings})


def test_each_cluster_and_role_gets_its_own_security(tmp_path) -> None:
    ca = Authority().write(tmp_path / "ca.pem")
    flow = config(**{"west.security.protocol": "SASL_SSL", "west.sasl.mechanism": "SCRAM-SHA-512",
                     "west.sasl.jaas.config": SCRAM, "west.ssl.truststore.type": "PEM",
                     "west.ssl.truststore.location": str(ca),
                     "west.admin.sasl.mechanism": "SCRAM-SHA-256"}).flow("east", "west")
    assert flow_security(flow, "source", "consumer").protocol == "PLAINTEXT"
    producer = flow_security(flow, "target", "producer")
    assert producer.protocol == "SASL_SSL" and producer.ssl_context is not None
    assert producer.sasl is not None
    assert (producer.sasl.mechanism, producer.sasl.username, producer.sasl.password) == (
        "SCRAM-SHA-512", "mirror", "mirror-secret")
    admin = flow_security(flow, "target", "admin")
    assert admin.sasl is not None and admin.sasl.mechanism == "SCRAM-SHA-256"


@pytest.mark.parametrize(("settings", "message"), [
    ({"west.security.protocol": "SASL_TLS"}, "west: security.protocol SASL_TLS is not one of"),
    ({"west.security.protocol": "SASL_PLAINTEXT", "west.sasl.mechanism": "SCRAM-SHA-512"},
     "west: sasl.jaas.config is required"),
    ({"west.security.protocol": "SASL_PLAINTEXT", "west.sasl.mechanism": "GSSAPI",
      "west.sasl.jaas.config": SCRAM}, "west: SASL mechanism GSSAPI is not supported"),
    ({"west.security.protocol": "SASL_PLAINTEXT", "west.sasl.mechanism": "PLAIN",
      "west.consumer.sasl.jaas.config": "nonsense"}, "west.consumer: sasl.jaas.config"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
      "ssl.truststore.location": "/nonexistent/ca.pem"},
     "east: cannot load the trust store /nonexistent/ca.pem: No such file or directory"),
    ({"west.security.protocol": "SSL", "west.ssl.truststore.type": "PEM",
      "west.ssl.truststore.certificates": "not a certificate"},
     "west: cannot load the trust store (ssl.truststore.certificates): "),
    ({"west.ssl.truststore.location": "/t.jks"},
     "west: ssl.truststore.type=JKS is not supported: use a PEM trust store"),
])
def test_a_bad_security_config_is_one_line_naming_it(settings: dict[str, str],
                                                     message: str) -> None:
    with pytest.raises(MirrorConfigError) as raised:
        check_security(config(**settings))
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_each_role_gets_its_librdkafka_config() -> None:
    flow = config(**{"west.security.protocol": "SASL_PLAINTEXT",
                     "west.sasl.mechanism": "SCRAM-SHA-512", "west.sasl.jaas.config": SCRAM,
                     "west.sasl.login.refresh.window.factor": "0.8",
                     "west.ssl.enabled.protocols": "TLSv1.3"}).flow("east", "west")
    target = flow_librdkafka_config(flow, "target", "producer")
    assert (target["sasl.username"], target["sasl.password"]) == ("mirror", "mirror-secret")
    assert not {"sasl.jaas.config", "sasl.login.refresh.window.factor",
                "ssl.enabled.protocols"} & target.keys()
    assert "sasl.username" not in flow_librdkafka_config(flow, "source", "consumer")
