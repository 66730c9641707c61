"""A node's identity in the chart's StatefulSets (odradek/image/pod.py): its id from the pod's
ordinal, a broker's advertised listeners and rack, and a one-line error for a pod the chart
could not have made."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.config.kafka_configs import InvalidConfigError
from odradek.image import entrypoint
from odradek.image.pod import ordinal, pod_variables

BROKER = {"POD_NAME": "east-odradek-broker-2", "POD_NAMESPACE": "kafka", "NODE_ID_BASE": "0",
          "ODRADEK_PROCESS_ROLES": "broker", "HEADLESS_SERVICE": "east-odradek-broker-headless",
          "CLUSTER_DOMAIN": "cluster.local", "INTERNAL_PORT": "9092"}
HOST = "east-odradek-broker-2.east-odradek-broker-headless.kafka.svc.cluster.local"


@pytest.fixture
def node_info(tmp_path: Path) -> Path:
    (tmp_path / "rack").write_text("zone-b\n")
    (tmp_path / "node-address").write_text("203.0.113.7")
    return tmp_path


def test_outside_the_chart_nothing_is_added(node_info: Path) -> None:
    assert pod_variables({"POD_NAME": "x-1", "ODRADEK_NODE_ID": "5"}, node_info) == {}


@pytest.mark.parametrize(("name", "index"), [("east-odradek-controller-0", 0),
                                             ("a-b-12", 12)])
def test_the_ordinal_is_the_pod_name_s_suffix(name: str, index: int) -> None:
    assert ordinal(name) == index


def test_a_controller_gets_its_id_only(node_info: Path) -> None:
    env = {"POD_NAME": "east-odradek-controller-1", "NODE_ID_BASE": "1000",
           "ODRADEK_PROCESS_ROLES": "controller"}
    assert pod_variables(env, node_info) == {"ODRADEK_NODE_ID": "1001"}


def test_a_broker_advertises_its_stable_name_and_its_rack(node_info: Path) -> None:
    assert pod_variables(BROKER, node_info) == {
        "ODRADEK_NODE_ID": "2", "ODRADEK_ADVERTISED_LISTENERS": f"INTERNAL://{HOST}:9092",
        "ODRADEK_BROKER_RACK": "zone-b"}


def test_a_combined_node_is_a_broker(node_info: Path) -> None:
    env = {**BROKER, "ODRADEK_PROCESS_ROLES": "broker,controller"}
    assert "ODRADEK_ADVERTISED_LISTENERS" in pod_variables(env, node_info)


def test_no_rack_file_means_no_rack(tmp_path: Path) -> None:
    assert "ODRADEK_BROKER_RACK" not in pod_variables(BROKER, tmp_path)


def test_node_ports_step_by_ordinal_on_the_node_s_address(node_info: Path) -> None:
    env = {**BROKER, "REPLICATION_PORT": "9091", "EXTERNAL_PORT": "31000",
           "EXTERNAL_PORT_STEP": "1"}
    assert pod_variables(env, node_info)["ODRADEK_ADVERTISED_LISTENERS"] == (
        f"INTERNAL://{HOST}:9092,REPLICATION://{HOST}:9091,EXTERNAL://203.0.113.7:31002")


def test_load_balancers_give_each_broker_its_host(node_info: Path) -> None:
    env = {**BROKER, "EXTERNAL_PORT": "9094", "EXTERNAL_PORT_STEP": "0",
           "EXTERNAL_HOSTS": "b0.example.com b1.example.com b2.example.com"}
    assert pod_variables(env, node_info)["ODRADEK_ADVERTISED_LISTENERS"].endswith(
        ",EXTERNAL://b2.example.com:9094")


@pytest.mark.parametrize(("change", "message"), [
    ({"EXTERNAL_PORT": "9094", "EXTERNAL_HOSTS": "b0 b1"}, "no external host for broker 2"),
    ({"POD_NAME": "east-odradek-broker"}, "does not end in a pod ordinal"),
    ({"HEADLESS_SERVICE": ""}, "HEADLESS_SERVICE is required"),
])
def test_a_pod_the_chart_could_not_make_is_a_one_line_error(
        node_info: Path, change: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        pod_variables({**BROKER, **change}, node_info)


def test_no_node_address_and_no_hosts_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="neither EXTERNAL_HOSTS nor"):
        pod_variables({**BROKER, "EXTERNAL_PORT": "31000"}, tmp_path)


def test_the_entrypoint_reports_it_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    env = {**BROKER, "POD_NAME": "no-ordinal", "ODRADEK_CLUSTER_ID": "x" * 22}
    assert entrypoint.main(["run"], env) == 2
    assert "does not end in a pod ordinal" in capsys.readouterr().err
