"""Certificates and SCRAM users handed to the images as mounted files (a Kubernetes Secret, a
compose secret or a read-only bind mount), so that neither keys nor passwords sit in an image
or in an environment variable:

- ODRADEK_TLS_DIR: a directory holding `ca.crt`, `tls.crt` and `tls.key`, as a
  kubernetes.io/tls Secret written by cert-manager holds them. The entrypoint writes the key
  and chain into one private PEM key store (Kafka's `ssl.keystore.location` with
  `ssl.keystore.type=PEM` holds both) and keeps it in step with the mounted files, so a
  renewed certificate is served without a restart; `ca.crt` is the trust store.
- ODRADEK_SCRAM_USERS_DIR: one file per user, named after the user and holding the
  password. A node with the controller role formats its storage with them on first start
  (`odradek storage format --add-scram`, Kafka's kafka-storage syntax), so the first
  controller leader writes them into the metadata log as SCRAM-SHA-256 and SCRAM-SHA-512
  credentials. Users added later are added with AlterUserScramCredentials."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from odradek.config.kafka_configs import InvalidConfigError

log = logging.getLogger("odradek.image.entrypoint")

TLS_DIR_VARIABLE = "ODRADEK_TLS_DIR"
SCRAM_USERS_VARIABLE = "ODRADEK_SCRAM_USERS_DIR"
VARIABLES = frozenset({TLS_DIR_VARIABLE, SCRAM_USERS_VARIABLE})
"""The entrypoint's own variables: not configs."""
CA, CERTIFICATE, KEY = "ca.crt", "tls.crt", "tls.key"
KEY_STORE = "keystore.pem"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
UNQUOTABLE = frozenset('",[]\r\n')
"""Characters an `--add-scram` value cannot carry (its syntax has no escapes)."""
FOLLOW_INTERVAL_S = 10.0


def tls_configs(tls_dir: Path, private_dir: Path) -> dict[str, str]:
    """The SSL configs of the certificates in `tls_dir`; writes the key store they name."""
    missing = [name for name in (CA, CERTIFICATE, KEY) if not (tls_dir / name).is_file()]
    if missing:
        raise InvalidConfigError(f"{TLS_DIR_VARIABLE}: {tls_dir} has no {', '.join(missing)} "
                                 f"(it needs {CA}, {CERTIFICATE} and {KEY})")
    key_store = private_dir / KEY_STORE
    write_key_store(tls_dir, key_store)
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(key_store),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls_dir / CA)}


def write_key_store(tls_dir: Path, key_store: Path) -> bool:
    """Writes `tls.key` then `tls.crt` to `key_store` (mode 0600, replaced whole) unless it
    already holds them; True when it wrote."""
    text = (f"{(tls_dir / KEY).read_text().strip()}\n"
            f"{(tls_dir / CERTIFICATE).read_text().strip()}\n")
    try:
        if key_store.read_text() == text:
            return False
    except FileNotFoundError:
        pass
    partial = key_store.with_name(f".{key_store.name}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(text)
    partial.replace(key_store)
    return True


def follow_key_store(tls_dir: Path, key_store: Path, interval_s: float = FOLLOW_INTERVAL_S
                     ) -> threading.Event:
    """A daemon thread that rewrites `key_store` when the mounted key or certificate changes
    (the listeners then load it for new connections); set the event to stop it."""
    stop = threading.Event()

    def follow() -> None:
        while not stop.wait(interval_s):
            try:
                if write_key_store(tls_dir, key_store):
                    log.info("%s: the certificate in %s changed; key store rewritten",
                             TLS_DIR_VARIABLE, tls_dir)
            except OSError as error:  # a Secret update in progress: try again later
                log.warning("%s: cannot read %s: %s", TLS_DIR_VARIABLE, tls_dir, error)

    threading.Thread(target=follow, name="key-store-follower", daemon=True).start()
    return stop


def scram_users(users_dir: Path) -> dict[str, str]:
    """User name -> password from the files of `users_dir` (a trailing newline is not part
    of the password; Kubernetes' hidden `..data` entries are skipped)."""
    if not users_dir.is_dir():
        raise InvalidConfigError(f"{SCRAM_USERS_VARIABLE}: {users_dir} is not a directory")
    users: dict[str, str] = {}
    for path in sorted(users_dir.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        password = path.read_text().rstrip("\r\n")
        if not password:
            raise InvalidConfigError(f"{SCRAM_USERS_VARIABLE}: {path} is empty: it must hold "
                                     f"the password of user {path.name}")
        for what, value in (("user name", path.name), ("password", password)):
            bad = sorted(set(value) & UNQUOTABLE)
            if bad:
                raise InvalidConfigError(f"{SCRAM_USERS_VARIABLE}: the {what} in {path} "
                                         f"contains {''.join(bad)!r}, which --add-scram "
                                         "cannot carry")
        users[path.name] = password
    if not users:
        raise InvalidConfigError(f"{SCRAM_USERS_VARIABLE}: {users_dir} holds no user file")
    return users


def add_scram_arguments(users: Mapping[str, str]) -> list[str]:
    """`--add-scram` arguments for every user, with every SCRAM mechanism."""
    arguments: list[str] = []
    for name, password in users.items():
        for mechanism in SCRAM_MECHANISMS:
            arguments += ["--add-scram", f'{mechanism}=[name={name},password="{password}"]']
    return arguments


def format_argv(config_file: Path, cluster_id: str, users: Mapping[str, str]) -> list[str]:
    """The `odradek storage format` command that records `users` on a node's first start and
    leaves formatted storage as it is."""
    # `=`: a cluster id may begin with "-" (URL-safe base64)
    return ["storage", "format", "--config", str(config_file), f"--cluster-id={cluster_id}",
            "--ignore-formatted", *add_scram_arguments(users)]


def write_properties(configs: Mapping[str, str], path: Path) -> None:
    """`configs` as a private .properties file (for `storage format --config`), written as
    `odradek.config.kafka_configs.load_properties` reads it back: one `name=value` a line."""
    for name, value in configs.items():
        if "\n" in value or "\r" in value:
            raise InvalidConfigError(f"{name}: a value cannot span lines")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.writelines(f"{name}={value}\n" for name, value in sorted(configs.items()))
