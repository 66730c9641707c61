"""The cost of authorization with 10,000 ACLs: decisions of the StandardAuthorizer core (first
and remembered), and Produce requests against two real `odradek dev` brokers in the same run,
one without an authorizer and one with it and 10,000 ACLs, as a ratio.

Run `.venv/bin/python bench/acl_bench.py` (`--requests N`, `--acls N`)."""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from odradek.net.kafka_client import KafkaCluster  # noqa: E402
from odradek.protocol.codec import build_request  # noqa: E402
from odradek.protocol.record_codec import build_batch  # noqa: E402
from odradek.security.acls import (  # noqa: E402
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from odradek.security.authorizer import STANDARD_AUTHORIZER, StandardAuthorizer  # noqa: E402
from tests.integration.broker_process import BrokerProcess  # noqa: E402

PRINCIPAL = "User:ANONYMOUS"
TOPIC = "bench"


def acl_set(count: int, seed: int = 7) -> list[AclBinding]:
    """`count` ACLs over many principals: literal and prefixed topics, groups, wildcards;
    the benchmark's principal has WRITE on its topic among them."""
    rng = random.Random(seed)
    acls = [AclBinding(ResourceType.TOPIC, TOPIC, PatternType.LITERAL, PRINCIPAL, "*",
                       AclOperation.WRITE, AclPermissionType.ALLOW)]
    for i in range(count - 1):
        kind = rng.choice([ResourceType.TOPIC, ResourceType.TOPIC, ResourceType.GROUP])
        pattern = rng.choice([PatternType.LITERAL, PatternType.PREFIXED])
        name = f"team-{i % 97}.svc-{i}" if pattern == PatternType.LITERAL else f"team-{i % 97}."
        acls.append(AclBinding(kind, name, pattern, f"User:u{i % 500}", "*",
                               rng.choice([AclOperation.READ, AclOperation.WRITE]),
                               rng.choice([AclPermissionType.ALLOW, AclPermissionType.DENY])))
    return acls


def core_figures(acls: list[AclBinding]) -> dict[str, float]:
    """µs per decision: first (nothing remembered) and remembered."""
    names = [f"team-{i % 97}.svc-{i}" for i in range(20_000)]
    authorizer = StandardAuthorizer(acls, (), False)
    started = time.perf_counter()
    for name in names:
        authorizer.authorize(PRINCIPAL, "127.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, name)
    first = (time.perf_counter() - started) / len(names) * 1e6
    started = time.perf_counter()
    for _ in range(5):
        for name in names:
            authorizer.authorize(PRINCIPAL, "127.0.0.1", AclOperation.WRITE,
                                 ResourceType.TOPIC, name)
    remembered = (time.perf_counter() - started) / (5 * len(names)) * 1e6
    started = time.perf_counter()
    StandardAuthorizer(acls, (), False)
    index_ms = (time.perf_counter() - started) * 1000
    return {"first_us": first, "remembered_us": remembered, "index_build_ms": index_ms}


async def _produce_timings(bootstrap: str, requests: int, create_acls: list[AclBinding]
                           ) -> list[float]:
    host, port = bootstrap.rsplit(":", 1)
    async with KafkaCluster([(host, int(port))], "acl-bench", 30) as cluster:
        for start in range(0, len(create_acls), 1000):
            response = await cluster.send(build_request(30, 3, {"creations": [
                {"resource_type": a.resource_type, "resource_name": a.resource_name,
                 "resource_pattern_type": a.pattern_type, "principal": a.principal,
                 "host": a.host, "operation": a.operation, "permission_type": a.permission_type}
                for a in create_acls[start:start + 1000]]}))
            assert all(r.error_code == 0 for r in response.results), response
        await cluster.send(build_request(19, 7, {"topics": [
            {"name": TOPIC, "num_partitions": 1, "replication_factor": 1}], "timeout": 10000}))
        batch = build_batch([(None, b"x" * 100)], timestamp_ms=int(time.time() * 1000))
        produce = build_request(0, 9, {"acks": 1, "timeout": 5000, "topic_data": [
            {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
        timings = []
        for _ in range(requests):
            started = time.perf_counter()
            response = await cluster.send(produce)
            timings.append(time.perf_counter() - started)
            code = response.responses[0].partition_responses[0].error_code
            assert code == 0, code
        return timings


def produce_figures(requests: int, acls: list[AclBinding]) -> dict[str, float]:
    """Median µs per Produce request, without and with the authorizer, same run."""
    figures = {}
    with tempfile.TemporaryDirectory() as root:
        for label, overrides, created in (
                ("plain", {}, []),
                ("authorized", {"authorizer.class.name": STANDARD_AUTHORIZER,
                                "super.users": "User:admin",
                                "allow.everyone.if.no.acl.found": "true"}, acls)):
            broker = BrokerProcess(Path(root) / label, Path(root) / f"{label}.log",
                                   {"num.partitions": "1", **overrides})
            broker.start()
            try:
                timings = asyncio.run(_produce_timings(broker.bootstrap, requests, created))
            finally:
                broker.stop()
            figures[f"{label}_us"] = statistics.median(timings[requests // 10:]) * 1e6
    figures["ratio"] = figures["authorized_us"] / figures["plain_us"]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--acls", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args(argv)
    acls = acl_set(args.acls)
    core: dict[str, Any] = core_figures(acls)
    print(f"core, {args.acls} ACLs: first decision {core['first_us']:.1f} µs, remembered "
          f"{core['remembered_us']:.2f} µs, index built in {core['index_build_ms']:.0f} ms")
    produce = produce_figures(args.requests, acls)
    print(f"Produce (acks=1, 1 × 100 B, median of {args.requests}): plain "
          f"{produce['plain_us']:.0f} µs, with the authorizer and {args.acls} ACLs "
          f"{produce['authorized_us']:.0f} µs, ratio {produce['ratio']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
