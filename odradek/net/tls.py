"""TLS contexts from Kafka's SSL configs (KIP-651 PEM key and trust stores, `ssl.client.auth`,
`ssl.enabled.protocols`, `ssl.cipher.suites`), per listener, for servers and for the
broker's own client connections. A server context follows its key and trust store files: a
changed file is loaded for the next connections, without a restart."""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from odradek.config.kafka_configs import (
    BROKER_CONFIGS,
    BrokerConfig,
    InvalidConfigError,
    Value,
    parse_value,
)

log = logging.getLogger("odradek.net.tls")

PEM = "PEM"
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
               "required": ssl.CERT_REQUIRED}
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True, slots=True)
class TlsSettings:
    """One listener's or client's SSL configs."""

    whose: str
    """Whose configs, as errors name them: `listener <name>`, or a client's name."""
    keystore_type: str
    keystore_location: str | None
    key_password: str | None
    certificate_chain: str | None
    private_key: str | None
    truststore_type: str
    truststore_location: str | None
    truststore_certificates: str | None
    client_auth: str
    enabled_protocols: tuple[str, ...]
    cipher_suites: tuple[str, ...]
    endpoint_identification: str

    @property
    def watched_files(self) -> tuple[str, ...]:
        return tuple(p for p in (self.keystore_location, self.truststore_location) if p)


def settings(config: BrokerConfig, listener: str) -> TlsSettings:
    """The SSL configs of `listener` (its `listener.name.<listener>.ssl.*` overrides first)."""
    return _settings(f"listener {listener}", lambda name: config.for_listener(listener, name))


def client_settings(properties: Mapping[str, str], name: str) -> TlsSettings:
    """The SSL configs of a client's properties (Kafka's client config names and defaults,
    as `odradek/config/kafka_configs.py` defines them); `name` says whose in error messages (`west`,
    `--command-config`)."""
    def value(config: str) -> Value:
        definition = BROKER_CONFIGS[config]
        if config in properties:
            return parse_value(definition, properties[config])
        return definition.default

    return _settings(name, value)


def _settings(whose: str, value: Callable[[str], Value]) -> TlsSettings:
    def text(name: str) -> str | None:
        found = value(name)
        return None if found is None else str(found)

    def items(name: str) -> tuple[str, ...]:
        found = value(name)
        return tuple(found) if isinstance(found, list) else ()

    key_password = text("ssl.key.password") or text("ssl.keystore.password")
    return TlsSettings(
        whose, text("ssl.keystore.type") or "", text("ssl.keystore.location"), key_password,
        text("ssl.keystore.certificate.chain"), text("ssl.keystore.key"),
        text("ssl.truststore.type") or "", text("ssl.truststore.location"),
        text("ssl.truststore.certificates"), text("ssl.client.auth") or "none",
        items("ssl.enabled.protocols"), items("ssl.cipher.suites"),
        text("ssl.endpoint.identification.algorithm") or "")


def _problem(tls: TlsSettings, message: str) -> InvalidConfigError:
    return InvalidConfigError(f"{tls.whose}: {message}")


def _reason(error: Exception) -> str:
    """An error's reason without errno or path (the message names the path itself)."""
    return (error.strerror if isinstance(error, OSError) else None) or str(error)


def _load_key_store(context: ssl.SSLContext, tls: TlsSettings) -> None:
    has_inline = tls.certificate_chain is not None or tls.private_key is not None
    if tls.keystore_location is None and not has_inline:
        return
    if tls.keystore_type != PEM:
        raise _problem(tls, f"ssl.keystore.type {tls.keystore_type} is not supported: set "
                            "ssl.keystore.type=PEM (KIP-651)")
    if has_inline and tls.keystore_location is not None:
        raise _problem(tls, "ssl.keystore.location cannot be set together with "
                            "ssl.keystore.certificate.chain and ssl.keystore.key")
    try:
        if tls.keystore_location is not None:
            context.load_cert_chain(tls.keystore_location, password=tls.key_password)
            return
        if tls.certificate_chain is None or tls.private_key is None:
            raise _problem(tls, "ssl.keystore.certificate.chain and ssl.keystore.key must be "
                                "set together")
        # the ssl module loads keys from files only: a private, short-lived one
        with tempfile.TemporaryDirectory(prefix="odradek-tls-") as directory:
            path = Path(directory) / "keystore.pem"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as file:
                file.write(f"{tls.private_key.strip()}\n{tls.certificate_chain.strip()}\n")
            context.load_cert_chain(path, password=tls.key_password)
    except (OSError, ssl.SSLError) as error:
        where = tls.keystore_location or "(ssl.keystore.certificate.chain, ssl.keystore.key)"
        raise _problem(tls, f"cannot load the key store {where}: {_reason(error)}") from None


def _load_trust_store(context: ssl.SSLContext, tls: TlsSettings) -> bool:
    """Load the trusted certificates; False when none are configured."""
    if tls.truststore_location is None and tls.truststore_certificates is None:
        return False
    if tls.truststore_type != PEM:
        raise _problem(tls, f"ssl.truststore.type {tls.truststore_type} is not supported: set "
                            "ssl.truststore.type=PEM (KIP-651)")
    try:
        if tls.truststore_location is not None:
            context.load_verify_locations(cafile=tls.truststore_location)
        else:
            context.load_verify_locations(cadata=tls.truststore_certificates)
    except (OSError, ssl.SSLError, ValueError) as error:
        where = tls.truststore_location or "(ssl.truststore.certificates)"
        raise _problem(tls, f"cannot load the trust store {where}: {_reason(error)}"
                       ) from None
    return True


def _restrict(context: ssl.SSLContext, tls: TlsSettings) -> None:
    versions = sorted(VERSIONS[p] for p in tls.enabled_protocols if p in VERSIONS)
    if not versions:
        raise _problem(tls, "ssl.enabled.protocols enables no TLS version Odradek serves "
                            f"({', '.join(VERSIONS)})")
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    if tls.cipher_suites:
        try:
            context.set_ciphers(":".join(tls.cipher_suites))
        except ssl.SSLError:
            raise _problem(tls, "ssl.cipher.suites names no cipher suite OpenSSL knows: "
                                f"{','.join(tls.cipher_suites)}") from None


def server_context(tls: TlsSettings) -> ssl.SSLContext:
    """A server context; raises InvalidConfigError (one line) on a bad store or config."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _restrict(context, tls)
    if tls.keystore_location is None and tls.certificate_chain is None:
        raise _problem(tls, "an SSL listener needs a key store: ssl.keystore.location, or "
                            "ssl.keystore.certificate.chain and ssl.keystore.key")
    _load_key_store(context, tls)
    trusted = _load_trust_store(context, tls)
    context.verify_mode = CLIENT_AUTH[tls.client_auth]
    if tls.client_auth != "none" and not trusted:
        raise _problem(tls, f"ssl.client.auth={tls.client_auth} needs a trust store: "
                            "ssl.truststore.location or ssl.truststore.certificates")
    return context


def client_context(tls: TlsSettings) -> ssl.SSLContext:
    """The context the broker connects to other brokers with: it trusts the trust store,
    checks host names unless ssl.endpoint.identification.algorithm is empty, and presents
    the key store (for listeners with ssl.client.auth)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _restrict(context, tls)
    if not _load_trust_store(context, tls):
        context.load_default_certs()
    context.check_hostname = tls.endpoint_identification.lower() == "https"
    _load_key_store(context, tls)
    return context


class StoreFiles:
    """A listener's key and trust store files, and whether any changed (modification time
    or size) since the last look."""

    def __init__(self, tls: TlsSettings) -> None:
        self.paths = tls.watched_files
        self._stamps = self._read()

    def _read(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in self.paths:
            try:
                stat = os.stat(path)
            except OSError:
                stamps.append((-1, -1))
                continue
            stamps.append((stat.st_mtime_ns, stat.st_size))
        return tuple(stamps)

    def changed(self) -> bool:
        stamps = self._read()
        if stamps == self._stamps:
            return False
        self._stamps = stamps
        return True


class ReloadingServerContext:
    """A listener's server context that follows its store files: `check` (called now and
    then) builds a new context when a file changed, and new connections use it (the TLS
    server-name callback hands each handshake the current context)."""

    def __init__(self, tls: TlsSettings, build: Callable[[TlsSettings], ssl.SSLContext]
                 = server_context) -> None:
        self.tls = tls
        self._build = build
        self._files = StoreFiles(tls)
        self.context = build(tls)
        """The context the server listens with; its handshakes switch to `current`."""
        self.current = self.context
        self.context.sni_callback = self._select
        self.reloads = 0

    def _select(self, connection: ssl.SSLObject, server_name: str | None,
                context: ssl.SSLContext) -> None:
        if self.current is not self.context:
            connection.context = self.current

    def check(self) -> bool:
        """Reload when a store file changed; True when a new context is now current. A
        store that does not load is logged and the previous context kept."""
        if not self._files.changed():
            return False
        try:
            self.current = self._build(self.tls)
        except InvalidConfigError as error:
            log.warning("keeping the previous TLS configuration: %s", error)
            return False
        self.reloads += 1
        log.info("%s: reloaded its key and trust stores", self.tls.whose)
        return True
