"""`odradek cluster`'s layout (ids, ports, configs, cluster.json) and its process checks."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from odradek.cli.cluster.layout import plan, properties, read_layout, voters, write_layout
from odradek.cli.cluster.processes import alive, start_time
from odradek.cli.main import _imports_done, build_parser, node_config
from odradek.config.kafka_configs import BrokerConfig, load_properties
from tests.waiting import wait_until


def test_brokers_then_controllers_then_metrics_take_consecutive_ports(tmp_path: Path) -> None:
    layout = plan(tmp_path, controllers=3, brokers=2, base_port=9092, cluster_id="c")
    assert [(n.name, n.role, n.id, n.port, n.metrics_port) for n in layout.nodes] == [
        ("broker-1", "broker", 1, 9092, 9097),
        ("broker-2", "broker", 2, 9093, 9098),
        ("controller-1", "controller", 1001, 9094, 9099),
        ("controller-2", "controller", 1002, 9095, 9100),
        ("controller-3", "controller", 1003, 9096, 9101),
    ]
    assert layout.bootstrap == "127.0.0.1:9092,127.0.0.1:9093"
    assert voters(layout) == "1001@127.0.0.1:9094,1002@127.0.0.1:9095,1003@127.0.0.1:9096"


def test_every_node_gets_a_valid_config_with_overrides_last(tmp_path: Path) -> None:
    layout = plan(tmp_path, controllers=1, brokers=1, base_port=0, cluster_id="abc")
    for node in layout.nodes:
        path = tmp_path / f"{node.name}.properties"
        path.write_text(properties(layout, node, {"broker.session.timeout.ms": "3000"}))
        config = BrokerConfig(load_properties(path))
        assert config["process.roles"] == [node.role]
        assert config.integer("node.id") == node.id
        assert config["cluster.id"] == "abc"
        assert config.integer("broker.session.timeout.ms") == 3000
        listener = "CONTROLLER" if node.role == "controller" else "PLAINTEXT"
        assert config["listeners"] == [f"{listener}://127.0.0.1:{node.port}"]
    ports = [p for n in layout.nodes for p in (n.port, n.metrics_port)]
    assert len(set(ports)) == len(ports)


def test_brokers_get_a_port_per_listener_and_name_them_in_the_protocol_map(
    tmp_path: Path
) -> None:
    layout = plan(tmp_path, controllers=1, brokers=2, base_port=9092, cluster_id="c",
                  listeners=["EXTERNAL", "INTERNAL"])
    assert [(n.name, n.port, n.listeners) for n in layout.nodes] == [
        ("broker-1", 9092, {"EXTERNAL": 9092, "INTERNAL": 9098}),
        ("broker-2", 9093, {"EXTERNAL": 9093, "INTERNAL": 9099}),
        ("controller-1", 9094, {"CONTROLLER": 9094}),
    ]
    assert layout.bootstrap == "127.0.0.1:9092,127.0.0.1:9093"
    broker = BrokerConfig(load_properties_text(properties(layout, layout.nodes[0], {})))
    assert broker["listeners"] == ["EXTERNAL://127.0.0.1:9092", "INTERNAL://127.0.0.1:9098"]
    assert broker["listener.security.protocol.map"] == (
        "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT")


def test_racks_go_to_brokers_in_turn_and_never_to_controllers(tmp_path: Path) -> None:
    layout = plan(tmp_path, controllers=1, brokers=3, base_port=9092, cluster_id="c")
    racks = {n.name: BrokerConfig(load_properties_text(
        properties(layout, n, {}, racks=["east", "west"])))["broker.rack"] for n in layout.nodes}
    assert racks == {"broker-1": "east", "broker-2": "west", "broker-3": "east",
                     "controller-1": None}


def test_cluster_json_round_trips(tmp_path: Path) -> None:
    layout = plan(tmp_path, controllers=3, brokers=3, base_port=9092, cluster_id="c")
    layout.nodes[0].pid = 1234
    write_layout(tmp_path, layout)
    assert read_layout(tmp_path) == layout
    assert not list(tmp_path.glob("*.tmp"))


def test_unknown_node_names_list_the_known_ones(tmp_path: Path) -> None:
    layout = plan(tmp_path, controllers=1, brokers=1, base_port=9092, cluster_id="c")
    with pytest.raises(KeyError, match="broker-1, controller-1"):
        layout.node("broker-9")


def test_alive_follows_the_process_through_stop_zombie_and_reuse(tmp_path: Path) -> None:
    layout = plan(tmp_path, controllers=1, brokers=1, base_port=9092, cluster_id="c")
    node = layout.nodes[0]
    process = subprocess.Popen(["sleep", "30"])
    node.pid, node.start_time = process.pid, start_time(process.pid)
    try:
        assert alive(node)
        process.send_signal(signal.SIGSTOP)
        assert alive(node)  # paused is alive
        node.start_time += 1
        assert not alive(node)  # a recycled pid is not our node
        node.start_time -= 1
        process.send_signal(signal.SIGKILL)
        wait_until(lambda: not alive(node), 5, "a zombie (not yet reaped) is dead", interval=0.01)
    finally:
        process.kill()
        process.wait()
    assert not alive(node)


def test_the_verbs_parse() -> None:
    parser = build_parser()
    up = parser.parse_args(["cluster", "up", "--data-dir", "d", "--controllers", "1",
                            "--brokers", "2", "--override", "a=b"])
    assert (up.controllers, up.brokers, up.override, up.base_port) == (1, 2, [("a", "b")], 9092)
    stop = parser.parse_args(["cluster", "stop", "broker-2", "--kill", "--data-dir", "d"])
    assert (stop.verb, stop.node, stop.kill) == ("stop", "broker-2", True)
    with pytest.raises(SystemExit):
        parser.parse_args(["cluster", "explode", "--data-dir", "d"])


def test_offsets_replication_follows_kafkas_default_capped_at_the_broker_count(
    tmp_path: Path,
) -> None:
    for brokers, expected in ((1, 1), (2, 2), (5, 3)):
        layout = plan(tmp_path, controllers=1, brokers=brokers, base_port=0, cluster_id="c")
        config = BrokerConfig(load_properties_text(properties(layout, layout.nodes[0], {})))
        assert config.integer("offsets.topic.replication.factor") == expected
    assert BrokerConfig({}).integer("offsets.topic.replication.factor") == 3


def load_properties_text(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_dev_defaults_to_one_offsets_replica_and_a_broker_to_kafkas_three() -> None:
    def config(*argv: str) -> BrokerConfig:
        return node_config(build_parser().parse_args(list(argv)))

    assert config("dev").integer("offsets.topic.replication.factor") == 1
    assert config("dev", "--override", "offsets.topic.replication.factor=2").integer(
        "offsets.topic.replication.factor") == 2
    assert config("broker").integer("offsets.topic.replication.factor") == 3


def test_listeners_named_after_a_protocol_use_it_as_in_kafkas_default_map(
    tmp_path: Path
) -> None:
    layout = plan(tmp_path, controllers=1, brokers=1, base_port=9092, cluster_id="c",
                  listeners=["PLAINTEXT", "SSL", "INTERNAL", "SASL_SSL"])
    broker = BrokerConfig(load_properties_text(properties(layout, layout.nodes[0], {})))
    assert broker["listener.security.protocol.map"] == (
        "PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT")
    plaintext = plan(tmp_path, controllers=1, brokers=1, base_port=9092, cluster_id="c")
    assert "listener.security.protocol.map" not in properties(plaintext, plaintext.nodes[0], {})


def test_a_node_command_parses_without_the_tools_modules() -> None:
    """Start-up time: `odradek dev`, `broker` and `controller` import no tool's module to
    parse their arguments (a fresh interpreter, as the command runs)."""
    probe = ("import sys; from odradek.cli.main import build_parser; "
             "args = build_parser('dev').parse_args(['dev', '--port', '1']); "
             "print(args.port, sorted(m for m in sys.modules if m.startswith(("
             "'odradek.cli.cluster', 'odradek.cli.tools.topics', 'odradek.mirror', "
             "'odradek.spark', 'odradek.cli.perf'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip().split(maxsplit=1)
    assert out == ["1", "[]"]
    assert {"topics", "mirror", "cluster"} <= set(build_parser().format_usage().replace(
        "{", ",").replace("}", ",").split(","))


def test_a_tool_command_imports_its_own_module_alone() -> None:
    """Start-up time: `odradek groups ...` parses with the groups tool's module, and no other
    tool's; every tool's command is in the full parser, which `--help` prints."""
    from odradek.cli.main import TOOLS

    probe = ("import sys; from odradek.cli.main import build_parser; "
             "args = build_parser('groups').parse_args(['groups', 'list', "
             "'--bootstrap-server', 'b:1']); "
             "print(args.command, sorted(m for m in sys.modules if m in ("
             + ", ".join(repr(module) for _, module, _ in TOOLS) + ")))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip().split(maxsplit=1)
    assert out == ["groups", "['odradek.cli.groups.cli']"]
    usage = set(build_parser().format_usage().replace("{", ",").replace("}", ",").split(","))
    assert {command for commands, _, _ in TOOLS for command in commands} <= usage


def test_a_node_imports_neither_the_tools_nor_a_kafka_client_library() -> None:
    """Start-up time: a broker and a controller (`odradek dev` runs both) import no tool,
    no Spark job, no mirror service and not librdkafka; the controller's audit exporter needs
    only the audit's topic and statuses and the mirror's partition reader."""
    probe = ("import sys; import odradek.cli.main, odradek.broker.app, odradek.controller.app; "
             "print(sorted(m for m in sys.modules if m.startswith(("
             "'odradek.cli.tools', 'odradek.cli.cluster', 'odradek.spark.', 'odradek.mirror.', "
             "'confluent_kafka', 'pyspark'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "['odradek.mirror.reader', 'odradek.spark.audit_contract']"


WITHOUT_HYPOTHESIS_PROBE = """
import sys
import odradek.cli.main as cli

def command():
    import odradek.broker.app, odradek.controller.app
    print(sorted(name for name, module in sys.modules.items()
                 if name.split(".")[0] == "hypothesis" and module is not None),
          "kio" in sys.modules)
    return 0

cli.main = command
from odradek.cli.__main__ import run
run()
"""


HEAP_PROBE = """
import gc, sys
import odradek.cli.main as cli

def runner(args, at_swap_point):
    importing = gc.isenabled()

    def node(config, prefer_uvloop):
        print(importing, gc.isenabled(), gc.get_freeze_count() > 0)
    return node

cli._runner = runner
sys.argv = ["odradek", "dev", "--data-dir", sys.argv[1]]
from odradek.cli.__main__ import run
run()
"""


def test_a_node_collects_garbage_but_never_scans_its_modules_again(tmp_path: Path) -> None:
    """The collector is off while the node's modules import and back on before it runs,
    with what they built frozen (a full collection of it stalled the event loop); a test
    calling `main` in its own process keeps its heap unfrozen."""
    done = subprocess.run([sys.executable, "-c", HEAP_PROBE, str(tmp_path)],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "False True True"), done.stderr
    frozen = gc.get_freeze_count()
    _imports_done()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_command_runs_without_hypothesis_where_it_is_installed() -> None:
    """Start-up time: kio imports Hypothesis, when it is installed (as here), to register
    its strategies; the command's process (`run`) blocks that import, so a node the tests
    start costs what it costs a user. The probe's command imports the broker and the
    controller, and so kio."""
    plain = subprocess.run([sys.executable, "-c",
                            "import sys, odradek.broker.app; print(*sys.modules)"],
                           capture_output=True, text=True, check=True)
    assert "hypothesis" in plain.stdout.split()  # what the block prevents
    done = subprocess.run([sys.executable, "-c", WITHOUT_HYPOTHESIS_PROBE],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "[] True"), done.stderr
