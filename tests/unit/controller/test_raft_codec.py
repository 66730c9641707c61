"""Raft messages survive the protobuf round trip, field for field."""

from hypothesis import given
from hypothesis import strategies as st

from odradek.controller.raft_codec import message_from_proto, message_to_proto
from odradek.raft.types import Entry, Message, MessageType, Snapshot

ints = st.integers(min_value=0, max_value=2**62)
node_ids = st.integers(min_value=0, max_value=2**31 - 1)
entries = st.builds(Entry, ints, ints, st.binary(max_size=64))
snapshots = st.builds(Snapshot, ints, ints, st.binary(max_size=64),
                      st.frozensets(node_ids, max_size=5))


@given(st.builds(
    Message, st.sampled_from(MessageType), node_ids, node_ids, ints, ints, ints,
    st.lists(entries, max_size=4).map(tuple), ints, st.booleans(), ints,
    st.none() | snapshots, st.booleans(),
))
def test_every_message_round_trips(message: Message) -> None:
    assert message_from_proto(message_to_proto(message)) == message


def test_an_empty_snapshot_is_not_confused_with_none() -> None:
    message = Message(MessageType.INSTALL_SNAPSHOT, 1, 2, 3, snapshot=Snapshot(0, 0, b""))
    assert message_from_proto(message_to_proto(message)).snapshot == Snapshot(0, 0, b"")
