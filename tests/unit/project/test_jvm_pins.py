"""The JVM toolchain's pins agree with the Python side: Spark's Kafka connector is built for
the PySpark that pyproject.toml installs."""

from __future__ import annotations

import re
import tomllib

from tests.jvm_toolchain import JVM, ROOT


def test_spark_connector_matches_the_pyspark_pin() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [spec for spec in project["optional-dependencies"]["spark"]
            if spec.startswith("pyspark")]
    pom_version = re.search(r"<spark.version>(.+)</spark.version>",
                            (JVM / "pom.xml").read_text())
    assert pom_version is not None
    assert pins == [f"pyspark[sql]=={pom_version.group(1)}"]
