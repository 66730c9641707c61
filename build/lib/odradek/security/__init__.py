"""Kafka's security model: who a connection is (principals from TLS and SASL), what it may
do (ACLs), and how much (quotas). The rule modules are cores without IO."""
