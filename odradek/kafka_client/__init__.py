"""An asyncio Kafka client, for the shells that speak the Kafka protocol to brokers: the
replica fetchers, the transaction markers and verification, and the operator tools. A
connection (`connection.py`) and a cluster over connections (`cluster.py`)."""

from .cluster import Address, ConnectionPool, KafkaCluster, NoLeaderError, UnknownBrokerError
from .connection import BrokerConnection, BrokerConnectionError, KafkaClientError

__all__ = ["Address", "BrokerConnection", "BrokerConnectionError", "ConnectionPool",
           "KafkaClientError", "KafkaCluster", "NoLeaderError", "UnknownBrokerError"]
