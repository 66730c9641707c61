"""The classic group's transition table: a move the table does not list raises and leaves
the group as it was, and nothing but `transition` changes the state."""

from __future__ import annotations

import pytest

from odradek.group.classic import ClassicGroup
from odradek.group.classic_state import TRANSITIONS, ClassicState, IllegalTransitionError


def group_in(state: ClassicState) -> ClassicGroup:
    """A new group taken to `state` through the table's transitions (breadth first)."""
    paths: dict[ClassicState, list[ClassicState]] = {ClassicState.EMPTY: []}
    frontier = [ClassicState.EMPTY]
    while frontier:
        current = frontier.pop(0)
        for new in sorted(TRANSITIONS[current]):
            if new not in paths:
                paths[new] = [*paths[current], new]
                frontier.append(new)
    group = ClassicGroup("g", current_state_timestamp=0)
    for new in paths[state]:
        group.transition(new, 1)
    assert group.state == state
    return group


def test_every_state_can_be_reached() -> None:
    for state in ClassicState:
        group_in(state)


def test_a_transition_the_table_does_not_list_raises_and_changes_nothing() -> None:
    illegal = [(state, new) for state in ClassicState for new in ClassicState
               if new not in TRANSITIONS[state]]
    assert (ClassicState.EMPTY, ClassicState.STABLE) in illegal
    assert (ClassicState.DEAD, ClassicState.EMPTY) in illegal
    for state, new in illegal:
        group = group_in(state)
        since = group.current_state_timestamp
        with pytest.raises(IllegalTransitionError, match=f"from {state} to {new}"):
            group.transition(new, 2)
        assert (group.state, group.current_state_timestamp) == (state, since)


def test_the_state_cannot_be_assigned() -> None:
    group = ClassicGroup("g")
    with pytest.raises(AttributeError):
        group.state = ClassicState.STABLE  # type: ignore[misc]
    assert group.state == ClassicState.EMPTY
