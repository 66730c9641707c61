"""gRPC credentials from a controller listener's SSL configs (odradek/net/grpc_tls.py): PEM stores
as gRPC takes them, the one-line refusals, and host name checks as
ssl.endpoint.identification.algorithm says, through a real gRPC server on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from cryptography.hazmat.primitives import serialization

from odradek.config.kafka_configs import BrokerConfig, InvalidConfigError
from odradek.config.listeners import BROKER, resolve
from odradek.controller.raft_transport import ChannelStats, RaftTransportServicer
from odradek.net.grpc_tls import ControllerChannels, pem_stores, server_credentials
from odradek.net.tls import settings
from odradek.rpc import raft_pb2, raft_pb2_grpc
from tests.certificates import Authority

PREFIX = "listener.name.controller."
CLUSTER = "cluster-a"


def config(tmp_path: Path, authority: Authority, hosts: tuple[str, ...],
           **extra: str) -> BrokerConfig:
    """A broker whose controller listener is SSL with mutual TLS; its key store names
    `hosts`."""
    keystore = authority.issue("controller", hosts).write(tmp_path / "keystore.pem")
    return BrokerConfig({
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        f"{PREFIX}ssl.keystore.type": "PEM", f"{PREFIX}ssl.keystore.location": str(keystore),
        f"{PREFIX}ssl.truststore.type": "PEM",
        f"{PREFIX}ssl.truststore.location": str(authority.write(tmp_path / "ca.pem")),
        f"{PREFIX}ssl.client.auth": "required", **extra})


def test_a_key_store_file_splits_into_the_key_and_chain_grpc_takes(tmp_path: Path) -> None:
    authority = Authority()
    stores = pem_stores(settings(config(tmp_path, authority, ("127.0.0.1",)), "CONTROLLER"))
    assert stores.private_key is not None and stores.certificate_chain is not None
    assert b"PRIVATE KEY" in stores.private_key and b"CERTIFICATE" not in stores.private_key
    assert stores.certificate_chain.count(b"BEGIN CERTIFICATE") == 2
    assert stores.root_certificates == authority.pem.encode()


def test_an_encrypted_key_is_refused_in_one_line(tmp_path: Path) -> None:
    authority = Authority()
    issued = authority.issue("controller")
    key = serialization.load_pem_private_key(issued.key_pem.encode(), None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"secret")).decode()
    keystore = tmp_path / "encrypted.pem"
    keystore.write_text(encrypted + issued.certificate_pem)
    raw = config(tmp_path, authority, ("127.0.0.1",), **{
        f"{PREFIX}ssl.key.password": "secret"}).static_raw
    tls = settings(BrokerConfig({**raw, f"{PREFIX}ssl.keystore.location": str(keystore)}),
                   "CONTROLLER")
    with pytest.raises(InvalidConfigError) as failure:
        server_credentials(tls)
    assert str(failure.value) == (
        "listener CONTROLLER: an encrypted private key (ssl.key.password) is not supported on "
        "a controller listener: gRPC takes the key store's key unencrypted")


def test_a_missing_trust_store_is_refused_in_one_line(tmp_path: Path) -> None:
    raw = config(tmp_path, Authority(), ("127.0.0.1",)).static_raw
    broken = BrokerConfig({**raw, f"{PREFIX}ssl.truststore.location": str(tmp_path / "none")})
    with pytest.raises(InvalidConfigError) as failure:
        ControllerChannels.of(broken, resolve(broken, BROKER))
    assert str(failure.value) == (f"listener CONTROLLER: cannot load the trust store "
                                  f"{tmp_path / 'none'}: No such file or directory")


async def send(channels: ControllerChannels, server_config: BrokerConfig) -> None:
    """A Raft batch over a channel of `channels` to a real gRPC server with the controller
    listener's credentials."""
    server = grpc.aio.server()
    raft_pb2_grpc.add_RaftTransportServicer_to_server(
        RaftTransportServicer(1, CLUSTER, lambda message: None, ChannelStats()), server)
    port = server.add_secure_port(
        "127.0.0.1:0", server_credentials(settings(server_config, "CONTROLLER")))
    await server.start()
    try:
        channel = await channels.open("127.0.0.1", port)
        async with channel:
            await raft_pb2_grpc.RaftTransportStub(channel).Send(
                raft_pb2.RaftBatch(cluster_id=CLUSTER), timeout=5)
    finally:
        await server.stop(None)


@pytest.mark.parametrize("algorithm", ["https", ""])
def test_host_names_are_checked_as_endpoint_identification_says(
    tmp_path: Path, algorithm: str
) -> None:
    """The controller's certificate names controller.example, not the 127.0.0.1 the client
    dials: refused when the name is checked (https), accepted when not (empty)."""
    server_config = config(tmp_path, Authority(), ("controller.example",),
                           **{f"{PREFIX}ssl.endpoint.identification.algorithm": algorithm})
    channels = ControllerChannels.of(server_config, resolve(server_config, BROKER))
    if algorithm:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            asyncio.run(send(channels, server_config))
        assert failure.value.code() == grpc.StatusCode.UNAVAILABLE
    else:
        asyncio.run(send(channels, server_config))


def test_unchecked_host_names_still_need_a_trusted_chain(tmp_path: Path) -> None:
    """With no host name check, a server whose certificate another CA issued is refused
    before any channel opens."""
    server_dir, client_dir = tmp_path / "server", tmp_path / "client"
    server_dir.mkdir()
    client_dir.mkdir()
    server_config = config(server_dir, Authority(), ("controller.example",))
    client_config = config(client_dir, Authority("Other CA"), ("client",), **{
        f"{PREFIX}ssl.endpoint.identification.algorithm": ""})
    channels = ControllerChannels.of(client_config, resolve(client_config, BROKER))
    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(send(channels, server_config))


def test_a_replaced_client_key_store_is_presented_without_a_restart(tmp_path: Path) -> None:
    """The client's key store is first one the controller does not trust, then, replaced
    on disk, one it does: the same ControllerChannels opens the next channel with it."""
    authority = Authority()
    server_dir, client_dir = tmp_path / "server", tmp_path / "client"
    server_dir.mkdir()
    client_dir.mkdir()
    server_config = config(server_dir, authority, ("127.0.0.1",))
    client_config = config(client_dir, authority, ("127.0.0.1",))
    keystore = client_dir / "keystore.pem"
    Authority("Other CA").issue("client").write(keystore)
    channels = ControllerChannels.of(client_config, resolve(client_config, BROKER))
    with pytest.raises(grpc.aio.AioRpcError):
        asyncio.run(send(channels, server_config))
    staged = client_dir / "keystore.pem.new"
    authority.issue("client").write(staged)
    staged.replace(keystore)
    assert channels.refresh() == 1
    asyncio.run(send(channels, server_config))
