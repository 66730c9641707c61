"""kafka-configs for `--entity-type users|clients`: client quotas of a user, a client id or
both (each may be the default), described with DescribeClientQuotas and altered with
AlterClientQuotas, printed as kafka-configs prints them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from odradek.cli.tools.common import ToolError
from odradek.cli.tools.wire import WireClient, check
from odradek.net.kafka_client.request_versions import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS
from odradek.security.client_quotas import CLIENT_ID, QUOTA_KEYS, USER
from odradek.security.scram import ScramMechanism

QUOTA_TYPES = {"users": USER, "clients": CLIENT_ID}
"""kafka-configs' entity types and the quota entity types they name."""
SCRAM_MECHANISMS = tuple(m.mechanism_name for m in ScramMechanism)
EXACT, DEFAULT, SPECIFIED = 0, 1, 2
_LABELS = {USER: "user-principal", CLIENT_ID: "client-id"}


@dataclass(frozen=True)
class QuotaEntity:
    """(entity type, name) pairs, users first: a name, "" for the default, None for every
    entity of the type (describe only)."""

    parts: tuple[tuple[str, str | None], ...]

    @property
    def is_default(self) -> bool:
        return self.parts[0][1] == ""

    def __str__(self) -> str:
        return " and ".join(f"{kind[:-1]} {name}" for kind, name in self.parts)


def quota_entity(kinds: Sequence[str], names: Sequence[str], altering: bool) -> QuotaEntity:
    """The entity of kafka-configs' --entity-type/--entity-name/--entity-default list (the
    n-th name belongs to the n-th type), with its checks."""
    if len(set(kinds)) != len(kinds):
        raise ToolError(f"Duplicate entity type(s) specified: {','.join(sorted(set(kinds)))}")
    if len(kinds) > 1 and set(kinds) != set(QUOTA_TYPES):
        raise ToolError("Only 'users' and 'clients' entity types may be specified together")
    if len(names) > len(kinds):
        raise ToolError("More entity names specified than entity types")
    if altering and len(names) != len(kinds):
        raise ToolError("--entity-name or --entity-default must be specified with each "
                        "--entity-type for --alter")
    parts = [(kind, names[i] if i < len(names) else None) for i, kind in enumerate(kinds)]
    return QuotaEntity(tuple(sorted(parts, key=lambda part: part[0] != "users")))


def _component(kind: str, name: str | None) -> dict[str, Any]:
    entity_type = QUOTA_TYPES[kind]
    if name is None:
        return {"entity_type": entity_type, "match_type": SPECIFIED, "match": None}
    if name == "":
        return {"entity_type": entity_type, "match_type": DEFAULT, "match": None}
    return {"entity_type": entity_type, "match_type": EXACT, "match": name}


async def describe_quotas(client: WireClient, entity: QuotaEntity
                          ) -> list[tuple[dict[str, str | None], dict[str, float]]]:
    """The quota entities matching `entity` exactly (kafka-configs' containsOnly filter):
    each entity as {entity type: name or None for the default} and its quotas."""
    response = await client.send(DESCRIBE_CLIENT_QUOTAS, {
        "components": [_component(kind, name) for kind, name in entity.parts], "strict": True})
    check(response.error_code, f"describing the quotas of {entity}", response.error_message)
    return [({e.entity_type: e.entity_name for e in entry.entity},
             {v.key: float(v.value) for v in entry.values})
            for entry in response.entries or ()]


def _number(value: float) -> str:
    """A quota as Java prints a double: 1024.0, 1.5E7."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    shown = "".join(map(str, digits))
    return (f"{'-' if sign else ''}{shown[0]}.{shown[1:] or '0'}"
            f"E{len(digits) - 1 + exponent}")


def describe_lines(described: Sequence[tuple[Mapping[str, str | None], Mapping[str, float]]]
                   ) -> list[str]:
    """`Quota configs for user-principal 'alice', the default client-id are k=v, ...`."""
    lines = []
    for names, quotas in described:
        who = ", ".join(f"{_LABELS[kind]} '{names[kind]}'" if names[kind] is not None
                        else f"the default {_LABELS[kind]}"
                        for kind in (USER, CLIENT_ID) if kind in names)
        values = ", ".join(f"{key}={_number(value)}" for key, value in sorted(quotas.items()))
        lines.append(f"Quota configs for {who} are {values}")
    return lines


def check_config_names(entity: QuotaEntity, additions: Mapping[str, str],
                       deletions: Sequence[str]) -> None:
    """kafka-configs' checks of the names: quota configs for clients (and a user with a
    client), quota and SCRAM credential configs for users."""
    kind = "clients" if len(entity.parts) > 1 else entity.parts[0][0]
    for names, verb in ((list(additions), "added"), (list(deletions), "deleted")):
        scram = [n for n in names if n in SCRAM_MECHANISMS]
        unknown = [n for n in names if n not in QUOTA_KEYS and n not in SCRAM_MECHANISMS]
        if kind == "clients" and (unknown or scram):
            raise ToolError(f"Only quota configs can be {verb} for 'clients' using "
                            f"--bootstrap-server. Unexpected config names: "
                            f"{','.join(unknown + scram)}")
        if unknown:
            raise ToolError(f"Only quota and SCRAM credential configs can be {verb} for "
                            f"'users' using --bootstrap-server. Unexpected config names: "
                            f"{','.join(unknown)}")


def quota_changes(entity: QuotaEntity, additions: Mapping[str, str],
                  deletions: Sequence[str]) -> dict[str, float | None]:
    """The AlterClientQuotas ops of kafka-configs' --add-config/--delete-config (quota
    configs only: SCRAM credentials are scram_users.py's)."""
    check_config_names(entity, additions, deletions)
    changes: dict[str, float | None] = {}
    for key, text in additions.items():
        try:
            changes[key] = float(text)
        except ValueError:
            raise ToolError(f"Cannot parse quota configuration value for {key}: "
                            f"{text}") from None
    return {**changes, **dict.fromkeys(deletions)}


async def alter_quotas(client: WireClient, entity: QuotaEntity,
                       changes: Mapping[str, float | None]) -> None:
    response = await client.send(ALTER_CLIENT_QUOTAS, {"validate_only": False, "entries": [{
        "entity": [{"entity_type": QUOTA_TYPES[kind], "entity_name": name or None}
                   for kind, name in entity.parts],
        "ops": [{"key": key, "value": value or 0.0, "remove": value is None}
                for key, value in changes.items()]}]})
    for entry in response.entries:
        check(entry.error_code, f"altering the quotas of {entity}", entry.error_message)


def completed_line(entity: QuotaEntity) -> str:
    """kafka-configs names only the first entity type."""
    kind, name = entity.parts[0]
    if not name:
        return f"Completed updating default config for {kind} in the cluster."
    return f"Completed updating config for {kind[:-1]} {name}."
