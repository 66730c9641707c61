"""`odradek cluster up --base-port 0` picks free ports, then its nodes bind them: another
process may bind one in between. The cluster then starts again on other ports."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.cluster import cli, layout
from odradek.cli.main import main
from tests.integration.cluster import Cluster, broker_ids


def test_up_starts_again_on_other_ports_when_a_picked_port_is_bound_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    holder = socket.socket()  # binds like another test's broker, without SO_REUSEPORT
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    stolen = holder.getsockname()[1]
    ports = _controller_gets(stolen)
    monkeypatch.setattr(layout, "free_port", lambda: next(ports))
    monkeypatch.setattr(cli, "port_taken", lambda port: False)  # the race: free when checked
    cluster = Cluster(tmp_path, controllers=1, brokers=1)
    try:
        assert main(["cluster", "up", "--controllers", "1", "--brokers", "1",
                     "--base-port", "0", "--data-dir", str(tmp_path)]) == 0
        err = capsys.readouterr().err
        assert "another process bound a free port first" in err
        nodes = layout.read_layout(tmp_path).nodes
        assert stolen not in [p for n in nodes for p in (n.port, n.metrics_port)]
        assert broker_ids(layout.read_layout(tmp_path).bootstrap) == {1}
    finally:
        cluster.cli("down", check=False)
        holder.close()


def _controller_gets(port: int) -> Iterator[int]:
    """Free ports, but `port` second: the controller's of a 1-broker, 1-controller plan."""
    yield _real_free_port()
    yield port
    while True:
        yield _real_free_port()


_real_free_port = layout.free_port
