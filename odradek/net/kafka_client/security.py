"""How our own clients (replica fetchers, coordinators, the mirror, the tools, the
controllers' exporters) secure a connection to a broker: Kafka's `security.protocol` with TLS
from the `ssl.*` configs and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) from `sasl.mechanism`
and the `username` and `password` of `sasl.jaas.config`, as a Kafka client reads them."""

from __future__ import annotations

import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from odradek.config.kafka_configs import SECURITY_PROTOCOLS, InvalidConfigError
from odradek.net.tls import client_context, client_settings
from odradek.security import jaas
from odradek.security.sasl import PLAIN, SUPPORTED_MECHANISMS
from odradek.security.scram import ScramClient, ScramMechanism

PLAINTEXT = "PLAINTEXT"
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})


@dataclass(frozen=True, slots=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str

    def exchange(self) -> SaslExchange:
        """A new client-side exchange: the tokens to send, one answer at a time."""
        scram = ScramMechanism.from_name(self.mechanism)
        if scram is None:
            return PlainExchange(self.username, self.password)
        return ScramExchange(ScramClient(scram, self.username, self.password,
                                         secrets.token_urlsafe(24)))


class SaslExchange(Protocol):
    """The client's tokens: `first`, then `answer` each server token until it returns None
    (the exchange is complete). A refused or bad exchange raises ValueError."""

    def first(self) -> bytes: ...

    def answer(self, token: bytes) -> bytes | None: ...


class PlainExchange:
    def __init__(self, username: str, password: str) -> None:
        self._token = f"\0{username}\0{password}".encode()

    def first(self) -> bytes:
        return self._token

    def answer(self, token: bytes) -> bytes | None:
        return None


class ScramExchange:
    def __init__(self, client: ScramClient) -> None:
        self._client = client
        self._answered = False

    def first(self) -> bytes:
        return self._client.first_message()

    def answer(self, token: bytes) -> bytes | None:
        if not self._answered:
            self._answered = True
            return self._client.final_message(token)
        self._client.verify(token)
        return None


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """A connection's security: TLS when `ssl_context` is set, SASL when `sasl` is."""

    protocol: str = PLAINTEXT
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslLogin | None = None

    def server_hostname(self, host: str) -> str | None:
        """The name to check the broker's certificate against (None: no TLS)."""
        return host if self.ssl_context is not None else None


PLAINTEXT_CLIENT = ClientSecurity()


def sasl_login(mechanism: str, jaas_config: str | None, whose: str) -> SaslLogin:
    """The login `jaas_config` (its `username` and `password`) gives for `mechanism`; raises
    InvalidConfigError naming `whose` config is wrong."""
    if mechanism not in SUPPORTED_MECHANISMS:
        raise InvalidConfigError(f"{whose}: SASL mechanism {mechanism} is not supported "
                                 f"(supported: {', '.join(SUPPORTED_MECHANISMS)})")
    if not jaas_config:
        raise InvalidConfigError(f"{whose}: sasl.jaas.config is required for SASL mechanism "
                                 f"{mechanism}")
    try:
        credentials = jaas.client_credentials(jaas_config)
    except jaas.JaasError as error:
        raise InvalidConfigError(f"{whose}: sasl.jaas.config: {error}") from None
    if credentials is None:
        module = jaas.PLAIN_LOGIN_MODULE if mechanism == PLAIN else jaas.SCRAM_LOGIN_MODULE
        raise InvalidConfigError(f"{whose}: sasl.jaas.config needs username and password, as "
                                 f'in {module} required username="..." password="...";')
    return SaslLogin(mechanism, *credentials)


def client_security(properties: Mapping[str, str], whose: str = "client") -> ClientSecurity:
    """The security a Kafka client's properties ask for: `security.protocol` (default
    PLAINTEXT), `ssl.*` for SSL and SASL_SSL, `sasl.mechanism` (default GSSAPI, which Odradek
    does not serve) and `sasl.jaas.config` for SASL_PLAINTEXT and SASL_SSL. Raises
    InvalidConfigError (one line naming `whose`) on a bad value."""
    protocol = properties.get("security.protocol", PLAINTEXT).strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise InvalidConfigError(f"{whose}: security.protocol {protocol} is not one of "
                                 f"{', '.join(SECURITY_PROTOCOLS)}")
    context = (client_context(client_settings(properties, whose))
               if protocol in TLS_PROTOCOLS else None)
    login = (sasl_login(properties.get("sasl.mechanism", "GSSAPI").strip(),
                        properties.get("sasl.jaas.config"), whose)
             if protocol in SASL_PROTOCOLS else None)
    return ClientSecurity(protocol, context, login)
