"""Named listeners: parsing, defaults and every start-up check, with Kafka's wording."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.config.listeners import (
    BROKER,
    COMBINED,
    CONTROLLER,
    Endpoint,
    Listeners,
    Roles,
    parse_endpoints,
    parse_protocol_map,
    resolve,
    with_bound_ports,
)
from odradek.metadata.controller import QuorumController
from odradek.metadata.errors import MetadataError
from odradek.metadata.records import RegisterBrokerRecord, decode_batch, encode_batch

NAMED = {
    "listeners": "INTERNAL://:9092,EXTERNAL://127.0.0.2:19092",
    "advertised.listeners": "INTERNAL://broker-1:9092,EXTERNAL://localhost:19092",
    "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
}


def listeners(raw: dict[str, str], roles: Roles = BROKER, voters: bool = True) -> Listeners:
    return resolve(BrokerConfig(raw), roles, voters)


def refused(raw: dict[str, str], roles: Roles = BROKER, voters: bool = True) -> str:
    with pytest.raises(InvalidConfigError) as failure:
        listeners(raw, roles, voters)
    message = str(failure.value)
    assert "\n" not in message
    return message


def test_named_listeners_bind_and_advertise_each_their_own() -> None:
    result = listeners(NAMED)
    assert result.bound == (Endpoint("INTERNAL", "", 9092),
                            Endpoint("EXTERNAL", "127.0.0.2", 19092))
    assert result.advertised == (Endpoint("INTERNAL", "broker-1", 9092),
                                 Endpoint("EXTERNAL", "localhost", 19092))
    assert result.inter_broker == "INTERNAL"
    assert result.controller is None


def test_the_default_is_one_plaintext_listener_replicating_over_itself() -> None:
    result = listeners({}, COMBINED, voters=False)
    assert result.bound == result.advertised == (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)
    assert result.inter_broker == "PLAINTEXT"


def test_a_listener_left_out_of_advertised_listeners_is_advertised_as_bound() -> None:
    result = listeners({**NAMED, "advertised.listeners": "EXTERNAL://localhost:19092"})
    assert result.advertised == (Endpoint("EXTERNAL", "localhost", 19092),
                                 Endpoint("INTERNAL", "", 9092))


def test_names_are_upper_cased_and_ipv6_brackets_dropped() -> None:
    result = listeners({"listeners": "plaintext://[::1]:9092"})
    assert result.bound == (Endpoint("PLAINTEXT", "::1", 9092),)
    assert str(result.bound[0]) == "PLAINTEXT://[::1]:9092"


def test_controller_listener_names_map_to_plaintext_by_default() -> None:
    raw = {"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
           "controller.quorum.voters": "1@localhost:9093"}
    result = listeners(raw, COMBINED)
    assert result.controller == Endpoint("CONTROLLER", "", 9093)
    assert result.broker == (Endpoint("PLAINTEXT", "", 9092),)
    assert result.advertised == (Endpoint("PLAINTEXT", "", 9092),)


def test_a_controller_only_node_serves_its_controller_listener() -> None:
    result = listeners({"listeners": "CONTROLLER://127.0.0.1:9093"}, CONTROLLER)
    assert result.controller == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert result.inter_broker == ""


def test_brokers_and_controllers_reach_controllers_over_the_first_controller_listener() -> None:
    """Its protocol is the one controllers serve and the one brokers connect with."""
    protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL,OLD:PLAINTEXT"
    broker = listeners({"listeners": "PLAINTEXT://:9092", "listener.security.protocol.map":
                        protocols, "controller.listener.names": "CONTROLLER,OLD"})
    controller = listeners({"listeners": "CONTROLLER://127.0.0.1:9093",
                            "listener.security.protocol.map": protocols}, CONTROLLER)
    assert broker.controller_protocol == controller.controller_protocol == "SSL"
    assert controller.controller == Endpoint("CONTROLLER", "127.0.0.1", 9093, "SSL")
    assert listeners({"listeners": "PLAINTEXT://:9092"}).controller_protocol == "PLAINTEXT"


def test_inter_broker_listener_follows_security_inter_broker_protocol() -> None:
    raw = {"listeners": "PLAINTEXT://:9092,EXTERNAL://:9093",
           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT,"
                                             "CONTROLLER:PLAINTEXT"}
    assert listeners(raw).inter_broker == "PLAINTEXT"


def test_an_ephemeral_port_is_advertised_as_bound() -> None:
    endpoints = (Endpoint("A", "h", 0), Endpoint("B", "h", 9))
    assert with_bound_ports(endpoints, {"A": 4321, "B": 1}) == (Endpoint("A", "h", 4321),
                                                                Endpoint("B", "h", 9))


@pytest.mark.parametrize("changes, roles, message", [
    ({"listeners": "INTERNAL:9092"}, BROKER,
     "Error creating broker listeners from 'INTERNAL:9092': Unable to parse INTERNAL:9092 to a "
     "broker endpoint"),
    ({"listeners": "INTERNAL://:9092,OTHER://:9093"}, BROKER,
     "No security protocol defined for listener OTHER"),
    ({"listeners": "INTERNAL://:9092,internal://:9093"}, BROKER,
     "Each listener must have a different name, listeners: INTERNAL://:9092,internal://:9093"),
    ({"listeners": "INTERNAL://:9092,EXTERNAL://:9092"}, BROKER,
     "Each listener must have a different port, listeners: INTERNAL://:9092,EXTERNAL://:9092"),
    ({"listeners": "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.2:9092"}, BROKER,
     "If you have two listeners on the same port then one needs to be IPv4 and the other IPv6"),
    ({"listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:TLS"}, BROKER,
     "Invalid security protocol `TLS` defined in listener.security.protocol.map"),
    ({"listener.security.protocol.map": "INTERNAL"}, BROKER,
     "Error parsing configuration property 'listener.security.protocol.map'"),
    ({"advertised.listeners": "INTERNAL://0.0.0.0:9092"}, BROKER,
     "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP "
     "address."),
    ({"listeners": "INTERNAL://0.0.0.0:9092,EXTERNAL://:19092", "advertised.listeners": ""},
     BROKER, "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"),
    ({"advertised.listeners": "INTERNAL://h:9092,REPLICATION://h:9094",
      "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,"
                                        "REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"}, BROKER,
     "advertised.listeners listener names must be equal to or a subset of the ones defined in "
     "listeners. Found INTERNAL,REPLICATION,EXTERNAL. The valid options based on the current "
     "configuration are EXTERNAL,INTERNAL"),
    ({"inter.broker.listener.name": "REPLICATION"}, BROKER,
     "Listener with name REPLICATION defined in inter.broker.listener.name not found in "
     "listener.security.protocol.map."),
    ({"inter.broker.listener.name": "CONTROLLER"}, BROKER,
     "inter.broker.listener.name must be a listener name defined in advertised.listeners. The "
     "valid options based on currently configured listeners are INTERNAL,EXTERNAL"),
    ({"inter.broker.listener.name": None}, BROKER,
     "inter.broker.listener.name must be a listener name defined in advertised.listeners"),
    ({"security.inter.broker.protocol": "PLAINTEXT"}, BROKER,
     "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."),
    ({"listeners": "INTERNAL://:9092,EXTERNAL://:19092,CONTROLLER://:9093"}, BROKER,
     "controller.listener.names must not contain a value appearing in the 'listeners' "
     "configuration when running KRaft with just the broker role"),
    ({"controller.listener.names": ""}, BROKER,
     "controller.listener.names must contain at least one value when running KRaft with just "
     "the broker role"),
    ({"controller.listener.names": "INTERNAL,EXTERNAL"}, BROKER,
     "controller.listener.names must not contain a value appearing in the 'listeners'"),
    ({"controller.listener.names": "VOTERS"}, BROKER,
     "Controller listener with name VOTERS defined in controller.listener.names not found in "
     "listener.security.protocol.map"),
    ({"listeners": "INTERNAL://:9092,CONTROLLER://:9093"}, CONTROLLER,
     "The listeners config must only contain KRaft controller listeners from "
     "controller.listener.names when process.roles=controller"),
    ({"listeners": "INTERNAL://:9092"}, COMBINED,
     "controller.listener.names must contain at least one value appearing in the 'listeners' "
     "configuration when running the KRaft controller role"),
    ({"listeners": "INTERNAL://:9092,CONTROLLER://:9093",
      "controller.listener.names": "CONTROLLER,VOTERS", "advertised.listeners": None,
      "listener.security.protocol.map": "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                                        "VOTERS:PLAINTEXT"}, COMBINED,
     "controller.listener.names must only contain values appearing in the 'listeners' "
     "configuration when running the KRaft controller role"),
    ({"listeners": "CONTROLLER://:9093", "advertised.listeners": None,
      "inter.broker.listener.name": None}, COMBINED,
     "There must be at least one broker advertised listener. Perhaps all listeners appear in "
     "controller.listener.names?"),
    ({"listeners": "INTERNAL://:9092,CONTROLLER://:9093",
      "advertised.listeners": "INTERNAL://broker-1:9092",
      "listener.security.protocol.map": "INTERNAL:SSL,CONTROLLER:SASL_SSL"}, COMBINED,
     "controller listener CONTROLLER uses security protocol SASL_SSL, which the controllers' "
     "gRPC does not serve: map it to SSL or PLAINTEXT in listener.security.protocol.map"),
    ({"listeners": "INTERNAL://:9092", "advertised.listeners": None,
      "listener.security.protocol.map": "INTERNAL:SSL,CONTROLLER:SASL_PLAINTEXT"}, BROKER,
     "controller listener CONTROLLER uses security protocol SASL_PLAINTEXT, which the "
     "controllers' gRPC does not serve: map it to SSL or PLAINTEXT"),
    ({"listeners": "SSL://:9092", "advertised.listeners": None,
      "listener.security.protocol.map": None, "inter.broker.listener.name": "SSL"}, BROKER,
     "Controller listener with name CONTROLLER defined in controller.listener.names not found "
     "in listener.security.protocol.map"),
])
def test_each_misconfiguration_is_refused_in_one_line(
    changes: dict[str, str | None], roles: Roles, message: str
) -> None:
    raw = {"controller.quorum.voters": "1@localhost:9093", **NAMED}
    for name, value in changes.items():
        if value is None:
            raw.pop(name, None)
        else:
            raw[name] = value
    assert message in refused(raw, roles)


def test_odradek_dev_may_leave_the_controller_listener_out() -> None:
    """Without controller.quorum.voters the one controller listens on an ephemeral loopback
    port; with voters, a combined node needs its controller listener, as in Kafka."""
    raw = {"listeners": "PLAINTEXT://127.0.0.1:9092"}
    assert listeners(raw, COMBINED, voters=False).controller is None
    assert "controller.listener.names must contain" in refused(raw, COMBINED, voters=True)


def test_protocol_map_entries_split_at_the_last_colon() -> None:
    assert parse_protocol_map(" internal : PLAINTEXT , EXTERNAL:SSL,") == {
        "INTERNAL": "PLAINTEXT", "EXTERNAL": "SSL"}


def test_an_explicit_protocol_map_must_name_the_controller_listener() -> None:
    raw = {"listeners": "CONTROLLER://:9093",
           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}
    assert "No security protocol defined for listener CONTROLLER" in refused(raw, CONTROLLER)


def test_an_ipv4_and_an_ipv6_listener_may_share_a_port() -> None:
    endpoints = parse_endpoints(["A://127.0.0.1:9092", "B://[::1]:9092"],
                                {"A": "PLAINTEXT", "B": "PLAINTEXT"})
    assert [e.port for e in endpoints] == [9092, 9092]


@given(st.lists(st.tuples(st.from_regex(r"[A-Z][A-Z_]{0,8}", fullmatch=True),
                          st.sampled_from(["", "localhost", "10.0.0.1", "::1"]),
                          st.integers(0, 65535)), max_size=4))
def test_registrations_round_trip_through_the_metadata_log(
    endpoints: list[tuple[str, str, int]]
) -> None:
    record = RegisterBrokerRecord(3, "inc", 7, tuple(Endpoint(*e) for e in endpoints), "r1")
    assert decode_batch(encode_batch([record])) == [record]


def test_a_registration_from_before_named_listeners_loads_as_one_plaintext_endpoint() -> None:
    legacy = (b'[{"type":"RegisterBrokerRecord","broker_id":1,"incarnation_id":"i",'
              b'"broker_epoch":4,"host":"h","port":9092,"rack":null,"fenced":false}]')
    assert decode_batch(legacy) == [
        RegisterBrokerRecord(1, "i", 4, (Endpoint("PLAINTEXT", "h", 9092),), None, False)]


@pytest.mark.parametrize("endpoints", [(), (Endpoint("A", "h", 1), Endpoint("A", "h", 2))])
def test_the_controller_refuses_a_registration_without_one_endpoint_per_listener(
    endpoints: tuple[Endpoint, ...]
) -> None:
    with pytest.raises(MetadataError) as failure:
        QuorumController().register_broker(1, "inc", endpoints, None, 0)
    assert failure.value.error_code == ErrorCode.invalid_request
