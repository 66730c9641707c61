"""Certificates and SCRAM users given to the images as mounted files
(`odradek/image/secrets.py`): the key store the entrypoint writes from a
kubernetes.io/tls Secret's files and keeps in step with them, the users of a Secret mounted
as a directory, and the `storage format --add-scram` command made of them."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.image import secrets
from odradek.image.entrypoint import commands, node_argv
from odradek.net.tls import server_context, settings
from tests.certificates import Authority
from tests.waiting import wait_until

SERVICES = Path(__file__).resolve().parents[3] / "services"


def tls_secret(directory: Path, authority: Authority, name: str = "broker-1") -> Path:
    """A directory as a kubernetes.io/tls Secret mounts: ca.crt, tls.crt, tls.key."""
    issued = authority.issue(name, ("broker-1", "localhost"))
    directory.mkdir(exist_ok=True)
    (directory / "ca.crt").write_text(authority.pem)
    (directory / "tls.crt").write_text(issued.certificate_pem)
    (directory / "tls.key").write_text(issued.key_pem)
    return directory


def test_tls_dir_becomes_a_pem_key_store_a_listener_loads(tmp_path: Path) -> None:
    authority = Authority()
    mounted = tls_secret(tmp_path / "tls", authority)
    private = tmp_path / "private"
    private.mkdir()
    configs = secrets.tls_configs(mounted, private)
    assert configs == {"ssl.keystore.type": "PEM",
                       "ssl.keystore.location": str(private / "keystore.pem"),
                       "ssl.truststore.type": "PEM",
                       "ssl.truststore.location": str(mounted / "ca.crt")}
    key_store = private / "keystore.pem"
    assert stat.S_IMODE(key_store.stat().st_mode) == 0o600
    text = key_store.read_text()
    assert text.index("PRIVATE KEY") < text.index("BEGIN CERTIFICATE")
    config = BrokerConfig({"listeners": "SSL://:9093", "ssl.client.auth": "required",
                           **configs})
    server_context(settings(config, "SSL"))  # loads the key store and the trust store


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    mounted = tls_secret(tmp_path / "tls", Authority())
    (mounted / "tls.key").unlink()
    with pytest.raises(InvalidConfigError, match=r"ODRADEK_TLS_DIR: .*/tls has no tls.key"):
        secrets.tls_configs(mounted, tmp_path)


def test_a_renewed_certificate_is_followed(tmp_path: Path) -> None:
    authority = Authority()
    mounted = tls_secret(tmp_path / "tls", authority)
    key_store = tmp_path / "keystore.pem"
    assert secrets.write_key_store(mounted, key_store)
    assert not secrets.write_key_store(mounted, key_store)
    stop = secrets.follow_key_store(mounted, key_store, interval_s=0.05)
    try:
        renewed = tls_secret(mounted, authority)
        expected = renewed / "tls.crt"
        wait_until(lambda: expected.read_text().strip() in key_store.read_text(), 10,
                   "the renewed certificate in the key store")
    finally:
        stop.set()


def users_dir(tmp_path: Path, users: dict[str, str]) -> Path:
    directory = tmp_path / "users"
    directory.mkdir()
    for name, password in users.items():
        (directory / name).write_text(password)
    return directory


def test_users_come_from_one_file_each(tmp_path: Path) -> None:
    directory = users_dir(tmp_path, {"admin": "admin-secret\n", "alice": "s3cr=t x"})
    (directory / "..data").mkdir()  # what a Kubernetes Secret volume holds besides its keys
    (directory / ".hidden").write_text("not a user")
    assert secrets.scram_users(directory) == {"admin": "admin-secret", "alice": "s3cr=t x"}


@pytest.mark.parametrize(("users", "message"), [
    ({}, "holds no user file"),
    ({"alice": "\n"}, "is empty: it must hold the password of user alice"),
    ({"alice": 'say "hi"'}, "the password in .*alice contains '\"'"),
    ({"alice": "a,b"}, "the password in .*alice contains ','"),
])
def test_unusable_user_files_are_refused(tmp_path: Path, users: dict[str, str],
                                         message: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"ODRADEK_SCRAM_USERS_DIR: .*{message}"):
        secrets.scram_users(users_dir(tmp_path, users))


def test_format_command_adds_every_user_with_both_mechanisms(tmp_path: Path) -> None:
    argv = secrets.format_argv(tmp_path / "f.properties", "-kU3OEVBNTcwNTJENDM2Qk",
                               {"admin": "a-pw", "broker": "b-pw"})
    assert argv == [
        "storage", "format", "--config", str(tmp_path / "f.properties"),
        "--cluster-id=-kU3OEVBNTcwNTJENDM2Qk", "--ignore-formatted",
        "--add-scram", 'SCRAM-SHA-256=[name=admin,password="a-pw"]',
        "--add-scram", 'SCRAM-SHA-512=[name=admin,password="a-pw"]',
        "--add-scram", 'SCRAM-SHA-256=[name=broker,password="b-pw"]',
        "--add-scram", 'SCRAM-SHA-512=[name=broker,password="b-pw"]']


def test_properties_are_written_privately_as_they_are_read(tmp_path: Path) -> None:
    path = tmp_path / "format.properties"
    secrets.write_properties({"node.id": "1", "listeners": "CONTROLLER://:9093"}, path)
    assert path.read_text() == "listeners=CONTROLLER://:9093\nnode.id=1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with pytest.raises(InvalidConfigError, match="node.id: a value cannot span lines"):
        secrets.write_properties({"node.id": "1\n2"}, path)


def test_the_entrypoints_variables_are_not_configs_and_variables_win(tmp_path: Path) -> None:
    env = {"ODRADEK_CONFIG_FILE": str(SERVICES / "broker" / "server.properties"),
           "ODRADEK_CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk",
           "ODRADEK_TLS_DIR": str(tmp_path), "ODRADEK_SCRAM_USERS_DIR": str(tmp_path),
           "ODRADEK_SSL_TRUSTSTORE_LOCATION": "/etc/other-ca.pem"}
    argv = node_argv(env, defaults={"ssl.truststore.location": "/tls/ca.crt",
                                    "ssl.keystore.type": "PEM"})
    assert argv[3:] == ["--override=cluster.id=MkU3OEVBNTcwNTJENDM2Qk",
                        "--override=ssl.keystore.type=PEM",
                        "--override=ssl.truststore.location=/etc/other-ca.pem"]


def test_a_controller_formats_with_the_users_then_runs_and_a_broker_just_runs(
        tmp_path: Path) -> None:
    mounted = tls_secret(tmp_path / "tls", Authority())
    users = users_dir(tmp_path, {"admin": "admin-secret"})
    private = tmp_path / "private"
    private.mkdir()
    env = {"ODRADEK_CONFIG_FILE": str(SERVICES / "controller" / "server.properties"),
           "ODRADEK_CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qk", "ODRADEK_NODE_ID": "1001",
           "ODRADEK_CONTROLLER_QUORUM_VOTERS": "1001@c1:9093",
           "ODRADEK_TLS_DIR": str(mounted), "ODRADEK_SCRAM_USERS_DIR": str(users)}
    format_step, node = commands(env, private)
    assert format_step[:3] == ["storage", "format", "--config"]
    assert format_step[4:] == ["--cluster-id=MkU3OEVBNTcwNTJENDM2Qk", "--ignore-formatted",
                               "--add-scram", 'SCRAM-SHA-256=[name=admin,password="admin-secret"]',
                               "--add-scram", 'SCRAM-SHA-512=[name=admin,password="admin-secret"]']
    written = (private / "format.properties").read_text().splitlines()
    assert {"process.roles=controller", "node.id=1001", "log.dirs=/var/lib/odradek/data",
            f"ssl.keystore.location={private}/keystore.pem"} <= set(written)
    assert not any("admin-secret" in line for line in written)
    assert node[0] == "controller"
    assert f"--override=ssl.truststore.location={mounted}/ca.crt" in node
    broker = {**env, "ODRADEK_CONFIG_FILE": str(SERVICES / "broker" / "server.properties"),
              "ODRADEK_NODE_ID": "1"}
    (only,) = commands(broker, private)
    assert only[0] == "broker"


def test_the_format_command_parses_a_cluster_id_that_begins_with_a_dash(tmp_path: Path) -> None:
    """`odradek storage format` itself reads the command (its arguments as argparse sees
    them): a cluster id may begin with "-"."""
    from odradek.cli.main import build_parser

    argv = secrets.format_argv(tmp_path / "f.properties", "-kU3OEVBNTcwNTJENDM2Qk",
                               {"admin": "a-pw"})
    args = build_parser().parse_args(argv)
    assert args.cluster_id == "-kU3OEVBNTcwNTJENDM2Qk"
    assert args.add_scram == ['SCRAM-SHA-256=[name=admin,password="a-pw"]',
                              'SCRAM-SHA-512=[name=admin,password="a-pw"]']
