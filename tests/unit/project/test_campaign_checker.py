"""The fault campaign's checker (tests/campaign/checker.py) on small handmade histories: a
clean history passes, and each category's anomaly, planted alone, is found and only it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.campaign.checker import (
    ABORTED_READ,
    CYCLE,
    DIVERGENT,
    DUPLICATE,
    EPOCH_BUMP_DUPLICATE,
    INTERMEDIATE,
    LOST,
    MONITOR,
    OFFSET_BACKWARDS,
    OUT_OF_ORDER,
    POLL_SKIP,
    check,
    duplicate_places,
)
from tests.campaign.history import (
    ABORTED,
    COMMITTED,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    UNKNOWN_OFFSET,
    Ack,
    Assignment,
    Commit,
    History,
    Read,
    Stored,
    Txn,
    Writer,
)

RC, RU = READ_COMMITTED, READ_UNCOMMITTED


def clean() -> History:
    """Two idempotent writes; a committed transaction over topics a and b; an aborted one
    on a; a consume-transform-produce transaction reading the committed one's record on a;
    a read_committed group member, a read_uncommitted assigned reader; the final read."""
    history = History()
    for offset in range(3):
        history.add(Ack("p", f"p-{offset}", "idem", 0, offset, 0.1 * offset, 0.01))
    history.add(Ack("t", "t-0-0", "a", 0, 0, 0.9, 0.01, "t-0"))
    history.add(Ack("t", "t-0-1", "b", 0, 0, 0.9, 0.01, "t-0"))
    history.add(Txn("t", "t-0", ["t-0-0", "t-0-1"], COMMITTED, 0.5, 1.5, 1.0))
    history.add(Ack("t", "t-1-0", "a", 0, 2, 1.6, 0.01, "t-1"))
    history.add(Txn("t", "t-1", ["t-1-0"], ABORTED, 1.6, 1.8, None))
    history.add(Txn("s", "s-0", ["s-0-0-h1"], COMMITTED, 2.0, 3.0, 2.5, reads=["t-0-0"],
                    group="g-s", offsets={"a/0": 1}))
    history.add(Assignment("s", [("a", 0)], 1.9))
    history.add(Read("s", RC, "a", 0, 0, "t-0-0", 2.0, "g-s"))
    history.add(Assignment("r", [("idem", 0), ("a", 0)], 0.5))
    for offset in range(3):
        history.add(Read("r", RC, "idem", 0, offset, f"p-{offset}", 2.0, "g"))
    history.add(Read("r", RC, "a", 0, 0, "t-0-0", 2.0, "g"))
    history.add(Commit("r", "g", "idem", 0, 3, 2.1))
    history.add(Assignment("u", [("a", 0)], 0.5))
    history.add(Read("u", RU, "a", 0, 0, "t-0-0", 1.2))
    history.add(Read("u", RU, "a", 0, 2, "t-1-0", 1.9))
    history.add(Commit(MONITOR, "g", "idem", 0, 1, 1.9))
    history.add(Commit(MONITOR, "g", "idem", 0, 3, 2.2))
    committed = [("idem", 0, o, f"p-{o}") for o in range(3)] + [
        ("a", 0, 0, "t-0-0"), ("b", 0, 0, "t-0-1"), ("ctp", 0, 0, "s-0-0-h1")]
    for topic, partition, offset, value in committed:
        history.add(Stored(RC, topic, partition, offset, value))
        history.add(Stored(RU, topic, partition, offset, value))
    history.add(Stored(RU, "a", 0, 2, "t-1-0"))
    return history


def found(history: History) -> dict[str, int]:
    return {category: len(anomalies) for category, anomalies in check(history).items()
            if anomalies}


def without_final(history: History, isolation: str, topic: str, offset: int) -> History:
    history.final = [s for s in history.final if not (
        s.isolation == isolation and s.topic == topic and s.offset == offset)]
    return history


def test_a_clean_history_passes() -> None:
    assert found(clean()) == {}


def test_an_acknowledged_write_missing_from_the_log_is_lost() -> None:
    history = without_final(without_final(clean(), RC, "idem", 1), RU, "idem", 1)
    history.reads = [r for r in history.reads if r.value != "p-1"]
    anomalies = check(history)
    assert found(history) == {LOST: 1}
    assert anomalies[LOST][0]["value"] == "p-1" and anomalies[LOST][0]["found"] is None


def test_an_acknowledgement_without_an_offset_needs_the_value_anywhere_in_its_partition(
        ) -> None:
    """librdkafka reports a timed-out request's messages as delivered, offset unknown, once
    a later sequence is acknowledged (the long run's false "offset 0" lost writes)."""
    history = clean()
    history.acks = [replace(a, offset=UNKNOWN_OFFSET) if a.value == "p-1" else a
                    for a in history.acks]
    assert found(history) == {}
    history = without_final(without_final(history, RC, "idem", 1), RU, "idem", 1)
    history.reads = [r for r in history.reads if r.value != "p-1"]
    assert found(history) == {LOST: 1}


def test_a_committed_transaction_missing_a_record_is_lost() -> None:
    history = without_final(clean(), RC, "b", 0)
    assert found(history) == {LOST: 1}
    assert check(history)[LOST][0]["missing"] == ["t-0-1"]


def test_a_value_at_two_offsets_is_a_duplicate() -> None:
    history = clean()
    history.add(Stored(RU, "idem", 0, 3, "p-1"))
    assert found(history) == {DUPLICATE: 1}
    assert check(history)[DUPLICATE][0]["at"] == [("idem", 0, 1), ("idem", 0, 3)]


def test_a_copy_re_sent_under_a_new_epoch_of_its_producer_is_not_promised() -> None:
    """librdkafka re-sends a record that may have been written when it bumps an idempotent
    producer's epoch; the logs' batch headers show it (docs/reliability.md, Not promised)."""
    history = clean()
    history.add(Stored(RU, "idem", 0, 3, "p-1"))
    history.add(Writer("idem", 0, 1, 7, 0))
    history.add(Writer("idem", 0, 3, 7, 1))
    assert found(history) == {EPOCH_BUMP_DUPLICATE: 1}
    assert check(history)[EPOCH_BUMP_DUPLICATE][0]["producer_id_and_epoch"] == [(7, 0), (7, 1)]
    assert duplicate_places(history) == {("idem", 0, 1), ("idem", 0, 3)}


@pytest.mark.parametrize("writers", [
    [("idem", 0, 1, 7, 0), ("idem", 0, 3, 7, 0)],  # the broker took one epoch's retry twice
    [("idem", 0, 1, 7, 0), ("idem", 0, 3, 8, 0)],  # two producers
    [("idem", 0, 1, 7, 0)],  # a copy whose writer is not known
])
def test_other_copies_are_duplicates(writers: list[tuple[str, int, int, int, int]]) -> None:
    history = clean()
    history.add(Stored(RU, "idem", 0, 3, "p-1"))
    for writer in writers:
        history.add(Writer(*writer))
    assert found(history) == {DUPLICATE: 1}


def test_a_transactional_copy_under_a_new_epoch_is_a_duplicate() -> None:
    history = clean()
    history.add(Stored(RC, "a", 0, 5, "t-0-0"))
    history.add(Writer("a", 0, 0, 7, 0))
    history.add(Writer("a", 0, 5, 7, 1))
    assert found(history) == {DUPLICATE: 1}


def test_an_input_processed_by_two_committed_transactions_is_a_duplicate() -> None:
    history = clean()
    history.add(Txn("s", "s-1", ["s-1-0-h1"], COMMITTED, 3.5, 4.0, 3.8, reads=["t-0-0"],
                    group="g-s", offsets={"a/0": 1}))
    history.add(Stored(RC, "ctp", 0, 1, "s-1-0-h1"))
    history.add(Stored(RU, "ctp", 0, 1, "s-1-0-h1"))
    assert found(history) == {DUPLICATE: 1}
    assert check(history)[DUPLICATE][0]["processed_by_committed"] == ["s-0", "s-1"]


def test_reads_going_back_without_a_rebalance_are_out_of_order() -> None:
    history = clean()
    history.add(Read("r", RC, "idem", 0, 1, "p-1", 2.05, "g"))
    assert found(history) == {OUT_OF_ORDER: 1}


def test_a_rebalance_starts_a_new_session() -> None:
    history = clean()
    history.add(Assignment("r", [("idem", 0)], 2.02))
    history.add(Read("r", RC, "idem", 0, 1, "p-1", 2.05, "g"))
    assert found(history) == {}


def test_a_visible_record_jumped_over_is_a_poll_skip() -> None:
    history = clean()
    history.reads = [r for r in history.reads if not (r.process == "r" and r.offset == 1
                                                      and r.topic == "idem")]
    assert found(history) == {POLL_SKIP: 1}
    assert check(history)[POLL_SKIP][0]["skipped"] == [1]


def test_aborted_records_are_no_skip_for_read_committed() -> None:
    history = clean()
    history.add(Ack("p", "p-4", "a", 0, 4, 2.5, 0.01))
    history.add(Stored(RC, "a", 0, 4, "p-4"))
    history.add(Stored(RU, "a", 0, 4, "p-4"))
    history.add(Read("r", RC, "a", 0, 4, "p-4", 2.6, "g"))
    assert found(history) == {}
    history.add(Read("u", RU, "a", 0, 4, "p-4", 2.6))
    assert found(history) == {}


def test_an_input_below_the_committed_offsets_never_processed_is_a_poll_skip() -> None:
    history = clean()
    history.txns = [replace(t, offsets={"a/0": 1, "b/0": 1}) if t.txn == "s-0" else t
                    for t in history.txns]
    assert found(history) == {POLL_SKIP: 1}
    assert check(history)[POLL_SKIP][0]["never_processed"] == [0]


def test_read_committed_reading_an_aborted_record_is_g1a() -> None:
    history = clean()
    history.add(Read("r", RC, "a", 0, 2, "t-1-0", 2.2, "g"))
    assert found(history) == {ABORTED_READ: 1}


def test_an_aborted_transaction_visible_in_the_log_is_g1a() -> None:
    history = clean()
    history.txns = [replace(t, outcome=ABORTED) if t.txn == "t-0" else t
                    for t in history.txns]
    assert found(history) == {ABORTED_READ: 1}


def test_a_read_before_the_commit_was_asked_for_is_intermediate() -> None:
    history = clean()
    history.add(Assignment("v", [("a", 0)], 0.5))
    history.add(Read("v", RC, "a", 0, 0, "t-0-0", 0.95))
    assert found(history) == {INTERMEDIATE: 1}


def test_two_transactions_reading_each_other_are_a_g1c_cycle() -> None:
    history = clean()
    history.txns = [replace(t, reads=["s-0-0-h1"]) if t.txn == "t-0" else t
                    for t in history.txns]
    anomalies = check(history)
    assert found(history) == {CYCLE: 1}
    assert anomalies[CYCLE][0]["cycle"] in (["s-0", "t-0", "s-0"], ["t-0", "s-0", "t-0"])
    assert anomalies[CYCLE][0]["edges"] == ["wr", "wr"]


def test_a_cycle_through_process_order_is_g1c() -> None:
    """t-0 wrote what s-0 read, and t's earlier transaction t-x read s-0's output."""
    history = clean()
    history.add(Txn("t", "t-x", ["t-x-0"], COMMITTED, 0.1, 0.4, 0.3, reads=["s-0-0-h1"]))
    history.add(Stored(RC, "a", 0, 5, "t-x-0"))
    history.add(Stored(RU, "a", 0, 5, "t-x-0"))
    anomalies = check(history)
    assert found(history) == {CYCLE: 1}
    assert sorted(anomalies[CYCLE][0]["edges"]) == ["process", "wr", "wr"]


def test_two_records_at_one_offset_are_divergent() -> None:
    history = clean()
    history.add(Read("w", RU, "a", 0, 2, "t-9-0", 2.0))
    assert found(history) == {DIVERGENT: 1}
    assert check(history)[DIVERGENT][0]["values"] == {"t-1-0": "ack:t", "t-9-0": "read:w"}


def test_a_committed_offset_going_back_on_the_brokers_is_found() -> None:
    history = clean()
    history.add(Commit(MONITOR, "g", "idem", 0, 2, 2.5))
    assert found(history) == {OFFSET_BACKWARDS: 1}
    assert check(history)[OFFSET_BACKWARDS][0]["seen_by"] == MONITOR


def test_a_commit_behind_what_the_consumer_read_goes_backwards() -> None:
    """The shape of issue 28's kafka-python anomaly: offset 1 committed after reading 2."""
    history = clean()
    history.add(Commit("r", "g", "idem", 0, 2, 2.3))
    anomalies = check(history)[OFFSET_BACKWARDS]
    assert len(anomalies) == 2  # behind its own reads, and behind its earlier commit
    assert {a.get("after_reading_offset") for a in anomalies} == {2, None}


@pytest.mark.parametrize("category", [LOST, DIVERGENT])
def test_an_acknowledged_offset_holding_another_value(category: str) -> None:
    history = without_final(without_final(clean(), RC, "idem", 2), RU, "idem", 2)
    history.reads = [r for r in history.reads if r.value != "p-2"]
    history.add(Stored(RC, "idem", 0, 2, "x"))
    history.add(Stored(RU, "idem", 0, 2, "x"))
    assert found(history)[category] == 1


def test_a_history_survives_json() -> None:
    history = clean()
    again = History.from_json(json.loads(json.dumps(history.to_json())))
    assert again.to_json() == history.to_json()
    assert found(again) == {}
