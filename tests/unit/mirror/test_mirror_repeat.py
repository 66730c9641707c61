"""The mirror's periodic jobs (odradek/mirror/service.py `repeat`): a cluster's error is one
log line and a retry; a bug keeps its traceback; a MirrorConfigError ends the job."""

from __future__ import annotations

import asyncio
import logging

import pytest
from confluent_kafka import KafkaError, KafkaException

from odradek.mirror.config import MirrorConfigError
from odradek.mirror.service import repeat


def mirror_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The mirror's records only: a client thread an earlier test left may log too."""
    return [r for r in caplog.records if r.name.startswith("odradek.mirror")]


def run_until_second_call(failure: Exception) -> int:
    """Runs a job failing once with `failure`; the calls made until it succeeded."""
    calls = []

    async def work() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise failure

    asyncio.run(asyncio.wait_for(repeat("job", -1, work), 10))
    return len(calls)


def test_a_clusters_timeout_is_one_line_and_retried(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "odradek.mirror")
    timed_out = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed while waiting"))
    assert run_until_second_call(timed_out) == 2
    (record,) = mirror_records(caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage().startswith("job failed: KafkaError{code=_TIMED_OUT")


def test_a_bug_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "odradek.mirror")
    assert run_until_second_call(ValueError("a bug")) == 2
    (record,) = mirror_records(caplog)
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_a_config_error_ends_the_job() -> None:
    with pytest.raises(MirrorConfigError):
        run_until_second_call(MirrorConfigError("bad"))
