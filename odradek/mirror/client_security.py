"""How the mirror secures its connections to a cluster, from the cluster's client configs as
MM2 reads them (`<alias>.security.protocol`, `<alias>.ssl.*`, `<alias>.sasl.mechanism`,
`<alias>.sasl.jaas.config`, the top-level ones for every cluster, and
`<alias>.{consumer,producer,admin}.*` for one client role): our own connections get a
`ClientSecurity`, the librdkafka clients the same settings in librdkafka's names
(`odradek.net.kafka_client.spelling`)."""

from __future__ import annotations

from odradek.config.kafka_configs import InvalidConfigError
from odradek.mirror.config import Flow, MirrorConfig, MirrorConfigError, Role, Side
from odradek.net.kafka_client import ClientSecurity, client_security
from odradek.net.kafka_client.spelling import librdkafka_spelling

ROLES: tuple[Role, ...] = ("consumer", "producer", "admin")
SECURITY_PREFIXES = ("security.protocol", "ssl.", "sasl.")


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
                flow_librdkafka_config(pair, side, role)  # type: ignore[arg-type]


def flow_librdkafka_config(flow: Flow, side: Side, role: Role) -> dict[str, str]:
    """One client role's configs on one side of a flow in librdkafka's names
    (`librdkafka_spelling`); raises MirrorConfigError (one line naming the configs' prefix)
    on what has no counterpart."""
    try:
        return librdkafka_spelling(flow.client_config(side, role))
    except InvalidConfigError as error:
        raise MirrorConfigError(f"{_whose(flow, side, role)}: {error}") from None
