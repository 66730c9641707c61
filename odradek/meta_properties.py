"""`meta.properties`, as Kafka writes it in every data directory: the cluster and node ids."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from odradek.config import InvalidConfigError


def new_cluster_id() -> str:
    """Kafka's form: a random UUID as 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def read_or_create_cluster_id(directory: Path, node_id: int, configured: str | None,
                              generate: bool = True) -> str:
    """The cluster id recorded in `directory`; on first start, `configured` (or, when
    `generate`, a new id) is recorded. A configured id that differs from the recorded one is
    refused: the directory belongs to another cluster."""
    path = directory / "meta.properties"
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
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    tmp.replace(path)
    return cluster_id
