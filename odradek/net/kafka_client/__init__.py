"""An asyncio Kafka client, for the shells that speak the Kafka protocol to brokers: the
replica fetchers, the transaction markers and verification, and the operator tools. A
connection (`connection.py`), secured as `security.py` says, and a cluster over
connections (`cluster.py`)."""

from .cluster import Address, ConnectionPool, KafkaCluster, NoLeaderError, UnknownBrokerError
from .connection import (
    BrokerConnection,
    BrokerConnectionError,
    KafkaClientError,
    SaslAuthenticationError,
)
from .security import PLAINTEXT_CLIENT, ClientSecurity, client_security

__all__ = ["PLAINTEXT_CLIENT", "Address", "BrokerConnection", "BrokerConnectionError",
           "ClientSecurity", "ConnectionPool", "KafkaClientError", "KafkaCluster",
           "NoLeaderError", "SaslAuthenticationError", "UnknownBrokerError", "client_security"]
