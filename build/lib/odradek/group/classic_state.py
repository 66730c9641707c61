"""A classic group's states and the one table of transitions between them, after Kafka's
ClassicGroupState and in the style of h11's `_state.py`: a transition the table does not
list raises instead of happening."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType


class ClassicState(StrEnum):
    """Kafka's names, which DescribeGroups, ListGroups and the metrics report."""

    STABLE = "Stable"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    EMPTY = "Empty"
    DEAD = "Dead"


TRANSITIONS: Mapping[ClassicState, frozenset[ClassicState]] = MappingProxyType({
    ClassicState.EMPTY: frozenset({ClassicState.PREPARING_REBALANCE, ClassicState.DEAD}),
    ClassicState.PREPARING_REBALANCE: frozenset({
        ClassicState.COMPLETING_REBALANCE, ClassicState.EMPTY, ClassicState.DEAD}),
    ClassicState.COMPLETING_REBALANCE: frozenset({
        ClassicState.STABLE, ClassicState.PREPARING_REBALANCE, ClassicState.DEAD}),
    ClassicState.STABLE: frozenset({ClassicState.PREPARING_REBALANCE, ClassicState.DEAD}),
    ClassicState.DEAD: frozenset({ClassicState.DEAD}),
})
"""State -> the states it may move to: Kafka's validPreviousStates, read forwards."""


class IllegalTransitionError(Exception):
    """A move between two states that the table does not allow: a coordinator bug."""


def check_transition(current: ClassicState, new: ClassicState) -> None:
    if new not in TRANSITIONS[current]:
        raise IllegalTransitionError(f"a classic group cannot go from {current} to {new}")
