"""The brokers' init container (python -m odradek.image.kubernetes_node) against a stand-in API
server over TLS: it authenticates with the service account's token, trusts only the
account's CA, and writes the rack and node address files; errors are one line and exit 1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.image import kubernetes_node
from tests.helm.fake_api import FakeApiServer, self_signed

pytestmark = pytest.mark.helm

NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-2", "labels": {"topology.kubernetes.io/zone": "zone-c"}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.12"}]}}


@pytest.fixture
def account(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    cert, key = self_signed(tmp_path, ["127.0.0.1"])
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "ca.crt").write_bytes(cert.read_bytes())
    (directory / "token").write_text("the-token\n")
    with FakeApiServer(tls=(cert, key)) as api:
        api.store(NODE)
        yield directory, api.port
        assert {auth for _, auth in api.requests} <= {"Bearer the-token"}


def run(account: tuple[Path, int], output: Path, node: str = "worker-2") -> int:
    directory, port = account
    return kubernetes_node.main(["--output", str(output), "--service-account", str(directory)],
                                env(port, node))


def env(port: int, node: str) -> dict[str, str]:
    return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port),
            "NODE_NAME": node}


def test_writes_the_rack_and_address_of_its_node(account: tuple[Path, int],
                                                 tmp_path: Path) -> None:
    assert run(account, tmp_path) == 0
    assert (tmp_path / "rack").read_text() == "zone-c"
    assert (tmp_path / "node-address").read_text() == "10.0.0.12"


def test_an_unknown_node_is_a_one_line_error(account: tuple[Path, int], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(account, tmp_path, "gone") == 1
    assert capsys.readouterr().err == "kubernetes_node: GET node gone: 404 Not Found\n"
    assert not (tmp_path / "rack").exists()


def test_a_server_outside_the_accounts_ca_is_refused(account: tuple[Path, int],
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "other").mkdir()
    other, _ = self_signed(tmp_path / "other", ["127.0.0.1"])
    (account[0] / "ca.crt").write_bytes(other.read_bytes())
    assert run(account, tmp_path) == 1
    assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().err
