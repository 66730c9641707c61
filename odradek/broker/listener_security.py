"""How one listener's connections are secured, from its security protocol and its configs
(`listener.name.<listener>.*` over the broker's): TLS on SSL and SASL_SSL listeners, SASL
(PLAIN users from the listener's JAAS config, SCRAM credentials from the metadata log) on
SASL_PLAINTEXT and SASL_SSL ones, and the principal a TLS client certificate maps to."""

from __future__ import annotations

import asyncio
import secrets
import ssl

from odradek.broker.server import ConnectionAbort
from odradek.broker.session import Session
from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.config.listeners import Endpoint
from odradek.net.tls import ReloadingServerContext, settings
from odradek.security import jaas
from odradek.security.plain import PlainServer
from odradek.security.principal import ANONYMOUS, USER, KafkaPrincipal
from odradek.security.principal_mapping import NoMatchingRule, map_name, parse_rules, rfc2253
from odradek.security.sasl import PLAIN, SUPPORTED_MECHANISMS, MechanismServer, SaslSession
from odradek.security.scram import CredentialLookup, ScramMechanism, ScramServer

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})


class ListenerSecurity:
    def __init__(self, config: BrokerConfig, endpoint: Endpoint,
                 scram_credentials: CredentialLookup) -> None:
        name = endpoint.name
        self.listener = name
        self.protocol = endpoint.security_protocol
        self.tls = (ReloadingServerContext(settings(config, name))
                    if self.protocol in TLS_PROTOCOLS else None)
        try:
            self.rules = parse_rules(str(config.for_listener(name, "ssl.principal.mapping.rules")))
        except ValueError as error:
            raise InvalidConfigError(f"ssl.principal.mapping.rules: {error}") from None
        self.delay_ms = config.integer("connection.failed.authentication.delay.ms")
        self.mechanisms: list[str] = []
        self.plain_users: dict[str, str] = {}
        self.max_reauth_ms: dict[str, int] = {}
        self._scram_credentials = scram_credentials
        if self.protocol in SASL_PROTOCOLS:
            self._configure_sasl(config)

    def _configure_sasl(self, config: BrokerConfig) -> None:
        name = self.listener
        enabled = config.for_listener(name, "sasl.enabled.mechanisms")
        assert isinstance(enabled, list)
        unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
        if unsupported or not enabled:
            raise InvalidConfigError(
                f"listener {name}: sasl.enabled.mechanisms {','.join(enabled) or '(empty)'} "
                f"names no mechanism or one Odradek does not serve (it serves "
                f"{', '.join(SUPPORTED_MECHANISMS)})")
        self.mechanisms = list(enabled)
        for mechanism in self.mechanisms:
            reauth = config.for_listener(name, "connections.max.reauth.ms", mechanism)
            assert isinstance(reauth, int)
            self.max_reauth_ms[mechanism] = reauth
        if PLAIN in self.mechanisms:
            text = config.for_listener(name, "sasl.jaas.config", PLAIN)
            if text is None:
                raise InvalidConfigError(
                    f"listener {name} enables PLAIN but has no JAAS config: set "
                    f"listener.name.{name.lower()}.plain.sasl.jaas.config")
            try:
                self.plain_users = jaas.plain_users(str(text))
            except jaas.JaasError as error:
                raise InvalidConfigError(f"listener.name.{name.lower()}.plain.sasl.jaas.config:"
                                         f" {error}") from None

    @property
    def ssl_context(self) -> ssl.SSLContext | None:
        """The context to serve the listener with (None: no TLS)."""
        return self.tls.context if self.tls is not None else None

    def _new_server(self, mechanism: str) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(self.plain_users)
        scram = ScramMechanism.from_name(mechanism)
        assert scram is not None
        return ScramServer(scram, self._scram_credentials, secrets.token_hex(16))

    def open_session(self, transport: asyncio.BaseTransport, peer: str) -> Session:
        """A new connection's session: named by its client certificate on SSL listeners,
        waiting for SASL on SASL ones, User:ANONYMOUS otherwise."""
        session = Session(peer, failed_authentication_delay_ms=self.delay_ms)
        if self.protocol in SASL_PROTOCOLS:
            session.sasl = SaslSession(self.mechanisms, self._new_server, self.max_reauth_ms)
        elif self.protocol == "SSL":
            session.principal = self.certificate_principal(transport)
        return session

    def certificate_principal(self, transport: asyncio.BaseTransport) -> KafkaPrincipal:
        certificate = transport.get_extra_info("peercert")
        if not certificate:
            return ANONYMOUS
        subject = rfc2253(certificate.get("subject", ()))
        try:
            return KafkaPrincipal(USER, map_name(self.rules, subject))
        except NoMatchingRule as error:
            raise ConnectionAbort(str(error)) from None

