"""Named listeners as in Kafka: `listeners`, `advertised.listeners`,
`listener.security.protocol.map`, `inter.broker.listener.name` and `controller.listener.names`,
parsed and checked together with Kafka's rules and wording (KafkaConfig.validateValues,
SocketServerConfigs.listenerListToEndPoints). Pure: resolving a wildcard advertised host to
this machine's name is the shell's job."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from odradek.config.kafka_configs import SECURITY_PROTOCOLS, BrokerConfig, InvalidConfigError

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
CONTROLLER_PROTOCOLS = frozenset({PLAINTEXT, SSL})
"""The security protocols the controllers' gRPC listener serves (no SASL on gRPC); the Kafka
listeners serve all four."""
WILDCARD = "0.0.0.0"

_URI = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")

Roles = frozenset[str]
BROKER: Roles = frozenset({"broker"})
CONTROLLER: Roles = frozenset({"controller"})
COMBINED: Roles = BROKER | CONTROLLER


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener's address: Kafka's BrokerEndpoint. An empty host binds every interface."""

    name: str
    host: str
    port: int
    security_protocol: str = PLAINTEXT

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Listeners:
    """A node's validated listeners."""

    bound: tuple[Endpoint, ...]
    """Every listener of `listeners`, controller listeners included, as bound."""
    advertised: tuple[Endpoint, ...]
    """The broker listeners as published to clients and other brokers."""
    inter_broker: str
    """The listener other brokers (replica fetchers, transaction markers) connect to; ""
    on a controller-only node."""
    controller_names: tuple[str, ...]
    controller_protocol: str = PLAINTEXT
    """The security protocol of the first listener in controller.listener.names: the one
    controllers serve gRPC on and that brokers and other controllers connect with."""

    @property
    def broker(self) -> tuple[Endpoint, ...]:
        """The listeners that speak the Kafka protocol (not the controllers' gRPC)."""
        return tuple(e for e in self.bound if e.name not in self.controller_names)

    @property
    def controller(self) -> Endpoint | None:
        """The first listener named in controller.listener.names, which the controller
        serves gRPC on."""
        named = {e.name: e for e in self.bound}
        return next((named[n] for n in self.controller_names if n in named), None)


def normalised(name: str) -> str:
    """Kafka's ListenerName.normalised: upper case, never blank."""
    if not name.strip():
        raise InvalidConfigError("The provided listener name is null or empty string")
    return name.upper()


def parse_protocol_map(text: str) -> dict[str, str]:
    """listener.security.protocol.map (`NAME:PROTOCOL,...`) as {NAME: PROTOCOL}."""
    mapping: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, colon, protocol = entry.rpartition(":")
        if not colon:
            raise InvalidConfigError("Error parsing configuration property "
                                     f"'listener.security.protocol.map': {entry!r} is not "
                                     "NAME:PROTOCOL")
        mapping[normalised(name.strip())] = _protocol(protocol.strip(),
                                                      "listener.security.protocol.map")
    return mapping


def _protocol(name: str, config_name: str) -> str:
    if name not in SECURITY_PROTOCOLS:
        raise InvalidConfigError(f"Invalid security protocol `{name}` defined in {config_name}")
    return name


def parse_endpoints(entries: Sequence[str], protocols: Mapping[str, str],
                    require_distinct_ports: bool = True) -> list[Endpoint]:
    """Kafka's listenerListToEndPoints: `NAME://host:port` entries, each name in
    `protocols`, names unique and (with `require_distinct_ports`) ports too, except port 0
    and one IPv4 with one IPv6 address on the same port."""
    text = ",".join(entries)
    endpoints = []
    for entry in entries:
        match = _URI.match(entry)
        if match is None:
            raise InvalidConfigError(f"Error creating broker listeners from '{text}': "
                                     f"Unable to parse {entry} to a broker endpoint")
        name = normalised(match.group(1))
        protocol = protocols.get(name)
        if protocol is None:
            raise InvalidConfigError(f"Error creating broker listeners from '{text}': "
                                     f"No security protocol defined for listener {name}")
        endpoints.append(Endpoint(name, match.group(2), int(match.group(3)), protocol))
    if len({e.name for e in endpoints}) != len(endpoints):
        raise InvalidConfigError(f"Each listener must have a different name, listeners: {text}")
    if require_distinct_ports:
        _check_distinct_ports(endpoints, text)
    return endpoints


def _check_distinct_ports(endpoints: list[Endpoint], text: str) -> None:
    counts = Counter(e.port for e in endpoints if e.port != 0)
    for port in (p for p, count in counts.items() if count > 1):
        sharing = [e for e in endpoints if e.port == port]
        versions = sorted(_ip_version(e.host) for e in sharing)
        if len(sharing) != 2 or versions != [4, 6]:
            raise InvalidConfigError(
                f"Each listener must have a different port, listeners: {text}" if 0 in versions
                else "If you have two listeners on the same port then one needs to be IPv4 "
                f"and the other IPv6, listeners: {text}, port: {port}")


def _ip_version(host: str) -> int:
    """4 or 6 for an IP address, 0 for a host name or the empty (wildcard) host."""
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return 0


def effective_protocol_map(config: BrokerConfig) -> dict[str, str]:
    """listener.security.protocol.map, plus, as in KRaft when the map is left at its default
    and no listener is SSL or SASL_*, PLAINTEXT for every controller listener name."""
    mapping = parse_protocol_map(config.text("listener.security.protocol.map"))
    if "listener.security.protocol.map" in config.static_raw:
        return mapping
    controller_names = [normalised(n) for n in _strings(config, "controller.listener.names")]
    listener_names = [_uri_name(u) for u in _strings(config, "listeners")]
    secured = set(SECURITY_PROTOCOLS) - {PLAINTEXT}
    if any(name in secured for name in (*controller_names, *listener_names)):
        return mapping
    return {**mapping, **{name: PLAINTEXT for name in controller_names}}


def _uri_name(uri: str) -> str:
    return uri.partition("://")[0].upper() if "://" in uri else ""


def _strings(config: BrokerConfig, name: str) -> list[str]:
    value = config[name]
    assert value is None or isinstance(value, list)
    return list(value or [])


def resolve(config: BrokerConfig, roles: Roles, voters_configured: bool = True) -> Listeners:
    """The node's listeners, checked as Kafka checks them for a node of these roles. A
    combined node without controller.quorum.voters (`odradek dev`) may leave out the
    controller listener: its one controller then listens on an ephemeral loopback port."""
    protocols = effective_protocol_map(config)
    controller_names = tuple(normalised(n) for n in _strings(config, "controller.listener.names"))
    bound = parse_endpoints(_strings(config, "listeners"), protocols)
    advertised_raw = config["advertised.listeners"]
    names = {e.name for e in bound}
    advertised = _advertised(bound, advertised_raw, protocols)
    if roles == BROKER:
        _check_broker_only(controller_names, names, protocols)
    elif roles == CONTROLLER and any(e.name not in controller_names for e in bound):
        raise InvalidConfigError("The listeners config must only contain KRaft controller "
                                 "listeners from controller.listener.names when "
                                 "process.roles=controller")
    if "controller" in roles and (voters_configured or "broker" not in roles):
        _check_controller(controller_names, names)
    broker_advertised = tuple(e for e in advertised if e.name not in controller_names)
    inter_broker = ""
    if "broker" in roles:
        inter_broker = _inter_broker_name(config, protocols)
        _check_broker(broker_advertised, inter_broker, names)
    _check_supported(bound, controller_names)
    controller_protocol = protocols.get(controller_names[0], PLAINTEXT) if controller_names \
        else PLAINTEXT
    _check_controller_protocol(controller_names[0] if controller_names else "",
                               controller_protocol)
    return Listeners(tuple(bound), broker_advertised, inter_broker, controller_names,
                     controller_protocol)


def _advertised(bound: list[Endpoint], raw: object, protocols: Mapping[str, str]
                ) -> list[Endpoint]:
    """advertised.listeners, each listener it leaves out advertised as it is bound."""
    assert raw is None or isinstance(raw, list)
    given = parse_endpoints(raw or [], protocols, require_distinct_ports=False)
    named = {e.name for e in given}
    advertised = [*given, *(e for e in bound if e.name not in named)]
    if any(e.host == WILDCARD for e in advertised):
        raise InvalidConfigError("advertised.listeners cannot use the nonroutable meta-address "
                                 "0.0.0.0. Use a routable IP address.")
    return advertised


def _check_broker_only(controller_names: tuple[str, ...], names: set[str],
                       protocols: Mapping[str, str]) -> None:
    if not controller_names:
        raise InvalidConfigError("controller.listener.names must contain at least one value "
                                 "when running KRaft with just the broker role")
    if names & set(controller_names):
        raise InvalidConfigError("controller.listener.names must not contain a value appearing "
                                 "in the 'listeners' configuration when running KRaft with "
                                 "just the broker role")
    for name in controller_names:
        if name not in protocols:
            raise InvalidConfigError(
                f"Controller listener with name {name} defined in controller.listener.names "
                "not found in listener.security.protocol.map  (an explicit security mapping "
                "for each controller listener is required if listener.security.protocol.map "
                "is non-empty, or if there are security protocols other than PLAINTEXT in use)")


def _check_controller(controller_names: tuple[str, ...], names: set[str]) -> None:
    if not names & set(controller_names):
        raise InvalidConfigError("controller.listener.names must contain at least one value "
                                 "appearing in the 'listeners' configuration when running the "
                                 "KRaft controller role")
    if not set(controller_names) <= names:
        raise InvalidConfigError("controller.listener.names must only contain values appearing "
                                 "in the 'listeners' configuration when running the KRaft "
                                 "controller role")


def inter_broker_listener(config: BrokerConfig) -> tuple[str, str]:
    """(name, security protocol) of the listener brokers reach each other on, from
    inter.broker.listener.name or security.inter.broker.protocol: a controller reads it too,
    to reach the brokers as they reach each other."""
    protocols = effective_protocol_map(config)
    name = _inter_broker_name(config, protocols)
    return name, protocols.get(name, name)


def _inter_broker_name(config: BrokerConfig, protocols: Mapping[str, str]) -> str:
    name = config["inter.broker.listener.name"]
    if name is None:
        return _protocol(config.text("security.inter.broker.protocol"),
                         "security.inter.broker.protocol")
    if "security.inter.broker.protocol" in config.static_raw:
        raise InvalidConfigError("Only one of inter.broker.listener.name and "
                                 "security.inter.broker.protocol should be set.")
    assert isinstance(name, str)
    listener = normalised(name)
    if listener not in protocols:
        raise InvalidConfigError(f"Listener with name {listener} defined in "
                                 "inter.broker.listener.name not found in "
                                 "listener.security.protocol.map.")
    return listener


def _check_broker(advertised: tuple[Endpoint, ...], inter_broker: str, names: set[str]) -> None:
    found = [e.name for e in advertised]
    if not found:
        raise InvalidConfigError("There must be at least one broker advertised listener. "
                                 "Perhaps all listeners appear in controller.listener.names?")
    if inter_broker not in found:
        raise InvalidConfigError("inter.broker.listener.name must be a listener name defined "
                                 "in advertised.listeners. The valid options based on "
                                 f"currently configured listeners are {','.join(found)}")
    if not set(found) <= names:
        raise InvalidConfigError("advertised.listeners listener names must be equal to or a "
                                 "subset of the ones defined in listeners. Found "
                                 f"{','.join(found)}. The valid options based on the current "
                                 f"configuration are {','.join(sorted(names))}")


def _check_supported(bound: list[Endpoint], controller_names: tuple[str, ...]) -> None:
    for endpoint in bound:
        if endpoint.name in controller_names:
            _check_controller_protocol(endpoint.name, endpoint.security_protocol)


def _check_controller_protocol(name: str, protocol: str) -> None:
    if protocol not in CONTROLLER_PROTOCOLS:
        raise InvalidConfigError(
            f"controller listener {name} uses security protocol {protocol}, which the "
            f"controllers' gRPC does not serve: map it to "
            f"{' or '.join(sorted(CONTROLLER_PROTOCOLS, reverse=True))} in "
            "listener.security.protocol.map")


def with_bound_ports(endpoints: Sequence[Endpoint], ports: Mapping[str, int]
                     ) -> tuple[Endpoint, ...]:
    """Kafka's withEphemeralPortsCorrected: an advertised port 0 becomes the port its
    listener was given."""
    return tuple(replace(e, port=ports.get(e.name, 0)) if e.port == 0 else e
                 for e in endpoints)
