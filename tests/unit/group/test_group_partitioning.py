"""A group's coordinator partition is Kafka's: Utils.abs(groupId.hashCode()) % partitions."""

from __future__ import annotations

import pytest

from odradek.group.partitioning import partition_for


@pytest.mark.parametrize(("group_id", "java_hash_code"), [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE: Utils.abs gives 0
    ("\U0001F600", 31 * 0xD83D + 0xDE00),  # a surrogate pair: two UTF-16 code units
])
def test_partition_follows_javas_string_hash_code(group_id: str, java_hash_code: int) -> None:
    expected = 0 if java_hash_code == -(2**31) else abs(java_hash_code)
    assert partition_for(group_id, 50) == expected % 50
    assert partition_for(group_id, 7) == expected % 7


def test_negative_hash_codes_use_their_absolute_value() -> None:
    # "Aa".hashCode() == "BB".hashCode() == 2112; a long id overflows 32 bits
    assert partition_for("Aa", 50) == partition_for("BB", 50) == 2112 % 50
    assert 0 <= partition_for("x" * 100, 50) < 50
