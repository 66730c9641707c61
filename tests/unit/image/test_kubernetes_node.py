"""odradek.image.kubernetes_node's reading of a Node: the rack from its zone label and the address
a NodePort client reaches it on, in Strimzi's order of preference."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.image.kubernetes_node import ADDRESS_PREFERENCE, api_server, node_facts


def node(labels: dict[str, str], addresses: list[tuple[str, str]]) -> dict[str, Any]:
    return {"metadata": {"labels": labels},
            "status": {"addresses": [{"type": t, "address": a} for t, a in addresses]}}


def test_the_zone_label_is_the_rack_and_the_external_ip_the_address() -> None:
    facts = node_facts(node({"topology.kubernetes.io/zone": "eu-west-1b"},
                            [("InternalIP", "10.0.0.4"), ("ExternalIP", "203.0.113.9"),
                             ("Hostname", "ip-10-0-0-4")]))
    assert facts == ("eu-west-1b", "203.0.113.9")


def test_another_label_and_no_addresses() -> None:
    assert node_facts(node({"rack": "r7"}, []), zone_label="rack") == ("r7", "")
    assert node_facts({}) == ("", "")


@given(st.lists(st.sampled_from(ADDRESS_PREFERENCE), unique=True, min_size=1))
def test_the_most_preferred_address_type_wins(types: list[str]) -> None:
    _, address = node_facts(node({}, [(t, f"addr-{t}") for t in types]))
    best = min(types, key=ADDRESS_PREFERENCE.index)
    assert address == f"addr-{best}"


def test_the_api_server_is_found_as_client_go_finds_it() -> None:
    assert api_server({"KUBERNETES_SERVICE_HOST": "10.96.0.1",
                       "KUBERNETES_SERVICE_PORT": "443"}) == "https://10.96.0.1:443"
    assert api_server({"KUBERNETES_SERVICE_HOST": "fd00::1",
                       "KUBERNETES_SERVICE_PORT": "443"}) == "https://[fd00::1]:443"
    with pytest.raises(OSError, match="not running in a pod"):
        api_server({})

