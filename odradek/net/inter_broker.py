"""How brokers (replica fetchers, transaction markers and verification) and controllers (their
exporter) connect to brokers, as Kafka's inter-broker channel does: the inter-broker
listener's security protocol, TLS from that listener's ssl configs, and SASL with
`sasl.mechanism.inter.broker.protocol` logging in as the `username` and `password` of
`listener.name.<listener>.<mechanism>.sasl.jaas.config` (Kafka's lookup order)."""

from __future__ import annotations

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.config.listeners import inter_broker_listener
from odradek.net.kafka_client.security import (
    PLAINTEXT_CLIENT,
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    ClientSecurity,
    sasl_login,
)
from odradek.net.tls import client_context, settings
from odradek.security.sasl import SUPPORTED_MECHANISMS

MECHANISM = "sasl.mechanism.inter.broker.protocol"


def inter_broker_security(config: BrokerConfig) -> tuple[str, ClientSecurity]:
    """(the inter-broker listener's name, the security to connect to it with). Raises
    InvalidConfigError, one line naming the config, when it cannot be built."""
    listener, protocol = inter_broker_listener(config)
    if protocol not in TLS_PROTOCOLS | SASL_PROTOCOLS:
        return listener, PLAINTEXT_CLIENT
    context = (client_context(settings(config, listener)) if protocol in TLS_PROTOCOLS
               else None)
    login = None
    if protocol in SASL_PROTOCOLS:
        mechanism = config.text(MECHANISM).strip()
        if mechanism not in SUPPORTED_MECHANISMS:
            raise InvalidConfigError(
                f"{MECHANISM} {mechanism} is not supported on inter-broker listener "
                f"{listener} ({protocol}): set it to one of {', '.join(SUPPORTED_MECHANISMS)}")
        enabled = config.for_listener(listener, "sasl.enabled.mechanisms")
        assert isinstance(enabled, list)
        if mechanism not in enabled:
            raise InvalidConfigError(f"{MECHANISM} must be included in sasl.enabled.mechanisms "
                                     "when SASL is used for inter-broker communication")
        jaas = config.for_listener(listener, "sasl.jaas.config", mechanism)
        login = sasl_login(mechanism, None if jaas is None else str(jaas),
                           f"listener.name.{listener.lower()}.{mechanism.lower()}"
                           ".sasl.jaas.config")
    return listener, ClientSecurity(protocol, context, login)
