"""A Kafka client's security properties in either spelling: Kafka's Java client names
(`ssl.truststore.location`, `sasl.jaas.config`, ...; KIP-651 PEM stores) and librdkafka's
(`ssl.ca.location`, `sasl.username`, ...). The confluent-kafka clients (the tools, the mirror's
librdkafka clients) get librdkafka's names (`librdkafka_spelling`); our own clients get Kafka's
(`kafka_spelling`), which `client_security` reads. Both read whatever is set, whatever
`security.protocol` says.

The rule for `ssl.*` and `sasl.*` names on the way to librdkafka: Kafka's names are turned
into librdkafka's where librdkafka has a counterpart (PEM stores, `ssl.key.password`, the
`username` and `password` of `sasl.jaas.config`, an empty
`ssl.endpoint.identification.algorithm` as `none`); Kafka's client (and broker) names that
librdkafka has no counterpart for and needs none (`JAVA_ONLY`: store types, algorithms,
`ssl.enabled.protocols`, `ssl.client.auth`, `sasl.login.*`, ...) are left out, as MM2 configs
routinely carry them and librdkafka refuses names it does not know; every other name,
librdkafka's own (`ssl.ca.location`, PKCS#12 `ssl.keystore.location`) or a misspelt one, is
passed on unchanged, for librdkafka to take or refuse by name. A store Odradek cannot read (a
JKS one, Kafka's default type) raises InvalidConfigError naming the spelling to use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from odradek.config.kafka_configs import InvalidConfigError
from odradek.security import jaas
from odradek.security.sasl import PLAIN

PEM = "PEM"
JKS = "JKS"
"""Kafka's default store type, which Odradek's clients do not read."""
PKCS12 = "PKCS12"
JAVA_ONLY = frozenset({
    "ssl.protocol", "ssl.provider", "ssl.enabled.protocols", "ssl.keystore.type",
    "ssl.truststore.type", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
    "ssl.engine.factory.class", "ssl.client.auth", "ssl.principal.mapping.rules",
    "ssl.allow.dn.changes", "ssl.allow.san.changes", "sasl.client.callback.handler.class",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.principal.to.local.rules", "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol", "sasl.server.callback.handler.class",
    "sasl.server.max.receive.size", "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience", "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.header.urlencode"})
"""Kafka's `ssl.*` and `sasl.*` configs that librdkafka has no name for and needs none: it
reads PEM (and PKCS#12) stores by their own properties, negotiates the newest TLS version
both sides speak, and logs in with `sasl.username` and `sasl.password`."""
JAVA_ONLY_PREFIXES = ("sasl.login.", "sasl.oauthbearer.jwks.endpoint.")


def _store_type(properties: Mapping[str, str], name: str) -> str | None:
    value = properties.get(name)
    return value.strip().upper() if value is not None else None


def _java_only(name: str) -> bool:
    return name in JAVA_ONLY or name.startswith(JAVA_ONLY_PREFIXES)


def librdkafka_spelling(properties: Mapping[str, str]) -> dict[str, str]:
    """`properties` with Kafka's Java-client security names turned into librdkafka's (the
    module's rule); raises InvalidConfigError (one line naming the config) on a store or
    `sasl.jaas.config` it cannot translate."""
    given = dict(properties)
    result = {k: v for k, v in given.items() if not _java_only(k) and k != "sasl.jaas.config"}
    trust_type = _store_type(given, "ssl.truststore.type") or JKS
    has_trust = "ssl.truststore.location" in given or "ssl.truststore.certificates" in given
    if has_trust and trust_type != PEM:
        raise InvalidConfigError(f"ssl.truststore.type={trust_type} is not supported: use a "
                                 "PEM trust store (ssl.truststore.type=PEM, KIP-651) or "
                                 "librdkafka's ssl.ca.location")
    if "ssl.truststore.location" in result:
        result["ssl.ca.location"] = result.pop("ssl.truststore.location")
    if "ssl.truststore.certificates" in result:
        result["ssl.ca.pem"] = result.pop("ssl.truststore.certificates")
    key_type = _store_type(given, "ssl.keystore.type")
    if key_type == PEM:
        if "ssl.keystore.location" in result:
            location = result.pop("ssl.keystore.location")
            result.setdefault("ssl.certificate.location", location)
            result.setdefault("ssl.key.location", location)
        if "ssl.keystore.certificate.chain" in result:
            result["ssl.certificate.pem"] = result.pop("ssl.keystore.certificate.chain")
        if "ssl.keystore.key" in result:
            result["ssl.key.pem"] = result.pop("ssl.keystore.key")
        if "ssl.keystore.password" in result:
            result.setdefault("ssl.key.password", result.pop("ssl.keystore.password"))
    elif key_type not in (None, PKCS12) and "ssl.keystore.location" in given:
        raise InvalidConfigError(f"ssl.keystore.type={key_type} is not supported: use a PEM "
                                 "key store (ssl.keystore.type=PEM, KIP-651) or librdkafka's "
                                 "ssl.certificate.location and ssl.key.location")
    algorithm = result.get("ssl.endpoint.identification.algorithm")
    if algorithm is not None:
        result["ssl.endpoint.identification.algorithm"] = algorithm.strip().lower() or "none"
    jaas_config = given.get("sasl.jaas.config")
    if jaas_config is not None:
        username, password = _jaas_login(jaas_config)
        result.setdefault("sasl.username", username)
        result.setdefault("sasl.password", password)
    return result


def kafka_spelling(properties: Mapping[str, str],
                   read: Callable[[str], str] = lambda path: Path(path).read_text()
                   ) -> dict[str, str]:
    """`properties` with librdkafka's security names turned into Kafka's; `read` reads a
    PEM file (a certificate and a key in two files become inline PEM). Raises
    InvalidConfigError (one line) on what has no counterpart or a file it cannot read."""
    result = dict(properties)
    mechanisms = result.pop("sasl.mechanisms", None)
    if mechanisms is not None:
        result.setdefault("sasl.mechanism", mechanisms)
    username, password = result.pop("sasl.username", None), result.pop("sasl.password", None)
    if username is not None and "sasl.jaas.config" not in result:
        mechanism = result.get("sasl.mechanism", "GSSAPI").strip()
        module = jaas.PLAIN_LOGIN_MODULE if mechanism == PLAIN else jaas.SCRAM_LOGIN_MODULE
        result["sasl.jaas.config"] = (f'{module} required username="{_quoted(username)}" '
                                      f'password="{_quoted(password or "")}";')
    if "ssl.ca.location" in result:
        result.setdefault("ssl.truststore.location", result.pop("ssl.ca.location"))
        result.setdefault("ssl.truststore.type", PEM)
    if "ssl.ca.pem" in result:
        result.setdefault("ssl.truststore.certificates", result.pop("ssl.ca.pem"))
        result.setdefault("ssl.truststore.type", PEM)
    certificate, key = result.pop("ssl.certificate.location", None), result.pop(
        "ssl.key.location", None)
    if (certificate is None) != (key is None):
        raise InvalidConfigError("ssl.certificate.location and ssl.key.location must be set "
                                 "together")
    if certificate is not None and key is not None:
        result.setdefault("ssl.keystore.type", PEM)
        if certificate == key:
            result.setdefault("ssl.keystore.location", certificate)
        else:
            result.setdefault("ssl.keystore.certificate.chain", _read(read, certificate))
            result.setdefault("ssl.keystore.key", _read(read, key))
    if "ssl.certificate.pem" in result or "ssl.key.pem" in result:
        result.setdefault("ssl.keystore.certificate.chain", result.pop("ssl.certificate.pem", ""))
        result.setdefault("ssl.keystore.key", result.pop("ssl.key.pem", ""))
        result.setdefault("ssl.keystore.type", PEM)
    if result.get("ssl.endpoint.identification.algorithm", "").strip().lower() == "none":
        result["ssl.endpoint.identification.algorithm"] = ""
    return result


def _jaas_login(text: str) -> tuple[str, str]:
    try:
        credentials = jaas.client_credentials(text)
    except jaas.JaasError as error:
        raise InvalidConfigError(f"sasl.jaas.config: {error}") from None
    if credentials is None:
        raise InvalidConfigError('sasl.jaas.config needs username and password, as in '
                                 f'{jaas.SCRAM_LOGIN_MODULE} required username="..." '
                                 'password="...";')
    return credentials


def _quoted(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _read(read: Callable[[str], str], path: str) -> str:
    try:
        return read(path)
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidConfigError(
            f"cannot read {path}: {getattr(error, 'strerror', None) or error}") from None
