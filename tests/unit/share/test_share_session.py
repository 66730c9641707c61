"""Share sessions (odradek/share/session.py) against the rules of Kafka's ShareSessionCache."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from odradek.share.session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    MAX_EPOCH,
    ShareSessionCache,
    ShareSessionError,
    next_epoch,
)

KEY = ("g", "m1")
A, B, C = ("topic-a", 0), ("topic-a", 1), ("topic-b", 0)


def refused(code: ErrorCode, call: object, *args: object, **kwargs: object) -> None:
    with pytest.raises(ShareSessionError) as raised:
        call(*args, **kwargs)  # type: ignore[operator]
    assert raised.value.code == code, raised.value


def test_a_session_opens_at_epoch_0_and_expects_1_next() -> None:
    cache = ShareSessionCache(10)
    context = cache.new_context(KEY, INITIAL_EPOCH, "c1", [A, B], [], acknowledging=False)
    assert context.partitions == (A, B) and not context.final
    assert cache.sessions[KEY].epoch == 1


def test_later_requests_add_and_forget_partitions_in_order() -> None:
    cache = ShareSessionCache(10)
    cache.new_context(KEY, 0, "c1", [A], [], acknowledging=False)
    assert cache.new_context(KEY, 1, "c1", [C, A], [], acknowledging=True).partitions == (A, C)
    assert cache.new_context(KEY, 2, "c1", [B], [A], acknowledging=False).partitions == (C, B)
    assert cache.sessions[KEY].epoch == 3
    assert cache.partition_count() == 2


def test_a_wrong_epoch_or_an_unknown_session_is_refused() -> None:
    cache = ShareSessionCache(10)
    refused(ErrorCode.share_session_not_found, cache.new_context, KEY, 1, "c1", [A], [], False)
    cache.new_context(KEY, 0, "c1", [A], [], acknowledging=False)
    refused(ErrorCode.invalid_share_session_epoch, cache.new_context, KEY, 2, "c1", [A], [],
            False)
    assert cache.sessions[KEY].epoch == 1, "a refused request leaves the epoch"


def test_opening_again_replaces_the_session_but_not_with_acknowledgements() -> None:
    cache = ShareSessionCache(10)
    cache.new_context(KEY, 0, "c1", [A], [], acknowledging=False)
    cache.new_context(KEY, 1, "c1", [B], [], acknowledging=False)
    refused(ErrorCode.invalid_request, cache.new_context, KEY, 0, "c1", [A], [], True)
    assert cache.new_context(KEY, 0, "c2", [C], [], acknowledging=False).partitions == (C,)
    assert cache.sessions[KEY].epoch == 1
    assert cache.disconnected("c1") == (None, None), (
        "the old connection no longer holds the session, and the group has one")
    session, emptied = cache.disconnected("c2")
    assert session is not None and KEY not in cache.sessions and emptied == "g"


def test_a_group_is_left_when_the_connection_of_its_last_session_closes() -> None:
    """Kafka's onGroupEmpty: on a disconnect, once no session of the group is left on the
    broker, even if the session was closed (final epoch) before the connection."""
    cache = ShareSessionCache(10)
    cache.new_context(("g", "m1"), 0, "c1", [A], [], acknowledging=False)
    cache.new_context(("g", "m2"), 0, "c2", [A], [], acknowledging=False)
    cache.new_context(("other", "m3"), 0, "c3", [A], [], acknowledging=False)
    assert cache.disconnected("c1")[1] is None, "m2 is still here"
    assert cache.holds_group("g") and cache.holds_group("other")
    assert not cache.holds_group("none")
    cache.new_context(("g", "m2"), FINAL_EPOCH, "c2", [], [], acknowledging=True)
    assert cache.remove(("g", "m2")) is not None
    assert cache.disconnected("c2") == (None, "g")
    assert not cache.holds_group("g")
    assert cache.disconnected("c2") == (None, None)
    assert cache.disconnected("unknown") == (None, None)
    assert ("other", "m3") in cache.sessions


def test_the_final_epoch_needs_a_session_and_fetches_its_own_partitions() -> None:
    cache = ShareSessionCache(10)
    refused(ErrorCode.share_session_not_found, cache.new_context, KEY, FINAL_EPOCH, "c1", [A],
            [], True)
    cache.new_context(KEY, 0, "c1", [A, B], [], acknowledging=False)
    context = cache.new_context(KEY, FINAL_EPOCH, "c1", [B], [], acknowledging=True)
    assert context.final and context.partitions == (B,)


def test_the_cache_is_bounded() -> None:
    cache = ShareSessionCache(1)
    cache.new_context(KEY, 0, "c1", [A], [], acknowledging=False)
    refused(ErrorCode.share_session_limit_reached, cache.new_context, ("g", "m2"), 0, "c2", [A],
            [], False)
    cache.new_context(KEY, 0, "c1", [B], [], acknowledging=False)  # its own replacement fits


def test_share_acknowledge_moves_the_epoch_on() -> None:
    cache = ShareSessionCache(10)
    refused(ErrorCode.share_session_not_found, cache.acknowledged, KEY, FINAL_EPOCH)
    cache.new_context(KEY, 0, "c1", [A], [], acknowledging=False)
    refused(ErrorCode.invalid_share_session_epoch, cache.acknowledged, KEY, INITIAL_EPOCH)
    refused(ErrorCode.invalid_share_session_epoch, cache.acknowledged, KEY, 5)
    cache.acknowledged(KEY, 1)
    assert cache.sessions[KEY].epoch == 2


@given(st.integers(min_value=-1, max_value=MAX_EPOCH))
def test_the_next_epoch_is_positive_or_final(epoch: int) -> None:
    following = next_epoch(epoch)
    assert following == FINAL_EPOCH if epoch < 0 else 1 <= following <= MAX_EPOCH
    assert following == (epoch + 1 if 0 <= epoch < MAX_EPOCH else following)
