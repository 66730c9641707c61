"""The controllers' gRPC secured as their controller listener's security protocol says: the
one place gRPC credentials are made from a listener's SSL configs (`odradek/net/tls.py`), for the
controller's server (following its store files) and for the channels other controllers,
brokers and the cluster CLI open to it."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.config.listeners import SSL, Listeners
from odradek.net.tls import StoreFiles, TlsSettings, client_context, server_context, settings

log = logging.getLogger("odradek.net.grpc_tls")

ChannelOptions = Sequence[tuple[str, Any]]
TARGET_NAME_OVERRIDE = "grpc.ssl_target_name_override"
PROBE_TIMEOUT_S = 5.0
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----", re.S)


@dataclass(frozen=True, slots=True)
class PemStores:
    """A listener's key and trust stores as the PEM text gRPC takes."""

    private_key: bytes | None
    certificate_chain: bytes | None
    root_certificates: bytes | None


def _blocks(text: str, kind: str) -> str:
    return "\n".join(m.group(0) for m in _PEM_BLOCK.finditer(text) if m.group(1).endswith(kind))


def pem_stores(tls: TlsSettings) -> PemStores:
    """The stores of `tls` (checked already, by server_context or client_context)."""
    def problem(message: str) -> InvalidConfigError:
        return InvalidConfigError(f"{tls.whose}: {message}")

    try:
        keystore = Path(tls.keystore_location).read_text() if tls.keystore_location else None
        roots = (Path(tls.truststore_location).read_text() if tls.truststore_location
                 else tls.truststore_certificates)
    except OSError as error:
        raise problem(f"cannot read a store: {error}") from None
    key, chain = tls.private_key, tls.certificate_chain
    if keystore is not None:
        key, chain = _blocks(keystore, "PRIVATE KEY"), _blocks(keystore, "CERTIFICATE")
    if key and "ENCRYPTED" in key:
        raise problem("an encrypted private key (ssl.key.password) is not supported on a "
                      "controller listener: gRPC takes the key store's key unencrypted")
    return PemStores(key.encode() if key else None, chain.encode() if chain else None,
                     roots.encode() if roots else None)


def _server_configuration(tls: TlsSettings) -> grpc.ServerCertificateConfiguration:
    server_context(tls)  # every config and store checked, one line on failure
    stores = pem_stores(tls)
    return grpc.ssl_server_certificate_configuration(
        [(stores.private_key, stores.certificate_chain)], stores.root_certificates)


def server_credentials(tls: TlsSettings) -> grpc.ServerCredentials:
    """The controller listener's credentials. `ssl.client.auth=required` requires and
    verifies client certificates (mutual TLS); `none` and `requested` ask for none (gRPC
    cannot ask for an optional one). Each handshake looks at the store files first: a
    changed one is loaded for that connection and the next, without a restart; one that
    does not load is logged and the previous stores kept."""
    files = StoreFiles(tls)
    initial = _server_configuration(tls)
    if tls.cipher_suites:
        log.warning("%s: ssl.cipher.suites does not apply to the controllers' gRPC, "
                    "which negotiates with gRPC's own cipher suites", tls.whose)

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        if not files.changed():
            return None
        try:
            configuration = _server_configuration(tls)
        except InvalidConfigError as error:
            log.warning("keeping the previous TLS configuration: %s", error)
            return None
        log.info("%s: reloaded its key and trust stores", tls.whose)
        return configuration

    return grpc.dynamic_ssl_server_credentials(
        initial, fetch, require_client_authentication=tls.client_auth == "required")


def certificate_name(host: str, port: int, tls: TlsSettings) -> str:
    """A name the server at host:port has in its certificate (first DNS, then IP subject
    alternative name, then common name), read in a TLS handshake that checks the chain
    against the trust store but not the name. Raises OSError when it cannot be read."""
    context = client_context(tls)
    context.check_hostname = False
    with socket.create_connection((host, port), PROBE_TIMEOUT_S) as raw, \
            context.wrap_socket(raw) as secured:
        certificate: dict[str, Any] = dict(secured.getpeercert() or {})
    alternatives = certificate.get("subjectAltName", ())
    for kind in ("DNS", "IP Address"):
        for found_kind, value in alternatives:
            if found_kind == kind:
                return str(value)
    for attributes in certificate.get("subject", ()):
        for key, value in attributes:
            if key == "commonName":
                return str(value)
    raise OSError(f"the certificate of {host}:{port} names no host")


def _channel_credentials(tls: TlsSettings) -> grpc.ChannelCredentials:
    client_context(tls)  # every config and store checked, one line on failure
    stores = pem_stores(tls)
    return grpc.ssl_channel_credentials(
        stores.root_certificates, stores.private_key, stores.certificate_chain)


class ControllerChannels:
    """How channels to the controllers' listener are opened: plaintext (no `tls`), or TLS
    as the first listener of controller.listener.names is configured (its trust store, and
    its key store presented to a listener with ssl.client.auth). Host names are checked when
    ssl.endpoint.identification.algorithm is https; when it is empty, the channel is told
    (gRPC's target name override) to expect the name the server's certificate holds, read
    in a handshake that checks its chain."""

    def __init__(self, tls: TlsSettings | None = None) -> None:
        self.tls = tls
        self._files = StoreFiles(tls) if tls else None
        self._credentials = _channel_credentials(tls) if tls else None
        self.generation = 0
        """Counts reloads of the stores: a channel opened in an earlier generation presents
        the old ones, and its owner replaces it (see `refresh`)."""

    @classmethod
    def of(cls, config: BrokerConfig, listeners: Listeners) -> ControllerChannels:
        if listeners.controller_protocol != SSL:
            return cls()
        return cls(settings(config, listeners.controller_names[0]))

    def refresh(self) -> int:
        """Reload the stores when a file changed (one that does not load is logged and the
        previous stores kept); the current generation."""
        if self.tls is None or self._files is None or not self._files.changed():
            return self.generation
        try:
            self._credentials = _channel_credentials(self.tls)
        except InvalidConfigError as error:
            log.warning("keeping the previous TLS configuration: %s", error)
            return self.generation
        self.generation += 1
        log.info("%s: reloaded its key and trust stores for connections to "
                 "controllers", self.tls.whose)
        return self.generation

    def _name_options(self, host: str, port: int) -> list[tuple[str, Any]]:
        if self.tls is None or self.tls.endpoint_identification.lower() == "https":
            return []
        return [(TARGET_NAME_OVERRIDE, certificate_name(host, port, self.tls))]

    async def open(self, host: str, port: int, options: ChannelOptions = ()
                   ) -> grpc.aio.Channel:
        """A channel with the current stores. Raises OSError when the server's certificate
        name cannot be read (see above)."""
        target = f"{host}:{port}"
        if self._credentials is None:
            return grpc.aio.insecure_channel(target, options=list(options))
        named = await asyncio.to_thread(self._name_options, host, port)
        return grpc.aio.secure_channel(target, self._credentials, [*options, *named])

    def open_blocking(self, host: str, port: int, options: ChannelOptions = ()
                      ) -> grpc.Channel:
        """As `open`, for a synchronous caller."""
        target = f"{host}:{port}"
        if self._credentials is None:
            return grpc.insecure_channel(target, options=list(options))
        return grpc.secure_channel(target, self._credentials,
                                   [*options, *self._name_options(host, port)])
