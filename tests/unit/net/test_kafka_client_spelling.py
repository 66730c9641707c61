"""A client's security properties in either spelling: Kafka's Java client properties turned
into librdkafka's for the confluent-kafka clients (the tools, the mirror), Java-only ones left
out and librdkafka's own kept; librdkafka's into Kafka's for our own client (which
`client_security` then reads); and what has no counterpart refused by name."""

from __future__ import annotations

import pytest

from odradek.config.kafka_configs import InvalidConfigError
from odradek.net.kafka_client import client_security
from odradek.net.kafka_client.spelling import kafka_spelling, librdkafka_spelling
from odradek.security import jaas

SCRAM = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
         'username="mirror" password="mirror-secret";')
JAAS = f'{jaas.SCRAM_LOGIN_MODULE} required username="alice" password="a \\"quoted\\" secret";'


def test_kafkas_spelling_becomes_librdkafkas() -> None:
    assert librdkafka_spelling({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": JAAS, "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem", "ssl.keystore.type": "pem",
        "ssl.keystore.location": "/alice.pem", "ssl.key.password": "k",
        "ssl.endpoint.identification.algorithm": "", "ssl.enabled.protocols": "TLSv1.3",
        "client.id": "me"}) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice", "sasl.password": 'a "quoted" secret',
        "ssl.ca.location": "/ca.pem", "ssl.certificate.location": "/alice.pem",
        "ssl.key.location": "/alice.pem", "ssl.key.password": "k",
        "ssl.endpoint.identification.algorithm": "none", "client.id": "me"}


def test_inline_pem_stores_become_librdkafkas_pem_strings() -> None:
    assert librdkafka_spelling({
        "ssl.truststore.type": "PEM", "ssl.truststore.certificates": "CA",
        "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": "CHAIN",
        "ssl.keystore.key": "KEY"}) == {
        "ssl.ca.pem": "CA", "ssl.certificate.pem": "CHAIN", "ssl.key.pem": "KEY"}


def test_java_only_names_are_left_out_and_librdkafkas_own_kept() -> None:
    assert librdkafka_spelling({
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL",
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem",
        "ssl.truststore.password": "t", "ssl.protocol": "TLSv1.3",
        "ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "ssl.client.auth": "required",
        "ssl.keymanager.algorithm": "SunX509", "sasl.mechanism": "PLAIN",
        "sasl.login.refresh.window.factor": "0.8", "sasl.login.connect.timeout.ms": "5000",
        "sasl.username": "u", "sasl.password": "p", "ssl.crl.location": "/crl.pem",
        "ssl.endpoint.identification.algorithm": "HTTPS", "linger.ms": "5"}) == {
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/ca.pem", "sasl.mechanism": "PLAIN", "sasl.username": "u",
        "sasl.password": "p", "ssl.crl.location": "/crl.pem",
        "ssl.endpoint.identification.algorithm": "https", "linger.ms": "5"}


def test_a_pkcs12_key_store_passes_to_librdkafka() -> None:
    assert librdkafka_spelling({"ssl.keystore.type": "PKCS12",
                                "ssl.keystore.location": "/me.p12",
                                "ssl.keystore.password": "p"}) == {
        "ssl.keystore.location": "/me.p12", "ssl.keystore.password": "p"}


def test_keystore_password_is_the_pem_keys_password() -> None:
    assert librdkafka_spelling({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/me.pem",
                                "ssl.keystore.password": "k"}) == {
        "ssl.certificate.location": "/me.pem", "ssl.key.location": "/me.pem",
        "ssl.key.password": "k"}


def test_librdkafkas_spelling_passes_through_unchanged() -> None:
    config = {"security.protocol": "SSL", "ssl.ca.location": "/ca.pem",
              "ssl.keystore.location": "/me.p12", "ssl.keystore.password": "p",
              "sasl.username": "u", "sasl.password": "p"}
    assert librdkafka_spelling(config) == config


@pytest.mark.parametrize(("properties", "message"), [
    ({"ssl.truststore.type": "JKS", "ssl.truststore.location": "/t.jks"},
     "ssl.truststore.type=JKS is not supported: use a PEM trust store"),
    ({"ssl.truststore.location": "/t.jks"}, "ssl.truststore.type=JKS is not supported"),
    ({"ssl.keystore.type": "JKS", "ssl.keystore.location": "/k.jks"},
     "ssl.keystore.type=JKS is not supported: use a PEM key store"),
    ({"sasl.jaas.config": f"{jaas.SCRAM_LOGIN_MODULE} required;"},
     "sasl.jaas.config needs username and password"),
    ({"sasl.jaas.config": "not jaas"}, "sasl.jaas.config: "),
])
def test_what_librdkafka_cannot_read_is_refused_by_name(properties: dict[str, str],
                                                        message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        librdkafka_spelling(properties)


def test_a_key_file_that_cannot_be_read_is_named() -> None:
    with pytest.raises(InvalidConfigError, match="^cannot read /cert.pem: No such file"):
        kafka_spelling({"ssl.certificate.location": "/cert.pem",
                        "ssl.key.location": "/key.pem"})


def test_librdkafkas_spelling_becomes_kafkas_for_our_own_client() -> None:
    properties = kafka_spelling({
        "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "alice", "sasl.password": 'a "quoted" \\ secret',
        "ssl.ca.location": "/ca.pem", "ssl.certificate.location": "/alice.pem",
        "ssl.key.location": "/alice.pem", "ssl.endpoint.identification.algorithm": "none"})
    assert properties == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": f'{jaas.SCRAM_LOGIN_MODULE} required username="alice" '
                            'password="a \\"quoted\\" \\\\ secret";',
        "ssl.truststore.location": "/ca.pem", "ssl.truststore.type": "PEM",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": "/alice.pem",
        "ssl.endpoint.identification.algorithm": ""}
    assert jaas.client_credentials(properties["sasl.jaas.config"]) == (
        "alice", 'a "quoted" \\ secret')


def test_plain_logins_and_separate_key_files() -> None:
    files = {"/cert.pem": "CERT", "/key.pem": "KEY"}
    properties = kafka_spelling({"sasl.mechanism": "PLAIN", "sasl.username": "u",
                                 "sasl.password": "p", "ssl.certificate.location": "/cert.pem",
                                 "ssl.key.location": "/key.pem"}, files.__getitem__)
    assert properties["sasl.jaas.config"].startswith(jaas.PLAIN_LOGIN_MODULE)
    assert properties["ssl.keystore.certificate.chain"] == "CERT"
    assert properties["ssl.keystore.key"] == "KEY"


def test_the_two_spellings_make_the_same_client_security(tmp_path: object) -> None:
    java = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": JAAS}
    librdkafka = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                  "sasl.username": "alice", "sasl.password": 'a "quoted" secret'}
    assert client_security(kafka_spelling(java)) == client_security(kafka_spelling(librdkafka))


def test_a_certificate_without_its_key_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match="ssl.certificate.location and ssl.key.location"):
        kafka_spelling({"ssl.certificate.location": "/cert.pem"})


def test_mm2_client_properties_in_librdkafka_names() -> None:
    translated = librdkafka_spelling({
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": SCRAM,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": "/me.pem",
        "ssl.key.password": "k", "ssl.endpoint.identification.algorithm": "",
        "ssl.enabled.protocols": "TLSv1.3", "linger.ms": "5"})
    assert translated == {
        "bootstrap.servers": "h:1", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "mirror",
        "sasl.password": "mirror-secret", "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/me.pem", "ssl.key.location": "/me.pem",
        "ssl.key.password": "k", "ssl.endpoint.identification.algorithm": "none",
        "linger.ms": "5"}
    inline = librdkafka_spelling({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                  "ssl.truststore.certificates": "CA PEM",
                                  "ssl.keystore.type": "PEM",
                                  "ssl.keystore.certificate.chain": "CHAIN",
                                  "ssl.keystore.key": "KEY"})
    assert inline == {"security.protocol": "SSL", "ssl.ca.pem": "CA PEM",
                      "ssl.certificate.pem": "CHAIN", "ssl.key.pem": "KEY"}
