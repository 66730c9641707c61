"""The runner: one scenario's steps against one broker, each response as a plain tree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from odradek.protocol.codec import api_name
from tests.integration.jvm.conformance.plain import plain
from tests.integration.jvm.conformance.steps import ADMIN, Context, Step, resolve
from tests.integration.jvm.conformance.wire import Wire
from tests.waiting import wait_until

SETTLE_TIMEOUT = 60.0
PASSWORDS = {"alice": "alice-secret"}


@dataclass(frozen=True)
class Target:
    """A broker: its PLAINTEXT listener (User:ANONYMOUS, a super user) and its SASL_PLAINTEXT
    listener (PLAIN users)."""

    name: str
    bootstrap: str
    sasl_bootstrap: str


@dataclass(frozen=True)
class Outcome:
    step: Step
    name: str
    version: int
    tree: Any


class Connections:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.open: dict[str, Wire] = {}

    def get(self, conn: str) -> Wire:
        wire = self.open.get(conn)
        if wire is None or wire.closed:
            if conn == ADMIN:
                wire = Wire(self.target.bootstrap)
            else:
                wire = Wire(self.target.sasl_bootstrap)
                wire.login_plain(conn, PASSWORDS[conn])
            self.open[conn] = wire
        return wire

    def close(self) -> None:
        for wire in self.open.values():
            wire.close()


def run(steps: list[Step], target: Target, context: Context, version: int) -> list[Outcome]:
    outcomes = []
    connections = Connections(target)
    try:
        for index, step in enumerate(steps):
            step_version = version if step.version is None else step.version
            body = resolve(step.body, context)
            answers: list[Any] = []

            def answered(step: Step = step, body: Any = body,
                         step_version: int = step_version, answers: list[Any] = answers) -> bool:
                wire = connections.get(step.conn)
                if step.raw is not None:
                    response = wire.call_raw(step.api, step_version, step.raw)
                else:
                    response = wire.call(step.api, step_version, body)
                answers[:] = [response if isinstance(response, str) else plain(response)]
                return step.until is None or bool(step.until(answers[0]))

            wait_until(answered, SETTLE_TIMEOUT,
                       lambda step=step, answers=answers: f"{target.name}: {step} -> {answers}")
            name = step.name or str(index)
            context.responses[name] = answers[0]
            outcomes.append(Outcome(step, f"{name}:{api_name(step.api)}", step_version,
                                    answers[0]))
    finally:
        connections.close()
    return outcomes
