"""What Kafka writes in a node's directories: `meta.properties` in every one (the cluster and
node ids), and `bootstrap.checkpoint` in the metadata log's (the records `storage format`
asks the first active controller to write, KIP-900)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from odradek.config.kafka_configs import InvalidConfigError
from odradek.metadata.records import MetadataRecord, decode_batch, encode_batch

META_PROPERTIES = "meta.properties"
BOOTSTRAP_FILE = "bootstrap.checkpoint"


def new_cluster_id() -> str:
    """Kafka's form: a random UUID as 22 characters of URL-safe base64, never starting with
    `-` (Kafka's Uuid.randomUuid draws again: `storage format -t -Xy...` would read the id
    as an option)."""
    while True:
        encoded = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not encoded.startswith("-"):
            return encoded


def read_or_create_cluster_id(directory: Path, node_id: int, configured: str | None,
                              generate: bool = True) -> str:
    """The cluster id recorded in `directory`; on first start, `configured` (or, when
    `generate`, a new id) is recorded. A configured id that differs from the recorded one is
    refused: the directory belongs to another cluster."""
    path = directory / META_PROPERTIES
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("cluster.id="):
                recorded = line.split("=", 1)[1].strip()
                if configured and configured != recorded:
                    raise InvalidConfigError(
                        f"cluster.id {configured} does not match {recorded} recorded in {path}"
                    )
                return recorded
    if not configured and not generate:
        raise InvalidConfigError(
            "cluster.id is not set: every node of a multi-node cluster needs the same cluster.id"
        )
    cluster_id = configured or new_cluster_id()
    write_meta_properties(directory, cluster_id, node_id)
    return cluster_id


def write_meta_properties(directory: Path, cluster_id: str, node_id: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    _write_atomically(directory / META_PROPERTIES,
                      f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n".encode())


def write_bootstrap(directory: Path, records: list[MetadataRecord]) -> None:
    _write_atomically(directory / BOOTSTRAP_FILE, encode_batch(records))


def read_bootstrap(directory: Path) -> list[MetadataRecord]:
    """The records of `directory`'s bootstrap file; none when it has none."""
    try:
        return decode_batch((directory / BOOTSTRAP_FILE).read_bytes())
    except FileNotFoundError:
        return []


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
