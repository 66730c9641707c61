"""The tests' one wait: it returns once the condition holds, fails naming what it waited
for, retries only the errors it is told to, and starts no check after its deadline."""

from __future__ import annotations

import pytest

from tests.waiting import wait_until


def test_returns_once_the_condition_holds_serving_between_checks() -> None:
    served: list[int] = []
    wait_until(lambda: len(served) >= 3, 5, "three rounds", between=lambda: served.append(1))
    assert served == [1, 1, 1]


def test_fails_at_the_deadline_with_what_it_waited_for() -> None:
    state = {"read": 2}
    with pytest.raises(AssertionError, match=r"not within 0.05s: read 2 of 5"):
        wait_until(lambda: False, 0.05, lambda: f"read {state['read']} of 5", interval=0.01)


def test_no_check_starts_after_the_deadline() -> None:
    checks: list[int] = []

    def condition() -> bool:
        checks.append(1)
        return len(checks) > 1

    with pytest.raises(AssertionError):
        wait_until(condition, 0.05, "a second check", interval=0.1)
    assert checks == [1]


def test_ignored_errors_count_as_not_yet_and_the_last_is_reported() -> None:
    attempts: list[int] = []

    def flaky() -> bool:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError(f"attempt {len(attempts)}")
        return True

    wait_until(flaky, 5, "a connection", interval=0.01, ignoring=ConnectionError)
    assert len(attempts) == 3

    def refused() -> bool:
        raise ConnectionError("refused")

    with pytest.raises(AssertionError, match=r"last error: ConnectionError\('refused'\)"):
        wait_until(refused, 0.05, interval=0.01, ignoring=ConnectionError)


def test_other_errors_fail_at_once() -> None:
    attempts: list[int] = []

    def broken() -> bool:
        attempts.append(1)
        raise ValueError("torn checkpoint")

    with pytest.raises(ValueError, match="torn checkpoint"):
        wait_until(broken, 5, interval=0.01, ignoring=ConnectionError)
    assert attempts == [1]
