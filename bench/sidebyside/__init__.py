"""Side-by-side broker benchmark: two Kafka-protocol brokers, A and B, started afresh from
command templates and measured with the same real client (confluent-kafka), alternating
A B A B in pairs. Each figure is reported as A/B: the median of the per-pair ratios, with
their min and max. `python -m bench.sidebyside --help`; docs/performance.md."""
