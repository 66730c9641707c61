"""The operator tools: counterparts of the Kafka scripts operators type every day. They speak
the Kafka protocol only, so they work against any Kafka-compatible cluster."""
