"""`odradek groups` tables of share-group offsets, in kafka-share-groups.sh's formats
(ShareGroupCommand: `%-Gs %-Ts %-10s %-13s %s` after a blank line, at least 15 wide)."""

from __future__ import annotations

from odradek.cli.groups.model import Partition
from odradek.cli.groups.share_offsets import (
    ShareOffset,
    delete_table,
    reset_table,
    share_offsets_table,
)

OFFSETS = [ShareOffset(Partition("orders", 0), 3, 0, 7),
           ShareOffset(Partition("orders", 1), None, None, None)]


def test_describe_offsets() -> None:
    assert share_offsets_table("g", OFFSETS, verbose=False).splitlines() == [
        "",
        "GROUP           TOPIC           PARTITION  START-OFFSET  LAG",
        "g               orders          0          3             7",
        "g               orders          1          -             -",
    ]
    assert share_offsets_table("g", OFFSETS, verbose=True).splitlines()[1:3] == [
        "GROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG",
        "g               orders          0          0             3             7",
    ]
    assert share_offsets_table("g", [], verbose=False) == (
        "\nShare group 'g' has no offset information.")


def test_reset_plan_and_deletion() -> None:
    assert reset_table("a-long-share-group", {Partition("orders", 1): 9}).splitlines() == [
        "",
        "GROUP              TOPIC           PARTITION  NEW-OFFSET",
        "a-long-share-group orders          1          9",
    ]
    assert delete_table({"payments": "The group is not empty.", "orders": None}
                        ).splitlines() == [
        "",
        "TOPIC           STATUS",
        "orders          Successful",
        "payments        Error: The group is not empty.",
    ]
