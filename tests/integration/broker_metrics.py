"""A process's Prometheus endpoint, read as labelled samples."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.broker_process import BrokerProcess

SCRAPE_TIMEOUT = 15.0
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(broker: BrokerProcess) -> Samples:
    return scrape_port(broker.metrics_port)


def scrape_port(port: int) -> Samples:
    """Every sample a process's /metrics serves, by name and labels."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    assert key in samples, f"no sample {name}{labels}"
    return samples[key]


def increase(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return sample(after, name, **labels) - before.get((name, frozenset(labels.items())), 0.0)
