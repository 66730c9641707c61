"""Start-up configuration: bad configs stop the process at once with a message naming the
problem; a valid .properties file is honoured; a corrupt metadata tail is cut off and the good
records before it are kept."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from odradek.controller.raft_store import LOG_FILE
from tests.integration.broker_process import ODRADEK, BrokerProcess, free_port
from tests.integration.raw_client import RawClient, batch_of

TIMEOUT = 15.0
EXIT_TIMEOUT = 60.0
"""A process that has not exited by then is serving: the bad config was accepted."""
STATIC = ConfigSource.STATIC_BROKER_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value


def start_expecting_failure(data_dir: Path, *args: str) -> str:
    """Run `odradek dev` with `args`; returns its output once it has exited non-zero."""
    command = [*ODRADEK, "dev", "--port", str(free_port()), "--data-dir", str(data_dir), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=EXIT_TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Traceback" not in output
    assert "invalid configuration" in output
    assert not data_dir.exists()  # refused before anything was written
    return output


@pytest.mark.parametrize("override, message", [
    ("no.such.config=1", "Unknown broker config(s): no.such.config"),
    ("num.partitions=abc", "Invalid value abc for configuration num.partitions"),
    ("log.retention.ms=-5", "Invalid value -5 for configuration log.retention.ms"),
    ("log.message.timestamp.type=WallClock",
     "Invalid value WallClock for configuration log.message.timestamp.type"),
    ("socket.request.max.bytes=0", "Invalid value 0 for configuration socket.request.max.bytes"),
])
def test_bad_override_exits_naming_the_key(tmp_path: Path, override: str, message: str) -> None:
    output = start_expecting_failure(tmp_path / "data", "--override", override)
    assert message in output


@pytest.mark.parametrize("lines, named", [
    (["num.partitions=2", "this line has no separator"], "server.properties:2"),
    (["# comment", "log.segment.bytes = tiny"], "log.segment.bytes"),
    (["log.retention.hours=soon"], "log.retention.hours"),
    (["not.a.broker.config: 1"], "not.a.broker.config"),
])
def test_bad_properties_file_exits_naming_the_problem(
    tmp_path: Path, lines: list[str], named: str
) -> None:
    path = tmp_path / "server.properties"
    path.write_text("\n".join(lines) + "\n")
    output = start_expecting_failure(tmp_path / "data", "--config", str(path))
    assert named in output


def test_missing_properties_file_exits(tmp_path: Path) -> None:
    missing = tmp_path / "missing.properties"
    output = start_expecting_failure(tmp_path / "data", "--config", str(missing))
    assert str(missing) in output


class ConfigFileBroker(BrokerProcess):
    """A broker started with `--config <file>` as well as the harness's own flags."""

    def __init__(self, root: Path, config_file: Path, overrides: dict[str, str]) -> None:
        super().__init__(root / "data", root / "broker.log", overrides)
        self.config_file = config_file

    def command(self) -> list[str]:
        return [*super().command(), "--config", str(self.config_file)]


@pytest.fixture
def file_broker(tmp_path: Path) -> Iterator[ConfigFileBroker]:
    config_file = tmp_path / "server.properties"
    config_file.write_text(
        "# Odradek test broker\n"
        "! a comment in the other style\n"
        "\n"
        "log.retention.hours=5\n"
        "num.partitions: 3\n"
        "  message.max.bytes = 2000000  \n"
        "log.segment.bytes=10485760\n"
    )
    process = ConfigFileBroker(tmp_path, config_file, {"log.segment.bytes": "20971520"})
    process.start()
    yield process
    if process.alive():
        process.stop()


def test_properties_file_is_honoured(file_broker: ConfigFileBroker) -> None:
    admin = AdminClient({"bootstrap.servers": file_broker.bootstrap})
    resource = ConfigResource(ResourceType.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT)

    def value_and_source(name: str) -> tuple[str, int]:
        entry = configs[name]
        source = entry.source
        return entry.value, int(source.value if isinstance(source, ConfigSource) else source)

    # As Kafka: log.retention.hours is reported under its own name, log.retention.ms as null.
    assert value_and_source("log.retention.hours") == ("5", STATIC)
    assert value_and_source("log.retention.ms") == (None, DEFAULT)
    assert value_and_source("num.partitions") == ("3", STATIC)
    assert value_and_source("message.max.bytes") == ("2000000", STATIC)
    assert value_and_source("log.segment.bytes") == ("20971520", STATIC)  # --override wins
    assert value_and_source("log.roll.ms") == (None, DEFAULT)

    client = RawClient(file_broker.bootstrap)
    try:
        (topic,) = client.metadata(["auto-created"], auto_create=True).topics
    finally:
        client.close()
    assert topic.error_code == 0
    assert len(topic.partitions) == 3
    topic_resource = ConfigResource(ResourceType.TOPIC, "auto-created")
    retention = admin.describe_configs([topic_resource])[topic_resource].result(TIMEOUT)
    assert retention["retention.ms"].value == str(5 * 3_600_000)


# --- corrupt metadata ------------------------------------------------------------------


def topics(admin: AdminClient) -> dict[str, int]:
    """Topic name -> partition count."""
    return {name: len(meta.partitions)
            for name, meta in admin.list_topics(timeout=TIMEOUT).topics.items()}


def test_garbage_after_the_metadata_log_entries_is_cut_off(fresh_broker: BrokerProcess) -> None:
    fresh_broker.start()
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
    futures = admin.create_topics([NewTopic("kept-a", 2, 1),
                                   NewTopic("kept-b", 1, 1, config={"retention.ms": "3600000"})])
    for future in futures.values():
        future.result(TIMEOUT)
    client = RawClient(fresh_broker.bootstrap)
    try:
        produced = client.produce_partition("kept-a", 1, batch_of([(b"k", b"survives")]))
        assert produced.error_code == 0
    finally:
        client.close()
    assert fresh_broker.stop() == 0
    records = fresh_broker.data_dir / "__cluster_metadata-0" / LOG_FILE
    good = records.read_bytes()
    garbage = b"\x00\x00\x00\x40\xff not a frame at all" + b'{"type": "TopicRecord", "name": "torn'
    with records.open("ab") as file:
        file.write(garbage)

    fresh_broker.start()
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})

    assert topics(admin) == {"kept-a": 2, "kept-b": 1}
    data = records.read_bytes()  # a new term's no-op and the broker's registration follow
    assert data.startswith(good) and b"not a frame" not in data
    assert f"{len(garbage)} bytes of torn or corrupt tail" in fresh_broker.logs()
    resource = ConfigResource(ResourceType.TOPIC, "kept-b")
    kept_b = admin.describe_configs([resource])[resource].result(TIMEOUT)
    assert kept_b["retention.ms"].value == "3600000"
    client = RawClient(fresh_broker.bootstrap)
    try:
        fetched = client.fetch_partition("kept-a", 1, 0)
        assert fetched.error_code == 0 and b"survives" in fetched.records
    finally:
        client.close()

    admin.create_topics([NewTopic("created-after", 1, 1)])["created-after"].result(TIMEOUT)
    fresh_broker.restart()
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
    assert topics(admin) == {"kept-a": 2, "kept-b": 1, "created-after": 1}


def test_a_corrupt_metadata_snapshot_stops_start_up_with_a_clear_message(
    fresh_broker: BrokerProcess,
) -> None:
    fresh_broker.overrides["metadata.log.max.record.bytes.between.snapshots"] = "1"
    fresh_broker.start()
    admin = AdminClient({"bootstrap.servers": fresh_broker.bootstrap})
    admin.create_topics([NewTopic("snapshotted", 1, 1)])["snapshotted"].result(TIMEOUT)
    assert fresh_broker.stop() == 0
    (snapshot,) = (fresh_broker.data_dir / "__cluster_metadata-0").glob("*.checkpoint")
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 0xFF
    snapshot.write_bytes(bytes(data))

    with pytest.raises(RuntimeError, match="exited with 1") as failed:
        fresh_broker.start()
    assert "odradek: cannot start: " in str(failed.value)
    assert snapshot.name in str(failed.value) and "Traceback" not in str(failed.value)
