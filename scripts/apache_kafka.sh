#!/usr/bin/env bash
# Runs Apache Kafka itself (the pinned 4.x of tests/jvm/pom.xml, from the jars the test
# command's bootstrap resolved) as one KRaft node on loopback, in the foreground: by default a
# combined broker and controller, the reference broker of the conformance tests and the
# benchmarks; or one node of a cluster (bench/sidebyside/kafka_cluster.py lays one out).
#
#   bash scripts/apache_kafka.sh --data-dir DIR --port PORT [--controller-port PORT]
#                                [--override key=value]...
#   bash scripts/apache_kafka.sh --data-dir DIR --process-roles controller|broker
#        --node-id ID --controller-quorum-voters VOTERS --cluster-id ID
#        (--port PORT for a broker, --controller-port PORT for a controller) [--override ...]
#
# The config is Kafka's own config/server.properties for one node (replication factors of
# the internal topics 1), written to DIR/server.properties with the overrides appended;
# DIR/logs is formatted with kafka-storage on first start. The JVM options are those of
# Kafka's kafka-server-start.sh (KAFKA_HEAP_OPTS, default -Xmx1G -Xms1G, overrides the heap).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
classpath_file=$root/tests/jvm/kafka/target/classpath.txt
[[ -f $classpath_file ]] || { echo "apache_kafka: $classpath_file is missing; run bash scripts/bootstrap.sh --dev" >&2; exit 2; }

data_dir="" port="" controller_port="" overrides=()
roles=broker,controller node_id=1 voters="" cluster_id=""
while (( $# )); do
  case $1 in
    --data-dir) data_dir=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --controller-port) controller_port=$2; shift 2 ;;
    --process-roles) roles=$2; shift 2 ;;
    --node-id) node_id=$2; shift 2 ;;
    --controller-quorum-voters) voters=$2; shift 2 ;;
    --cluster-id) cluster_id=$2; shift 2 ;;
    --override) overrides+=("$2"); shift 2 ;;
    *) echo "apache_kafka: unknown argument $1" >&2; exit 2 ;;
  esac
done
case $roles in
  broker,controller) [[ -n $port ]] || { echo "apache_kafka: --port is required" >&2; exit 2; } ;;
  broker) [[ -n $port && -n $voters ]] || { echo "apache_kafka: a broker needs --port and --controller-quorum-voters" >&2; exit 2; } ;;
  controller) [[ -n $controller_port && -n $voters ]] || { echo "apache_kafka: a controller needs --controller-port and --controller-quorum-voters" >&2; exit 2; } ;;
  *) echo "apache_kafka: --process-roles is broker,controller, broker or controller" >&2; exit 2 ;;
esac
[[ -n $data_dir ]] || { echo "apache_kafka: --data-dir is required" >&2; exit 2; }
if [[ -z $controller_port && $roles != broker ]]; then
  controller_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
voters=${voters:-$node_id@127.0.0.1:$controller_port}
case $roles in
  broker,controller) listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port" ;;
  broker) listeners="PLAINTEXT://127.0.0.1:$port" ;;
  controller) listeners="CONTROLLER://127.0.0.1:$controller_port" ;;
esac
mkdir -p "$data_dir"
data_dir=$(cd "$data_dir" && pwd)
config=$data_dir/server.properties
{
  cat <<PROPS
process.roles=$roles
node.id=$node_id
controller.quorum.voters=$voters
listeners=$listeners
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=$data_dir/logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
PROPS
  if [[ $roles != controller ]]; then
    printf '%s\n' "advertised.listeners=PLAINTEXT://127.0.0.1:$port" "inter.broker.listener.name=PLAINTEXT"
  fi
  for line in "${overrides[@]}"; do echo "$line"; done
} >"$config"

classpath="$root/tests/jvm/kafka/target/odradek-jvm-kafka.jar:$(cat "$classpath_file")"
java_opts=(-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
           -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true
           "-Dodradek.log.level=${KAFKA_LOG_LEVEL:-INFO}")
if [[ ! -f $data_dir/logs/meta.properties ]]; then
  [[ -n $cluster_id ]] || cluster_id=$(java -cp "$classpath" kafka.tools.StorageTool random-uuid 2>/dev/null)
  java "${java_opts[@]}" -cp "$classpath" kafka.tools.StorageTool format \
    --config "$config" --cluster-id "$cluster_id" --ignore-formatted >&2
fi
# shellcheck disable=SC2086  # KAFKA_HEAP_OPTS is a list of options, as in Kafka's scripts
exec java ${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G} "${java_opts[@]}" -cp "$classpath" kafka.Kafka "$config"
