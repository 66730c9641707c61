"""`odradek groups`: the counterpart of kafka-consumer-groups.sh, on confluent-kafka."""
