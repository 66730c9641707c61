"""`odradek storage format`: the directories it writes, the bootstrap records it leaves for the
first active controller (never a password), and kafka-storage's refusals."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from odradek.cli.main import main
from odradek.cli.tools.storage import format_storage
from odradek.config.kafka_configs import BrokerConfig
from odradek.config.listeners import resolve
from odradek.controller.app import ControllerApp, metadata_dir
from odradek.log.meta_properties import new_cluster_id, read_bootstrap, read_or_create_cluster_id
from odradek.metadata.records import MetadataRecord, UserScramCredentialRecord
from odradek.metadata.scram_bootstrap import FormatterError

SCRAM = "SCRAM-SHA-512=[name=broker,password=broker-secret]"


def scram_user(record: MetadataRecord) -> str:
    assert isinstance(record, UserScramCredentialRecord)
    return record.name


def controller_config(tmp_path: Path) -> BrokerConfig:
    return BrokerConfig({"process.roles": "controller", "node.id": "1001",
                         "listeners": "CONTROLLER://127.0.0.1:0",
                         "controller.listener.names": "CONTROLLER",
                         "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}",
                         "metadata.log.dir": str(tmp_path / "meta")})


def test_format_writes_every_directory_and_the_bootstrap_records(tmp_path: Path) -> None:
    config = controller_config(tmp_path)
    cluster_id = new_cluster_id()
    lines = format_storage(config, cluster_id, [SCRAM], ignore_formatted=False)
    assert lines == [f"Formatting data directory {tmp_path / 'a'}.",
                     f"Formatting data directory {tmp_path / 'b'}.",
                     f"Formatting metadata directory {tmp_path / 'meta'}."]
    for name in ("a", "b", "meta"):
        assert read_or_create_cluster_id(tmp_path / name, 1001, None, False) == cluster_id
    (record,) = read_bootstrap(tmp_path / "meta")
    assert isinstance(record, UserScramCredentialRecord)
    assert (record.name, record.mechanism) == ("broker", 2)
    assert b"broker-secret" not in (tmp_path / "meta" / "bootstrap.checkpoint").read_bytes()
    assert read_bootstrap(tmp_path / "a") == []


def test_the_controller_reads_the_bootstrap_records_and_the_cluster_id(tmp_path: Path) -> None:
    config = controller_config(tmp_path)
    cluster_id = new_cluster_id()
    format_storage(config, cluster_id, [SCRAM], ignore_formatted=False)
    app = ControllerApp(config, resolve(config, frozenset({"controller"})))
    assert app.cluster_id == cluster_id
    assert app.bootstrap == read_bootstrap(tmp_path / "meta")
    assert [scram_user(r) for r in app.bootstrap] == ["broker"]
    assert metadata_dir(config).parent == tmp_path / "meta"


def test_a_formatted_directory_is_refused_unless_ignored(tmp_path: Path) -> None:
    config = controller_config(tmp_path)
    cluster_id = new_cluster_id()
    format_storage(BrokerConfig({**config.static_raw, "log.dirs": str(tmp_path / "a")}),
                   cluster_id, [], ignore_formatted=False)
    with pytest.raises(FormatterError) as raised:
        format_storage(config, cluster_id, [], ignore_formatted=False)
    assert str(raised.value) == (f"Log directory {tmp_path / 'a'} is already formatted. Use "
                                 "--ignore-formatted to ignore this directory and format the "
                                 "others.")
    assert format_storage(config, cluster_id, [], ignore_formatted=True) == [
        f"Formatting data directory {tmp_path / 'b'}."]
    assert format_storage(config, cluster_id, [], ignore_formatted=True) == [
        "All of the log directories are already formatted."]


def test_the_cli_takes_kafka_storages_arguments(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"process.roles=controller\nnode.id=1001\nlog.dir={tmp_path / 'd'}\n")
    assert main(["storage", "random-uuid"]) == 0
    cluster_id = capsys.readouterr().out.strip()
    assert len(cluster_id) == 22
    assert main(["storage", "format", "-c", str(properties), "-t", cluster_id,
                 "-S", SCRAM, "--add-scram", "SCRAM-SHA-256=[name=admin,password=a]"]) == 0
    assert [scram_user(r) for r in read_bootstrap(tmp_path / "d")] == ["broker", "admin"]
    assert main(["storage", "format", "--config", str(properties), "--cluster-id",
                 cluster_id]) == 1
    assert "is already formatted" in capsys.readouterr().err
    assert main(["storage", "format", "-c", str(properties), "-t", cluster_id, "-g"]) == 0


@pytest.mark.parametrize(("cluster_id", "scram", "message"), [
    ("my-cluster", [], "Cluster ID string my-cluster does not appear to be a valid UUID"),
    (None, ["SCRAM-SHA-512=[name=x]"], "You must supply one of 'password' or 'saltedpassword'"),
])
def test_bad_arguments_fail_before_anything_is_written(
        tmp_path: Path, cluster_id: str | None, scram: list[str], message: str) -> None:
    config = controller_config(tmp_path)
    with pytest.raises(FormatterError, match=message):
        format_storage(config, cluster_id or new_cluster_id(), scram, ignore_formatted=False)
    assert not (tmp_path / "a").exists()


def test_a_new_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """`storage format -t <id>` would read such an id as an option (the CI failure of
    test_the_cli_takes_kafka_storages_arguments, 1 id in 64); Kafka draws again."""
    dashed = uuid.UUID(bytes=bytes([0xF8]) + bytes(15))  # base64 "-A..."
    plain = uuid.UUID(bytes=bytes([0x04]) + bytes(15))
    draws = iter([dashed, dashed, plain])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))
    assert new_cluster_id() == "BAAAAAAAAAAAAAAAAAAAAA"
