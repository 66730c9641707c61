"""The features (KIP-584) a broker lists in ApiVersions, as Kafka's brokers do: the version
ranges it supports and the levels the cluster runs at, which `kafka-features describe` and
`Admin.describeFeatures` show.

Odradek's levels are fixed, not finalized through UpdateFeatures: metadata.version 4.0-IV3
(the APIs and records of Kafka 4.0), group.version 1 (KIP-848 consumer groups are served),
kraft.version 0 (a static voter set; no KIP-853 reconfiguration), share.version 1 (share
groups are served, as a Kafka 4.2+ cluster runs by default; Kafka's ShareVersion 1 depends
on no other feature) and transaction.version 1.
transaction.version stays below 2 on purpose: at 2 the Java producer stops sending
AddPartitionsToTxn and expects the partition leader to add partitions to the transaction
itself (KIP-890 part 2), which Odradek's leaders only verify."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Feature:
    name: str
    min_version: int
    max_version: int
    finalized: int
    """The level the cluster runs at; 0 is not finalized (Kafka lists no level-0 feature)."""


METADATA_VERSION_4_0_IV3 = 25
"""MetadataVersion.IBP_4_0_IV3's feature level."""
MINIMUM_METADATA_VERSION = 7
"""MetadataVersion.MINIMUM_VERSION, 3.3-IV3."""

FEATURES = (
    Feature("group.version", 0, 1, 1),
    Feature("kraft.version", 0, 0, 0),
    Feature("metadata.version", MINIMUM_METADATA_VERSION, METADATA_VERSION_4_0_IV3,
            METADATA_VERSION_4_0_IV3),
    Feature("share.version", 0, 1, 1),
    Feature("transaction.version", 0, 1, 1),
)


def feature_fields(api_version: int, epoch: int) -> dict[str, Any]:
    """ApiVersions' feature fields (v3+): ApiVersions v3 and below leave out the features whose
    minimum version is 0, as Kafka does for the clients that could not read them. The
    finalized features' epoch is the metadata offset the broker has applied, as in KRaft."""
    if api_version < 3:
        return {}
    supported = [f for f in FEATURES if api_version >= 4 or f.min_version > 0]
    return {
        "supported_features": [{"name": f.name, "min_version": f.min_version,
                                "max_version": f.max_version} for f in supported],
        "finalized_features_epoch": epoch,
        "finalized_features": [{"name": f.name, "max_version_level": f.finalized,
                                "min_version_level": f.finalized}
                               for f in FEATURES if f.finalized > 0],
    }
