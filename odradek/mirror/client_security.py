"""How the mirror secures its connections to a cluster, from the cluster's client configs as
MM2 reads them (`<alias>.security.protocol`, `<alias>.ssl.*`, `<alias>.sasl.mechanism`,
`<alias>.sasl.jaas.config`, the top-level ones for every cluster, and
`<alias>.{consumer,producer,admin}.*` for one client role): our own connections get a
`ClientSecurity`, the librdkafka clients the same settings in librdkafka's names."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.config import InvalidConfigError
from odradek.kafka_client import ClientSecurity, client_security
from odradek.kafka_client.security import SASL_PROTOCOLS
from odradek.mirror.config import Flow, MirrorConfig, MirrorConfigError, Role, Side
from odradek.security import jaas

ROLES: tuple[Role, ...] = ("consumer", "producer", "admin")
SECURITY_PREFIXES = ("security.protocol", "ssl.", "sasl.")

_LIBRDKAFKA_SSL = frozenset({
    "ssl.key.location", "ssl.key.password", "ssl.key.pem", "ssl.certificate.location",
    "ssl.certificate.pem", "ssl.ca.location", "ssl.ca.pem", "ssl.ca.certificate.stores",
    "ssl.crl.location", "ssl.curves.list", "ssl.sigalgs.list", "ssl.providers",
    "ssl.engine.location", "ssl.engine.id"})
_LIBRDKAFKA_SASL = frozenset({"sasl.mechanism", "sasl.mechanisms", "sasl.username",
                              "sasl.password"})
_PEM_STORES = {"ssl.truststore.location": ("ssl.ca.location",),
               "ssl.truststore.certificates": ("ssl.ca.pem",),
               "ssl.keystore.location": ("ssl.certificate.location", "ssl.key.location"),
               "ssl.keystore.certificate.chain": ("ssl.certificate.pem",),
               "ssl.keystore.key": ("ssl.key.pem",)}
"""Kafka's PEM stores (KIP-651) and the librdkafka configs that take the same PEM."""


def _whose(flow: Flow, side: Side, role: Role) -> str:
    """The prefix of the configs that decide: `<alias>.<role>` when the role overrides
    security, else `<alias>`."""
    alias = flow.source if side == "source" else flow.target
    cluster = flow.source_cluster if side == "source" else flow.target_cluster
    overridden = any(key.startswith(role + ".") and
                     key[len(role) + 1:].startswith(SECURITY_PREFIXES) for key in cluster)
    return f"{alias}.{role}" if overridden else alias


def flow_security(flow: Flow, side: Side, role: Role) -> ClientSecurity:
    """Our own connections' security for one client role on one side of a flow; raises
    MirrorConfigError (one line naming the configs' prefix) on a bad value."""
    try:
        return client_security(flow.client_config(side, role), _whose(flow, side, role))
    except MirrorConfigError:
        raise
    except InvalidConfigError as error:
        raise MirrorConfigError(str(error)) from None


def check_security(config: MirrorConfig) -> None:
    """Every client config of every pair, checked before anything connects."""
    for pair in config.pairs:
        for side in ("source", "target"):
            for role in ROLES:
                flow_security(pair, side, role)  # type: ignore[arg-type]


def librdkafka_config(properties: Mapping[str, str]) -> dict[str, str]:
    """A Kafka client's properties as librdkafka takes them: the PEM stores, the
    `username` and `password` of `sasl.jaas.config` and
    `ssl.endpoint.identification.algorithm` in librdkafka's names; Java-only `ssl.*` and
    `sasl.*` configs left out; everything else as it is. Expects checked properties
    (`check_security`)."""
    config = {key: value for key, value in properties.items()
              if not key.startswith(("ssl.", "sasl."))
              or key in _LIBRDKAFKA_SSL or key in _LIBRDKAFKA_SASL}
    for java, names in _PEM_STORES.items():
        if properties.get(java):
            config.update(dict.fromkeys(names, properties[java]))
    password = properties.get("ssl.key.password") or properties.get("ssl.keystore.password")
    if password:
        config["ssl.key.password"] = password
    if "ssl.endpoint.identification.algorithm" in properties:
        algorithm = properties["ssl.endpoint.identification.algorithm"].strip()
        config["ssl.endpoint.identification.algorithm"] = algorithm.lower() or "none"
    protocol = properties.get("security.protocol", "PLAINTEXT").strip().upper()
    jaas_config = properties.get("sasl.jaas.config")
    if protocol in SASL_PROTOCOLS and jaas_config:
        credentials = jaas.client_credentials(jaas_config)
        if credentials is not None:
            config["sasl.username"], config["sasl.password"] = credentials
    return config


def flow_librdkafka_config(flow: Flow, side: Side, role: Role) -> dict[str, str]:
    """`librdkafka_config` of one client role on one side of a flow."""
    return librdkafka_config(flow.client_config(side, role))
