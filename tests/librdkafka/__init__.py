"""librdkafka's own regression suite against Odradek: the harness and its command."""
