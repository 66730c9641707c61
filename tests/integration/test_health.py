"""GET /health on every node's metrics port, which the images' health checks and the
readiness probes ask: 200 once a broker is registered, caught up and unfenced, or once a
controller knows its quorum's leader; 503 with the reason otherwise."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.integration.cluster import Cluster, running_cluster
from tests.waiting import wait_until

CONTROLLERS = ["controller-1", "controller-2", "controller-3"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("health"), 3, 1, {}) as running:
        yield running


def health(cluster: Cluster, name: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{cluster.node(name)['metrics_port']}/health"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode().strip()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode().strip()


def test_a_serving_cluster_is_ready(cluster: Cluster) -> None:
    for name in ["broker-1", *CONTROLLERS]:
        assert health(cluster, name) == (200, "ready")


def test_a_controller_without_a_quorum_is_not_ready(cluster: Cluster) -> None:
    survivor, *others = CONTROLLERS
    for name in others:
        cluster.stop(name, kill=True)
    try:
        wait_until(lambda: health(cluster, survivor) == (503, "no quorum leader known"),
                   what=lambda: f"{survivor}: {health(cluster, survivor)}")
    finally:
        for name in others:
            cluster.start(name)
    wait_until(lambda: all(health(cluster, name)[0] == 200 for name in CONTROLLERS),
               what=lambda: str({name: health(cluster, name) for name in CONTROLLERS}),
               ignoring=OSError)
    assert health(cluster, "broker-1") == (200, "ready")
