"""Client quotas' pure parts: Kafka's sampled rate and token bucket, throttle times, which
entity's quota applies to a (user, client id) and under which metric tags, and the checks of
AlterClientQuotas and DescribeClientQuotas."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.metadata.image import ClusterMetadata
from odradek.metadata.records import decode_batch, encode_batch
from odradek.security.client_quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    ClientQuota,
    ControllerMutationQuota,
    Entity,
    QuotaIndex,
    QuotaRequestError,
    alterations,
    describe_entries,
    entity,
    entity_text,
    quota_filter,
    value_problem,
)
from odradek.security.quota_rate import SampledStat, TokenBucket, java_round, throttle_time_ms

ALICE_C1: Entity = ((CLIENT_ID, "c1"), (USER, "alice"))
ALICE_DEFAULT_CLIENT: Entity = ((CLIENT_ID, None), (USER, "alice"))
ALICE: Entity = ((USER, "alice"),)
DEFAULT_USER_C1: Entity = ((CLIENT_ID, "c1"), (USER, None))
DEFAULT_USER_CLIENT: Entity = ((CLIENT_ID, None), (USER, None))
DEFAULT_USER: Entity = ((USER, None),)
C1: Entity = ((CLIENT_ID, "c1"),)
DEFAULT_CLIENT: Entity = ((CLIENT_ID, None),)
KAFKA_ORDER = [ALICE_C1, ALICE_DEFAULT_CLIENT, ALICE, DEFAULT_USER_C1, DEFAULT_USER_CLIENT,
               DEFAULT_USER, C1, DEFAULT_CLIENT]
"""Kafka's precedence of quota entities for user alice with client id c1."""


# --- the rate ------------------------------------------------------------------------------


def test_a_first_burst_is_spread_over_all_but_one_window() -> None:
    stat = SampledStat(samples=11, window_ms=1000)
    stat.record(10_000, now_ms=5_000)
    assert stat.elapsed_ms(5_000) == 10_000
    assert stat.rate(5_000) == 1_000.0


def test_the_rate_forgets_samples_older_than_the_window() -> None:
    stat = SampledStat(samples=2, window_ms=1000)
    stat.record(4_000, 0)
    stat.record(1_000, 1_500)
    assert stat.total(1_999) == 5_000
    assert stat.total(2_000) == 1_000  # the first sample had no event for 2 x 1 s
    assert stat.total(3_500) == 0


def test_average_of_the_live_samples() -> None:
    stat = SampledStat(samples=2, window_ms=30_000)
    assert stat.average(0) == 0.0
    stat.record(100, 0)
    stat.record(300, 10)
    assert stat.average(20) == 200.0


def test_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    # Kafka's example: O * W / (W + X) = T
    assert throttle_time_ms(rate=150.0, bound=100.0, elapsed_ms=10_000) == 5_000
    assert java_round(2.5) == 3 and java_round(-2.5) == -2


@settings(max_examples=30, deadline=None)
@given(shares=st.lists(st.floats(0.02, 0.5), min_size=1, max_size=20),
       quota=st.integers(50_000, 1_000_000))
def test_a_client_that_waits_out_its_throttles_averages_its_quota(shares: list[float],
                                                                  quota: int) -> None:
    """A producer sending requests of up to half its quota as soon as it may, for two
    minutes, averages its quota: at least all of it (less rounding), at most 10% more (the
    first window's allowance: Kafka's sampled rate, not a token bucket)."""
    sizes = [int(quota * share) for share in shares]
    limited = ClientQuota(PRODUCER_BYTE_RATE, samples=11, window_ms=1000)
    limited.refresh({C1: {PRODUCER_BYTE_RATE: float(quota)}})
    now = start = 1_000_000
    sent = 0
    while now - start < 120_000:
        size = sizes[sent % len(sizes)]
        delay = limited.record("ANONYMOUS", "c1", size, now)
        sent += size
        now += max(delay, 1)
    ratio = sent * 1000 / (now - start) / quota
    assert 0.99 <= ratio <= 1.1


def test_an_unlimited_client_is_measured_but_never_throttled() -> None:
    quota = ClientQuota(PRODUCER_BYTE_RATE, samples=11, window_ms=1000)
    quota.refresh({C1: {PRODUCER_BYTE_RATE: 10.0}})
    assert quota.record("ANONYMOUS", "other", 10**9, 0) == 0
    assert quota.record("ANONYMOUS", "c1", 10**6, 0) > 0
    figures = {f.tags: f.values for f in quota.figures(0)}
    assert figures[("", "other")]["byte-rate"] == pytest.approx(10**9 / 10)


def test_no_quota_of_the_type_means_nothing_is_recorded() -> None:
    quota = ClientQuota(CONSUMER_BYTE_RATE, samples=11, window_ms=1000)
    quota.refresh({C1: {PRODUCER_BYTE_RATE: 10.0}})
    assert not quota.enabled
    assert quota.record("ANONYMOUS", "c1", 10**9, 0) == 0
    assert quota.figures(0) == []


def test_request_quota_throttles_at_most_one_window() -> None:
    quota = ClientQuota(REQUEST_PERCENTAGE, samples=11, window_ms=1000, max_throttle_ms=1000)
    quota.refresh({C1: {REQUEST_PERCENTAGE: 1.0}})
    assert quota.record("ANONYMOUS", "c1", 10_000.0, 0) == 1000


def test_unrecording_takes_a_throttled_fetch_back() -> None:
    quota = ClientQuota(CONSUMER_BYTE_RATE, samples=11, window_ms=1000)
    quota.refresh({C1: {CONSUMER_BYTE_RATE: 100.0}})
    assert quota.record("ANONYMOUS", "c1", 5_000, 0) > 0
    quota.unrecord("ANONYMOUS", "c1", 5_000, 0)
    assert quota.record("ANONYMOUS", "c1", 500, 1) == 0


def test_sensors_unused_for_an_hour_are_dropped() -> None:
    quota = ClientQuota(PRODUCER_BYTE_RATE, samples=11, window_ms=1000)
    quota.refresh({C1: {PRODUCER_BYTE_RATE: 10.0}})
    quota.record("ANONYMOUS", "c1", 1, 0)
    assert len(quota.figures(3_600_000)) == 1
    assert quota.figures(3_600_001) == []


# --- the token bucket (controller mutations) -----------------------------------------------


def test_token_bucket_bursts_then_refills_at_the_rate() -> None:
    bucket = TokenBucket(samples=10, window_ms=1000)
    assert bucket.measure(5.0, 100_000) == 50.0  # full: 10 x 1 s x 5/s
    bucket.record(56.0, 5.0, 100_000)
    assert bucket.tokens == -6.0
    assert bucket.throttle_time_ms(5.0) == 1200
    assert bucket.measure(5.0, 101_200) == pytest.approx(0.0)


def test_strict_mutations_are_refused_while_the_bucket_is_empty() -> None:
    quota = ControllerMutationQuota(samples=11, window_ms=1000)
    quota.refresh({C1: {"controller_mutation_rate": 2.0}})
    assert quota.record_mutations("ANONYMOUS", "c1", 30, True, 1_000_000) == (True, 0)
    accepted, delay = quota.record_mutations("ANONYMOUS", "c1", 1, True, 1_000_000)
    assert (accepted, delay) == (False, 4000)  # 22 credits, -8 left: 8 / 2 per second
    assert quota.record_mutations("ANONYMOUS", "c1", 1, True, 1_004_000) == (True, 0)


def test_permissive_mutations_are_recorded_and_throttled_after() -> None:
    quota = ControllerMutationQuota(samples=11, window_ms=1000)
    quota.refresh({C1: {"controller_mutation_rate": 2.0}})
    assert quota.record_mutations("ANONYMOUS", "c1", 30, False, 1_000_000) == (True, 4000)
    values = quota.figures(1_000_000)[0].values
    assert values["tokens"] == -8.0 and "mutation-rate" in values


# --- which quota, under which tags ---------------------------------------------------------


@pytest.mark.parametrize("present", range(len(KAFKA_ORDER)))
def test_the_first_entity_in_kafkas_order_applies(present: int) -> None:
    """With entities from `present` on set, the quota of KAFKA_ORDER[present] applies."""
    quotas = {target: {PRODUCER_BYTE_RATE: float(i + 1)}
              for i, target in enumerate(KAFKA_ORDER) if i >= present}
    index = QuotaIndex.of(quotas, PRODUCER_BYTE_RATE)
    assert index.limit(index.tags("alice", "c1")) == present + 1


@pytest.mark.parametrize(("entities", "tags"), [
    ([C1], ("", "c1")),
    ([DEFAULT_CLIENT], ("", "c1")),
    ([ALICE, DEFAULT_USER], ("alice", "")),
    ([ALICE_C1], ("alice", "c1")),
    ([ALICE, C1], ("alice", "")),
    ([DEFAULT_USER_CLIENT, C1], ("alice", "c1")),
    ([DEFAULT_USER, C1], ("alice", "")),
    ([ALICE_C1, DEFAULT_CLIENT], ("alice", "c1")),
    ([((USER, "bob"),), C1], ("", "c1")),
])
def test_metric_tags_name_what_the_quota_entities_name(entities: list[Entity],
                                                       tags: tuple[str, str]) -> None:
    index = QuotaIndex.of({e: {PRODUCER_BYTE_RATE: 1.0} for e in entities}, PRODUCER_BYTE_RATE)
    assert index.tags("alice", "c1") == tags


def test_no_quota_for_a_connection_without_matching_entities() -> None:
    index = QuotaIndex.of({ALICE: {PRODUCER_BYTE_RATE: 1.0}}, PRODUCER_BYTE_RATE)
    assert index.limit(index.tags("bob", "c1")) is None


# --- AlterClientQuotas and DescribeClientQuotas' checks ------------------------------------


def test_entities_are_sorted_and_defaults_are_none() -> None:
    assert entity([(USER, "alice"), (CLIENT_ID, None)]) == ALICE_DEFAULT_CLIENT
    assert entity_text(ALICE_DEFAULT_CLIENT) == "user=alice, client-id=<default>"


@pytest.mark.parametrize(("components", "message"), [
    ([], "Invalid empty client quota entity"),
    ([(USER, "a"), (USER, "b")], "duplicate entity entry user"),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([(USER, "")], "Empty user not supported"),
    ([("ip", "10.0.0.1")], "IP quotas"),
])
def test_bad_entities_are_refused(components: list[tuple[str, str | None]],
                                  message: str) -> None:
    with pytest.raises(QuotaRequestError, match=message):
        entity(components)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("producer_byte_rate", 1024.0, None),
    ("request_percentage", 0.5, None),
    ("producer_byte_rate", 10.5, "cannot be a fractional value"),
    ("producer_byte_rate", 0.0, "must be greater than 0"),
    ("consumer_byte_rate", -1.0, "must be greater than 0"),
    ("producer_byte_rate", 1e20, "too large for a LONG"),
    ("connection_creation_rate", 1.0, "Invalid configuration key"),
])
def test_quota_values_are_checked_as_kafka_does(key: str, value: float,
                                                message: str | None) -> None:
    problem = value_problem(key, value)
    assert problem is None if message is None else message in (problem or "")


def test_a_key_named_twice_is_refused() -> None:
    with pytest.raises(QuotaRequestError, match="Duplicate quota key"):
        alterations([(PRODUCER_BYTE_RATE, 1.0), (PRODUCER_BYTE_RATE, None)])


def test_describe_filters_match_as_kafka_does() -> None:
    quotas = {target: {PRODUCER_BYTE_RATE: 1.0} for target in KAFKA_ORDER}

    def described(components: list[tuple[str, int, str | None]], strict: bool) -> set[Entity]:
        return {e for e, _ in describe_entries(quotas, quota_filter(components, strict))}

    assert described([], False) == set(KAFKA_ORDER)
    assert described([(USER, 0, "alice")], False) == {ALICE_C1, ALICE_DEFAULT_CLIENT, ALICE}
    assert described([(USER, 0, "alice")], True) == {ALICE}
    assert described([(USER, 1, None)], True) == {DEFAULT_USER}
    assert described([(USER, 2, None), (CLIENT_ID, 1, None)], True) == {
        ALICE_DEFAULT_CLIENT, DEFAULT_USER_CLIENT}
    assert described([(CLIENT_ID, 2, None)], True) == {C1, DEFAULT_CLIENT}


@pytest.mark.parametrize(("components", "message", "unsupported"), [
    ([(USER, 0, None)], "MATCH_TYPE_EXACT, but set match string to null", False),
    ([(USER, 1, "x")], "MATCH_TYPE_DEFAULT, but also specified a match string", False),
    ([(USER, 2, None), (USER, 1, None)], "cannot appear more than once", False),
    ([("group", 2, None)], "Unsupported entity type group", True),
    ([("ip", 2, None), (USER, 2, None)], "IP filter component should not be used", False),
    ([(USER, 7, None)], "Unknown match type 7", False),
])
def test_bad_filters_are_refused(components: list[tuple[str, int, str | None]], message: str,
                                 unsupported: bool) -> None:
    with pytest.raises(QuotaRequestError, match=message) as raised:
        quota_filter(components, False)
    assert raised.value.unsupported == unsupported


# --- the metadata image --------------------------------------------------------------------


def test_quota_records_replay_and_survive_a_snapshot() -> None:
    image = ClusterMetadata()
    for record in image.alter_client_quotas(ALICE_DEFAULT_CLIENT, {PRODUCER_BYTE_RATE: 1e6,
                                                                   CONSUMER_BYTE_RATE: 2e6}):
        image.replay(record)
    assert image.alter_client_quotas(ALICE_DEFAULT_CLIENT, {PRODUCER_BYTE_RATE: 1e6}) == []
    assert image.alter_client_quotas(C1, {PRODUCER_BYTE_RATE: None}) == []
    (removal,) = image.alter_client_quotas(ALICE_DEFAULT_CLIENT, {CONSUMER_BYTE_RATE: None})
    image.replay(removal)
    restored = ClusterMetadata()
    for record in decode_batch(encode_batch(image.to_records())):
        restored.replay(record)
    assert restored.client_quotas == {ALICE_DEFAULT_CLIENT: {PRODUCER_BYTE_RATE: 1e6}}
    for record in restored.alter_client_quotas(ALICE_DEFAULT_CLIENT, {PRODUCER_BYTE_RATE: None}):
        restored.replay(record)
    assert restored.client_quotas == {}
