package odradek.jvm.mirror;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import odradek.jvm.Json;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.connect.mirror.Checkpoint;
import org.apache.kafka.connect.mirror.Heartbeat;
import org.apache.kafka.connect.mirror.MirrorClient;
import org.apache.kafka.connect.mirror.OffsetSync;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * What MirrorMaker 2's own code reads from a pair of clusters, as one JSON line: MirrorClient's
 * view of the target (remote topics, heartbeat and checkpoint topics, upstream clusters,
 * replication hops), RemoteClusterUtils.translateOffsets for each group, and the target's
 * heartbeats and checkpoints and the source's offset syncs, decoded by MM2's
 * Heartbeat/Checkpoint/OffsetSync.deserializeRecord.
 *
 * <p>{@code Mm2View TARGET_BOOTSTRAP SOURCE_BOOTSTRAP SOURCE_ALIAS TARGET_ALIAS [GROUP...]}
 */
public final class Mm2View {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  private Mm2View() {}

  public static void main(String[] args) throws Exception {
    String target = args[0];
    String source = args[1];
    String sourceAlias = args[2];
    String targetAlias = args[3];
    Map<String, Object> client = new HashMap<>(Map.of("bootstrap.servers", target));
    Map<String, Object> out = new LinkedHashMap<>();
    try (MirrorClient mirror = new MirrorClient(client)) {
      out.put("remote_topics", new TreeSet<>(mirror.remoteTopics()));
      out.put("remote_topics_of_source", new TreeSet<>(mirror.remoteTopics(sourceAlias)));
      out.put("heartbeat_topics", new TreeSet<>(mirror.heartbeatTopics()));
      out.put("checkpoint_topics", new TreeSet<>(mirror.checkpointTopics()));
      out.put("upstream_clusters", new TreeSet<>(mirror.upstreamClusters()));
      out.put("replication_hops", mirror.replicationHops(sourceAlias));
    }
    Map<String, Object> translated = new TreeMap<>();
    for (int i = 4; i < args.length; i++) {
      translated.put(args[i], offsets(
          RemoteClusterUtils.translateOffsets(client, sourceAlias, args[i], TIMEOUT)));
    }
    out.put("translated", translated);
    out.put("heartbeats", read(target, "heartbeats", record -> {
      Heartbeat beat = Heartbeat.deserializeRecord(record);
      return Map.of("source", beat.sourceClusterAlias(), "target", beat.targetClusterAlias(),
          "timestamp", beat.timestamp());
    }));
    out.put("checkpoints", read(target, sourceAlias + ".checkpoints.internal", record -> {
      Checkpoint checkpoint = Checkpoint.deserializeRecord(record);
      return Map.of("group", checkpoint.consumerGroupId(),
          "topic", checkpoint.topicPartition().topic(),
          "partition", checkpoint.topicPartition().partition(),
          "upstream", checkpoint.upstreamOffset(), "downstream", checkpoint.downstreamOffset(),
          "metadata", checkpoint.metadata());
    }));
    out.put("offset_syncs", read(source, "mm2-offset-syncs." + targetAlias + ".internal",
        record -> {
          OffsetSync sync = OffsetSync.deserializeRecord(record);
          return Map.of("topic", sync.topicPartition().topic(),
              "partition", sync.topicPartition().partition(),
              "upstream", sync.upstreamOffset(), "downstream", sync.downstreamOffset());
        }));
    System.out.println(Json.object(out));
  }

  private static Map<String, Long> offsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
    Map<String, Long> out = new TreeMap<>();
    offsets.forEach((tp, offset) -> out.put(tp.topic() + ":" + tp.partition(), offset.offset()));
    return out;
  }

  /** Every record of the topic (none when it does not exist), decoded, in offset order per
   * partition. */
  private static List<Object> read(String bootstrap, String topic,
      Function<ConsumerRecord<byte[], byte[]>, Object> decode) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    List<Object> decoded = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props,
        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      List<PartitionInfo> infos = consumer.listTopics(TIMEOUT).get(topic);
      if (infos == null) {
        return decoded;
      }
      List<TopicPartition> partitions = new ArrayList<>();
      infos.forEach(info -> partitions.add(new TopicPartition(topic, info.partition())));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, TIMEOUT);
      long deadline = System.nanoTime() + TIMEOUT.toNanos();
      while (partitions.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("reading " + topic + " timed out");
        }
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
          decoded.add(decode.apply(record));
        }
      }
    }
    return decoded;
  }
}
