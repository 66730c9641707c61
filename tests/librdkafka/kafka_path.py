"""A Kafka installation's layout for librdkafka's tests (`KAFKA_PATH`): `bin/kafka-*.sh`
wrappers that run Kafka's tools from the pinned jars of tests/jvm (the classes Kafka's own
bin scripts run), `bin/kafka-run-class.sh` (which honours `CLASSPATH`, as Kafka's does: the
tests' Java helpers run through it) and `libs/` holding the jars."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests import jvm_toolchain

TOOLS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-acls.sh": "org.apache.kafka.tools.AclCommand",
    "kafka-configs.sh": "kafka.admin.ConfigCommand",
    "kafka-consumer-groups.sh": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-console-producer.sh": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer.sh": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-delete-records.sh": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-transactions.sh": "org.apache.kafka.tools.TransactionsCommand",
}
"""Each script and the main class Kafka's own bin/ script of that name runs."""


def make_kafka_path(root: Path) -> Path:
    """Writes the installation under `root` and returns it."""
    bin_dir, libs = root / "bin", root / "libs"
    bin_dir.mkdir(parents=True, exist_ok=True)
    libs.mkdir(exist_ok=True)
    jars = [Path(p) for p in jvm_toolchain.kafka_classpath().split(":") if p]
    for jar in jars:
        link = libs / jar.name
        if not link.exists():
            link.symlink_to(jar)
    java = shlex.join(jvm_toolchain.java_command("MAIN")[:-3])  # java and its options
    classpath = ":".join(str(jar) for jar in jars)
    _script(bin_dir / "kafka-run-class.sh",
            f'exec {java} -cp "${{CLASSPATH:+$CLASSPATH:}}{classpath}" "$@"')
    for name, main_class in TOOLS.items():
        _script(bin_dir / name, f'exec "$(dirname "$0")/kafka-run-class.sh" {main_class} "$@"')
    return root


def _script(path: Path, command: str) -> None:
    path.write_text(f"#!/bin/sh\n{command}\n")
    path.chmod(0o755)
