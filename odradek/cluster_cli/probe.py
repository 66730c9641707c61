"""Is a node ready? A controller: does it answer, and is it the active one. A broker: does its
Metadata list every broker (fenced brokers are left out, so all of them are unfenced)."""

from __future__ import annotations

import grpc
from confluent_kafka.admin import AdminClient

from odradek.cluster_cli.layout import HOST
from odradek.rpc import controller_pb2, controller_pb2_grpc


def controller_active(port: int, timeout: float = 1.0) -> bool | None:
    """True for the active controller, False for another live one, None if unreachable."""
    try:
        with grpc.insecure_channel(f"{HOST}:{port}") as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            response = stub.DescribeQuorum(controller_pb2.DescribeQuorumRequest(),
                                           timeout=timeout)
    except grpc.RpcError:
        return None
    return bool(response.active)


def broker_sees(port: int, brokers: int, timeout: float = 2.0) -> bool:
    """Whether the broker answers Metadata listing `brokers` brokers."""
    admin = AdminClient({"bootstrap.servers": f"{HOST}:{port}", "log_level": 0,
                         "socket.connection.setup.timeout.ms": 1000})
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception:  # noqa: BLE001 - any failure means "not ready yet"
        return False
    return len(metadata.brokers) == brokers
