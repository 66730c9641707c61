"""Kafka's own command-line tools (the main classes of Kafka's bin/*.sh scripts), run in
batches: `odradek.jvm.tools.RunTools` calls each tool's `main` in one JVM, so that a batch
pays for one JVM start."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.jvm_toolchain import run_java

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "kafka.admin.ConfigCommand"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
ACLS = "org.apache.kafka.tools.AclCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"


@dataclass
class Step:
    """One tool run: its name in the results, its main class, its arguments and stdin."""
    name: str
    main: str
    args: list[str]
    stdin: str = ""
    timeout_s: int = 120


@dataclass
class Outcome:
    name: str
    exit: int
    stdout: str
    stderr: str
    lines: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = self.stdout.splitlines()

    def ok(self) -> Outcome:
        """Itself, once its exit status was 0 (or an error with its output)."""
        assert self.exit == 0, f"{self.name} exited {self.exit}:\n{self.stdout}\n{self.stderr}"
        return self


def run_tools(steps: list[Step], timeout: float = 600.0) -> dict[str, Outcome]:
    """Runs the steps in order in one JVM; their outcomes by name."""
    with tempfile.TemporaryDirectory(prefix="kafka-tools-") as scratch:
        spec, results = Path(scratch) / "spec.json", Path(scratch) / "results.jsonl"
        spec.write_text(json.dumps([vars(step) for step in steps]))
        run = run_java("odradek.jvm.tools.RunTools", str(spec), str(results), timeout=timeout,
                       check=False, jvm_options=["-Xmx384m"])
        lines = results.read_text().splitlines() if results.exists() else []
    outcomes = {o.name: o for o in (Outcome(**json.loads(line)) for line in lines)}
    missing = [step.name for step in steps if step.name not in outcomes]
    assert not missing, f"RunTools stopped before {missing}:\n{run.stdout}\n{run.stderr}"
    return outcomes
