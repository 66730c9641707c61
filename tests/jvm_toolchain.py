"""Kafka's own software for the tests: the pinned jars of `tests/jvm/` (resolved and built by
`scripts/bootstrap.sh --dev`), run as Java programs, Kafka's tools and Kafka's broker.

A test that needs them carries the `jvm` marker and calls `require()`: without the built
toolchain it skips, except in CI, where it fails."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JVM = ROOT / "tests" / "jvm"
KAFKA_JAR = JVM / "kafka" / "target" / "odradek-jvm-kafka.jar"
KAFKA_CLASSPATH = JVM / "kafka" / "target" / "classpath.txt"
SPARK_KAFKA_CLASSPATH = JVM / "spark-kafka" / "target" / "classpath.txt"
APACHE_KAFKA = ROOT / "scripts" / "apache_kafka.sh"


def require() -> None:
    """Skips (fails in CI) when the JVM toolchain was not built."""
    missing = [p for p in (KAFKA_JAR, KAFKA_CLASSPATH, SPARK_KAFKA_CLASSPATH) if not p.exists()]
    if not missing:
        return
    message = (f"the JVM toolchain is not built ({missing[0]} is missing): "
               "run bash scripts/bootstrap.sh --dev")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def kafka_classpath() -> str:
    """The test programs and Kafka's jars (clients, tools, Streams, MM2, the broker)."""
    return f"{KAFKA_JAR}{os.pathsep}{KAFKA_CLASSPATH.read_text().strip()}"


def spark_kafka_jars() -> list[str]:
    """Spark's Kafka connector and those of its dependencies PySpark does not ship in
    pyspark/jars (compared by artifact name, whatever the versions), for `spark.jars`: one
    copy of each artifact on the classpath."""
    import pyspark

    shipped = {artifact(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [jar for jar in SPARK_KAFKA_CLASSPATH.read_text().strip().split(os.pathsep)
            if artifact(Path(jar)) not in shipped]


def spark_kafka_conf() -> dict[str, str]:
    """The Spark conf that puts the connector on a session's classpath (it must be given to
    the session that starts the JVM), or none when the toolchain is not built."""
    if not SPARK_KAFKA_CLASSPATH.exists():
        return {}
    return {"spark.jars": ",".join(spark_kafka_jars())}


def artifact(jar: Path) -> str:
    """A jar's artifact name: `kafka-clients` of `kafka-clients-3.9.2.jar`."""
    match = re.fullmatch(r"(.+?)-\d+\..*\.jar", jar.name)
    return match.group(1) if match else jar.stem


def java_command(main_class: str, *args: str, jvm_options: Sequence[str] = ()) -> list[str]:
    """The command that runs `main_class` (a test program or one of Kafka's tools)."""
    return ["java", "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", *jvm_options,
            "-cp", kafka_classpath(), main_class, *args]


def run_java(main_class: str, *args: str, timeout: float = 120.0, check: bool = True,
             input: str | None = None, jvm_options: Sequence[str] = (),
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a Java program to its end; with `check`, a non-zero exit raises with its output."""
    result = subprocess.run(java_command(main_class, *args, jvm_options=jvm_options),
                            capture_output=True, text=True, timeout=timeout, input=input,
                            env=None if env is None else {**os.environ, **env})
    if check and result.returncode != 0:
        raise AssertionError(f"{main_class} {' '.join(args)} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result
