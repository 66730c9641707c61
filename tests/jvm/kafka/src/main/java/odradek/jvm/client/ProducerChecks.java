package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;
import static odradek.jvm.client.Checks.expect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;

/** The producer's settings: acks 0/1/all, idempotence with five requests in flight, every
 * codec; each time the records are read back whole (keys, values, headers, offsets,
 * timestamps). */
final class ProducerChecks {
  static final int PARTITIONS = 2;
  static final long BASE_TIMESTAMP = 1_700_000_000_000L;
  static final List<String> CODECS = List.of("none", "gzip", "snappy", "lz4", "zstd");

  private ProducerChecks() {}

  static void run(Cluster cluster, boolean full) {
    List<String> acks = full ? List.of("0", "1", "all") : List.of("all");
    for (String ack : acks) {
      Checks.run("producer_acks_" + ack, d -> roundTrip(cluster, d,
          Map.of("acks", ack, "enable.idempotence", "false"), 60, !ack.equals("0")));
    }
    if (!full) {
      return;
    }
    Checks.run("producer_idempotent_in_flight_5", d -> roundTrip(cluster, d,
        Map.of("acks", "all", "enable.idempotence", "true",
            "max.in.flight.requests.per.connection", "5", "batch.size", "512"), 400, true));
    for (String codec : CODECS) {
      Checks.run("producer_codec_" + codec, d -> roundTrip(cluster, d,
          Map.of("compression.type", codec, "acks", "all"), 80, true));
    }
  }

  /** Sends {@code count} records over two partitions with explicit partitions, timestamps,
   * keys (one null), values and headers (a repeated key and a null value), then reads them
   * back and compares every field. */
  static void roundTrip(Cluster cluster, Map<String, Object> details,
                        Map<String, String> settings, int count, boolean offsetsKnown)
      throws Exception {
    String topic = cluster.topic("produce", PARTITIONS);
    List<String> expected = send(cluster, topic, settings, count, offsetsKnown);
    List<TopicPartition> partitions = new ArrayList<>();
    for (int p = 0; p < PARTITIONS; p++) {
      partitions.add(new TopicPartition(topic, p));
    }
    List<String> seen = cluster.read(partitions, count, "read_uncommitted");
    seen.sort(null);
    expected.sort(null);
    details.put("records", seen.size());
    equal(expected, seen, "records read back");
  }

  /** Sends the records and returns them as {@link Cluster#show} would read them. */
  static List<String> send(Cluster cluster, String topic, Map<String, String> settings,
                           int count, boolean offsetsKnown) throws Exception {
    List<String> expected = new ArrayList<>();
    Map<Integer, Long> next = new HashMap<>();
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try (KafkaProducer<String, String> producer = cluster.producer(settings)) {
      for (int i = 0; i < count; i++) {
        int partition = i % PARTITIONS;
        String key = i == 3 ? null : "key-" + i;
        RecordHeaders headers = new RecordHeaders();
        headers.add("seq", Integer.toString(i).getBytes());
        headers.add("dup", "a".getBytes());
        headers.add("dup", "b".getBytes());
        headers.add("empty", null);
        long timestamp = BASE_TIMESTAMP + i * 1000L;
        sent.add(producer.send(new ProducerRecord<>(topic, partition, timestamp, key,
            "value-" + i + "-" + "x".repeat(i % 17), headers)));
        long offset = next.merge(partition, 1L, Long::sum) - 1;
        expected.add(Cluster.show(topic, partition, offset, timestamp, key,
            "value-" + i + "-" + "x".repeat(i % 17), "seq=" + i + ";dup=a;dup=b;empty=null;"));
      }
      producer.flush();
      for (int i = 0; i < count; i++) {
        RecordMetadata metadata = sent.get(i).get();
        equal(i % PARTITIONS, metadata.partition(), "partition of record " + i);
        if (offsetsKnown) {
          expect(metadata.hasOffset(), "record " + i + " has an offset");
        } else {
          expect(!metadata.hasOffset(), "acks=0 gives no offset for record " + i);
        }
        equal(BASE_TIMESTAMP + i * 1000L, metadata.timestamp(), "timestamp of record " + i);
      }
    }
    if (offsetsKnown) {
      List<Long> offsets = new ArrayList<>();
      for (Future<RecordMetadata> future : sent) {
        offsets.add(future.get().offset());
      }
      for (int i = 0; i < count; i++) {
        equal((long) (i / PARTITIONS), offsets.get(i), "offset of record " + i);
      }
    }
    return expected;
  }
}
