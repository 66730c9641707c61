package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;
import static odradek.jvm.client.Checks.expect;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/** The consumer: both group protocols subscribing by list and by pattern, assign with seeks
 * by offset and by timestamp, and read_committed over committed and aborted transactions. */
final class ConsumerChecks {
  static final List<String> PROTOCOLS = List.of("classic", "consumer");
  static final int COUNT = 30;

  private ConsumerChecks() {}

  static void run(Cluster cluster, boolean full) {
    for (String protocol : full ? PROTOCOLS : List.of("consumer")) {
      Checks.run("consumer_subscribe_list_" + protocol, d -> subscribeList(cluster, d, protocol));
      if (full) {
        Checks.run("consumer_subscribe_pattern_" + protocol,
            d -> subscribePattern(cluster, d, protocol, false));
      }
    }
    if (full) {
      Checks.run("consumer_subscribe_regex_consumer",
          d -> subscribePattern(cluster, d, "consumer", true));
      Checks.run("consumer_assign_seek_offset", d -> seekOffset(cluster, d));
      Checks.run("consumer_seek_timestamp", d -> seekTimestamp(cluster, d));
    }
    Checks.run("consumer_read_committed", d -> readCommitted(cluster, d));
  }

  static Map<String, String> group(String protocol, String group) {
    Map<String, String> settings = new HashMap<>(Map.of("group.id", group,
        "group.protocol", protocol));
    if (protocol.equals("classic")) {
      settings.put("session.timeout.ms", "10000");
      settings.put("heartbeat.interval.ms", "1000");
    }
    return settings;
  }

  static List<TopicPartition> partitions(String topic, int count) {
    List<TopicPartition> partitions = new ArrayList<>();
    for (int p = 0; p < count; p++) {
      partitions.add(new TopicPartition(topic, p));
    }
    return partitions;
  }

  static void subscribeList(Cluster cluster, Map<String, Object> details, String protocol)
      throws Exception {
    String topic = cluster.topic("subscribe", ProducerChecks.PARTITIONS);
    List<String> expected = ProducerChecks.send(cluster, topic, Map.of(), COUNT, true);
    String group = Cluster.unique("group");
    try (KafkaConsumer<String, String> consumer = cluster.consumer(group(protocol, group))) {
      consumer.subscribe(List.of(topic));
      List<String> seen = Cluster.poll(consumer, COUNT);
      seen.sort(null);
      expected.sort(null);
      equal(expected, seen, "records read by the group");
      equal(java.util.Set.copyOf(partitions(topic, ProducerChecks.PARTITIONS)),
          consumer.assignment(), "the assignment");
      consumer.commitSync();
      Map<TopicPartition, OffsetAndMetadata> committed =
          cluster.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
      Map<TopicPartition, Long> offsets = new HashMap<>();
      committed.forEach((tp, om) -> offsets.put(tp, om.offset()));
      long half = COUNT / ProducerChecks.PARTITIONS;
      equal(Map.of(new TopicPartition(topic, 0), half, new TopicPartition(topic, 1), half),
          offsets, "the committed offsets");
      details.put("committed", offsets.toString());
    }
  }

  static void subscribePattern(Cluster cluster, Map<String, Object> details, String protocol,
                               boolean serverSide) throws Exception {
    String prefix = Cluster.unique("pattern");
    List<String> expected = new ArrayList<>();
    for (String suffix : List.of("a", "b")) {
      String topic = cluster.topic(prefix + "-" + suffix, ProducerChecks.PARTITIONS,
          (short) 3, Map.of());
      expected.addAll(ProducerChecks.send(cluster, topic, Map.of(), 10, true));
    }
    cluster.topic("other-" + prefix, 1);
    try (KafkaConsumer<String, String> consumer =
             cluster.consumer(group(protocol, Cluster.unique("group")))) {
      if (serverSide) {
        consumer.subscribe(new SubscriptionPattern(prefix + "-.*"));
      } else {
        consumer.subscribe(Pattern.compile(Pattern.quote(prefix) + "-.*"));
      }
      List<String> seen = Cluster.poll(consumer, expected.size());
      seen.sort(null);
      expected.sort(null);
      equal(expected, seen, "records of the topics matching the pattern");
      equal(4, consumer.assignment().size(), "partitions assigned");
      details.put("assignment", consumer.assignment().toString());
    }
  }

  static void seekOffset(Cluster cluster, Map<String, Object> details) throws Exception {
    String topic = cluster.topic("seek", ProducerChecks.PARTITIONS);
    ProducerChecks.send(cluster, topic, Map.of(), 20, true);
    TopicPartition tp = new TopicPartition(topic, 1);
    try (KafkaConsumer<String, String> consumer = cluster.consumer(Map.of())) {
      consumer.assign(List.of(tp));
      consumer.seek(tp, 7);
      List<String> seen = Cluster.poll(consumer, 3);
      expect(seen.get(0).startsWith(topic + "/1@7 "), "the first record after the seek: "
          + seen.get(0));
      equal(Map.of(tp, 10L), consumer.endOffsets(List.of(tp)), "end offsets");
      equal(Map.of(tp, 0L), consumer.beginningOffsets(List.of(tp)), "beginning offsets");
      consumer.seekToEnd(List.of(tp));
      equal(10L, consumer.position(tp), "the position after seekToEnd");
      details.put("first", seen.get(0));
    }
  }

  static void seekTimestamp(Cluster cluster, Map<String, Object> details) throws Exception {
    String topic = cluster.topic("times", ProducerChecks.PARTITIONS);
    ProducerChecks.send(cluster, topic, Map.of(), 20, true);
    TopicPartition tp = new TopicPartition(topic, 0);  // records 0, 2, 4, ... at offsets 0, 1, 2
    long base = ProducerChecks.BASE_TIMESTAMP;
    try (KafkaConsumer<String, String> consumer = cluster.consumer(Map.of())) {
      consumer.assign(List.of(tp));
      OffsetAndTimestamp found = consumer.offsetsForTimes(Map.of(tp, base + 3000)).get(tp);
      equal(2L, found.offset(), "the first offset at or after the timestamp");
      equal(base + 4000, found.timestamp(), "its timestamp");
      equal(0L, consumer.offsetsForTimes(Map.of(tp, base - 1)).get(tp).offset(),
          "a timestamp before every record");
      expect(consumer.offsetsForTimes(Map.of(tp, base + 100_000)).get(tp) == null,
          "a timestamp after every record finds nothing");
      consumer.seek(tp, found.offset());
      List<String> seen = Cluster.poll(consumer, 1);
      expect(seen.get(0).startsWith(topic + "/0@2 ts=" + (base + 4000)),
          "the record at the timestamp: " + seen.get(0));
      details.put("found", found.toString());
    }
  }

  static void readCommitted(Cluster cluster, Map<String, Object> details) throws Exception {
    String topic = cluster.topic("committed", 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<String, String> producer = cluster.producer(Map.of(
        "transactional.id", Cluster.unique("txn")))) {
      producer.initTransactions();
      String[][] transactions = {{"c1", "c2", "c3"}, {"a1", "a2"}, {"c4", "c5"}};
      for (int t = 0; t < transactions.length; t++) {
        producer.beginTransaction();
        for (String value : transactions[t]) {
          producer.send(new ProducerRecord<>(topic, 0, "k", value));
        }
        if (t == 1) {
          producer.flush();
          producer.abortTransaction();
        } else {
          producer.commitTransaction();
        }
      }
    }
    List<String> committed = values(cluster, tp, "read_committed", 5);
    equal(List.of("c1", "c2", "c3", "c4", "c5"), committed, "read_committed values");
    List<String> all = values(cluster, tp, "read_uncommitted", 7);
    equal(List.of("c1", "c2", "c3", "a1", "a2", "c4", "c5"), all, "read_uncommitted values");
    try (KafkaConsumer<String, String> consumer =
             cluster.consumer(Map.of("isolation.level", "read_committed"))) {
      // 7 records and 3 markers: the stable offset is the log end once all are decided
      equal(Map.of(tp, 10L), consumer.endOffsets(List.of(tp)), "the last stable offset");
    }
    details.put("committed", committed);
  }

  static List<String> values(Cluster cluster, TopicPartition tp, String isolation, int count)
      throws Exception {
    try (KafkaConsumer<String, String> consumer =
             cluster.consumer(Map.of("isolation.level", isolation))) {
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      List<String> values = new ArrayList<>();
      long deadline = System.nanoTime() + Cluster.TIMEOUT.toNanos();
      while (values.size() < count && System.nanoTime() < deadline) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
          values.add(record.value());
        }
      }
      // anything past the expected count would show here too
      for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
        values.add(record.value());
      }
      return values;
    }
  }
}
