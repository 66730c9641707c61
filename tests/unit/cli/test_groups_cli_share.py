"""`odradek groups describe --type share`: the tables Kafka's kafka-share-groups.sh prints
for `--describe --state` and `--describe --members` (with and without --verbose), as Kafka
4.3.1's tool printed them for the same group (tests/integration/jvm compares the two
live)."""

from __future__ import annotations

from odradek.cli.groups.share import (
    ShareGroup,
    ShareMember,
    assignment_text,
    members_table,
    state_table,
)

GROUP = ShareGroup("sg", "127.0.0.1:23459  (1)", "Stable", 2, 2, (
    ShareMember("m1", "/127.0.0.1", "raw", 2, {"orders": (1, 2)}),
    ShareMember("m2", "/127.0.0.1", "raw", 2, {"orders": (0,)}),
))


def test_state_table_as_kafka_prints_it() -> None:
    assert state_table([GROUP], verbose=False).splitlines() == [
        "",
        "GROUP           COORDINATOR (ID)          STATE           #MEMBERS",
        "sg              127.0.0.1:23459  (1)      Stable          2",
    ]
    assert state_table([GROUP], verbose=True).splitlines() == [
        "",
        "GROUP           COORDINATOR (ID)          STATE           GROUP-EPOCH  "
        "ASSIGNMENT-EPOCH  #MEMBERS",
        "sg              127.0.0.1:23459  (1)      Stable          2            "
        "2                 2",
    ]


def test_members_table_as_kafka_prints_it() -> None:
    assert members_table([GROUP], verbose=False).splitlines() == [
        "",
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  ASSIGNMENT",
        "sg              m1              /127.0.0.1      raw             2            orders:1,2",
        "sg              m2              /127.0.0.1      raw             1            orders:0",
    ]
    assert members_table([GROUP], verbose=True).splitlines()[1:] == [
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  "
        "MEMBER-EPOCH  ASSIGNMENT",
        "sg              m1              /127.0.0.1      raw             2            "
        "2             orders:1,2",
        "sg              m2              /127.0.0.1      raw             1            "
        "2             orders:0",
    ]


def test_long_names_widen_their_columns() -> None:
    long = ShareGroup("a-share-group-with-a-long-name", "h:1  (1)", "Empty", 3, 3, ())
    header = state_table([long], verbose=False).splitlines()[1]
    assert header.startswith("GROUP" + " " * 26 + "COORDINATOR (ID)")


def test_assignment_text() -> None:
    assert assignment_text({"b": (2,), "a": (0, 1)}) == "a:0,1;b:2"
    assert assignment_text({}) == "-"
