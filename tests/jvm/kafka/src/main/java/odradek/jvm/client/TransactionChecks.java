package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** Consume-transform-produce with {@code sendOffsetsToTransaction}: an aborted attempt leaves
 * nothing visible to read_committed, the committed one gives exactly the input transformed,
 * and the group's offsets are committed with it. */
final class TransactionChecks {
  static final int COUNT = 30;

  private TransactionChecks() {}

  static void run(Cluster cluster, boolean full) {
    for (String protocol : full ? ConsumerChecks.PROTOCOLS : List.of("classic")) {
      Checks.run("transaction_consume_transform_produce_" + protocol,
          d -> consumeTransformProduce(cluster, d, protocol));
    }
  }

  static void consumeTransformProduce(Cluster cluster, Map<String, Object> details,
                                      String protocol) throws Exception {
    int partitions = ProducerChecks.PARTITIONS;
    String input = cluster.topic("ctp-in", partitions);
    String output = cluster.topic("ctp-out", partitions);
    ProducerChecks.send(cluster, input, Map.of(), COUNT, true);
    String group = Cluster.unique("ctp");
    Map<String, String> settings = new HashMap<>(ConsumerChecks.group(protocol, group));
    settings.put("isolation.level", "read_committed");
    try (KafkaConsumer<String, String> consumer = cluster.consumer(settings);
         KafkaProducer<String, String> producer = cluster.producer(Map.of(
             "transactional.id", Cluster.unique("ctp")))) {
      producer.initTransactions();
      consumer.subscribe(List.of(input));
      for (boolean commit : new boolean[] {false, true}) {
        List<ConsumerRecord<String, String>> batch = pollAll(consumer, COUNT);
        equal(COUNT, batch.size(), "input records read (commit=" + commit + ")");
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<String, String> record : batch) {
          producer.send(new ProducerRecord<>(output, record.partition(), record.key(),
              record.value().toUpperCase()));
          offsets.put(new TopicPartition(record.topic(), record.partition()),
              new OffsetAndMetadata(record.offset() + 1));
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        producer.flush();  // an abort drops what is still unsent: send all, then abort
        if (commit) {
          producer.commitTransaction();
        } else {
          producer.abortTransaction();
          for (TopicPartition tp : consumer.assignment()) {
            consumer.seek(tp, 0);  // nothing committed: start over
          }
        }
      }
    }
    List<String> expected = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      for (int i = p; i < COUNT; i += partitions) {
        String key = i == 3 ? null : "key-" + i;
        expected.add(p + ":" + key + ":" + ("value-" + i + "-" + "x".repeat(i % 17)).toUpperCase());
      }
    }
    List<TopicPartition> outputs = ConsumerChecks.partitions(output, partitions);
    equal(expected, keyed(cluster, outputs, "read_committed", COUNT),
        "the output read_committed");
    equal(2 * COUNT, keyed(cluster, outputs, "read_uncommitted", 2 * COUNT).size(),
        "records written, the aborted attempt's included");
    Map<TopicPartition, Long> committed = new HashMap<>();
    cluster.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
        .forEach((tp, om) -> committed.put(tp, om.offset()));
    long half = COUNT / partitions;
    equal(Map.of(new TopicPartition(input, 0), half, new TopicPartition(input, 1), half),
        committed, "the group's committed offsets");
    details.put("committed", committed.toString());
  }

  static List<ConsumerRecord<String, String>> pollAll(KafkaConsumer<String, String> consumer,
                                                      int count) {
    List<ConsumerRecord<String, String>> records = new ArrayList<>();
    long deadline = System.nanoTime() + Cluster.TIMEOUT.toNanos();
    while (records.size() < count && System.nanoTime() < deadline) {
      ConsumerRecords<String, String> polled = consumer.poll(Duration.ofMillis(200));
      polled.forEach(records::add);
    }
    return records;
  }

  /** The records as "partition:key:value", sorted by partition then offset. */
  static List<String> keyed(Cluster cluster, List<TopicPartition> partitions, String isolation,
                            int count) throws Exception {
    try (KafkaConsumer<String, String> consumer =
             cluster.consumer(Map.of("isolation.level", isolation))) {
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      List<ConsumerRecord<String, String>> records = pollAll(consumer, count);
      records.sort((a, b) -> a.partition() != b.partition()
          ? Integer.compare(a.partition(), b.partition()) : Long.compare(a.offset(), b.offset()));
      List<String> shown = new ArrayList<>();
      for (ConsumerRecord<String, String> record : records) {
        shown.add(record.partition() + ":" + record.key() + ":" + record.value());
      }
      return shown;
    }
  }
}
