"""A stand-in for `odradek mirror` in the data-path tests: runs `FlowReplicator` for every
flow of an MM2 properties file over topics the test created on both clusters (the topic
sync is the service's), serves metrics, and stops on SIGTERM.

    python -m tests.integration.mirror_runner CONFIG TOPIC=PARTITIONS... [--metrics-port N]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal

from prometheus_client import CollectorRegistry, start_http_server

from odradek.mirror.config import parse_mirror_config
from odradek.mirror.replicator import FlowReplicator


def read_properties(path: str) -> dict[str, str]:
    properties = {}
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                properties[key.strip()] = value.strip()
    return properties


async def main(args: argparse.Namespace) -> None:
    registry = CollectorRegistry()
    if args.metrics_port:
        start_http_server(args.metrics_port, registry=registry)
    config = parse_mirror_config(read_properties(args.config))
    topics = {name: int(count) for name, count in (item.split("=") for item in args.topics)}
    replicators = [FlowReplicator(flow, config, registry) for flow in config.flows]
    for replicator in replicators:
        await replicator.start()
        replicator.set_topics(topics)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    await stopping.wait()
    for replicator in replicators:
        await replicator.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("topics", nargs="*")
    parser.add_argument("--metrics-port", type=int, default=0)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    asyncio.run(main(parser.parse_args()))
