"""The features a broker lists in ApiVersions (KIP-584), which `kafka-features describe` and
`Admin.describeFeatures` show: Kafka's names and levels, the v3 omission of features whose
minimum is 0, and none in v0-v2."""

from __future__ import annotations

import pytest
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.api_versions.v4.response import ApiVersionsResponse as ApiVersionsResponseV4
from kio.serial import entity_reader

from odradek.broker.features import FEATURES, feature_fields
from odradek.protocol.codec import API_VERSIONS_KEY, RequestHeader, encode_response

RESPONSES = {3: ApiVersionsResponseV3, 4: ApiVersionsResponseV4}


def decoded(version: int, epoch: int) -> ApiVersionsResponseV4:
    body = {"error_code": 0, "api_keys": [], **feature_fields(version, epoch)}
    frame = encode_response(RequestHeader(API_VERSIONS_KEY, version, 7, None), body)
    # past the size and the response header (v0 for ApiVersions, as in Kafka)
    response: ApiVersionsResponseV4
    response, _ = entity_reader(RESPONSES[version])(frame, 8)
    return response


def test_v4_lists_kafkas_features_with_their_finalized_levels_and_epoch() -> None:
    response = decoded(4, 42)
    assert {(f.name, f.min_version, f.max_version) for f in response.supported_features} == {
        ("group.version", 0, 1), ("kraft.version", 0, 0),
        ("metadata.version", 7, 25), ("share.version", 0, 1), ("transaction.version", 0, 1)}
    assert {(f.name, f.min_version_level, f.max_version_level)
            for f in response.finalized_features} == {
        ("group.version", 1, 1), ("metadata.version", 25, 25), ("share.version", 1, 1),
        ("transaction.version", 1, 1)}
    assert response.finalized_features_epoch == 42


def test_v3_leaves_out_features_whose_minimum_is_zero() -> None:
    response = decoded(3, 5)
    assert [f.name for f in response.supported_features] == ["metadata.version"]
    assert len(response.finalized_features) == 4


@pytest.mark.parametrize("version", [0, 1, 2])
def test_versions_before_3_carry_no_features(version: int) -> None:
    assert feature_fields(version, 5) == {}


def test_transaction_version_stays_below_2() -> None:
    """At 2 the Java producer leaves adding partitions to the leaders (KIP-890 part 2)."""
    assert {f.name: f.finalized for f in FEATURES}["transaction.version"] < 2
