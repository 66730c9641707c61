package odradek.jvm.client;

import java.io.FileReader;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The cluster under test as its clients see it: one listener's bootstrap and security
 * properties, and the helpers every check shares (topics, clients, reading records back). */
final class Cluster implements AutoCloseable {
  static final Duration TIMEOUT = Duration.ofSeconds(60);

  final String bootstrap;
  private final Properties security;
  final Admin admin;

  Cluster(String bootstrap, String propertiesFile) throws IOException {
    this.bootstrap = bootstrap;
    this.security = new Properties();
    try (FileReader reader = new FileReader(propertiesFile)) {
      security.load(reader);
    }
    this.admin = Admin.create(properties(Map.of("default.api.timeout.ms", "60000",
        "request.timeout.ms", "30000")));
  }

  Properties properties(Map<String, String> overrides) {
    Properties props = new Properties();
    props.putAll(security);
    props.put("bootstrap.servers", bootstrap);
    props.putAll(overrides);
    return props;
  }

  KafkaProducer<String, String> producer(Map<String, String> overrides) {
    Map<String, String> all = new HashMap<>(Map.of("linger.ms", "5", "max.block.ms", "30000",
        "delivery.timeout.ms", "60000", "request.timeout.ms", "30000"));
    all.putAll(overrides);
    return new KafkaProducer<>(properties(all), new StringSerializer(), new StringSerializer());
  }

  KafkaConsumer<String, String> consumer(Map<String, String> overrides) {
    Map<String, String> all = new HashMap<>(Map.of("auto.offset.reset", "earliest",
        "enable.auto.commit", "false"));
    all.putAll(overrides);
    return new KafkaConsumer<>(properties(all), new StringDeserializer(),
        new StringDeserializer());
  }

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  String topic(String prefix, int partitions, short replication, Map<String, String> configs)
      throws Exception {
    String name = unique(prefix);
    admin.createTopics(List.of(new NewTopic(name, partitions, replication).configs(configs)))
        .all().get();
    return name;
  }

  String topic(String prefix, int partitions) throws Exception {
    return topic(prefix, partitions, (short) 3, Map.of());
  }

  /** Every record of the partitions, from their beginning, until {@code count} are read. */
  List<String> read(Collection<TopicPartition> partitions, int count, String isolation)
      throws Exception {
    try (KafkaConsumer<String, String> consumer =
             consumer(Map.of("isolation.level", isolation))) {
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      return poll(consumer, count);
    }
  }

  /** Polls until {@code count} records are read (or the timeout passes), as strings. */
  static List<String> poll(KafkaConsumer<String, String> consumer, int count) {
    List<String> seen = new ArrayList<>();
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (seen.size() < count && System.nanoTime() < deadline) {
      for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
        seen.add(show(record));
      }
    }
    return seen;
  }

  /** A record as one comparable string: partition, offset, timestamp, key, value, headers. */
  static String show(ConsumerRecord<String, String> record) {
    StringBuilder headers = new StringBuilder();
    for (Header header : record.headers()) {
      headers.append(header.key()).append('=')
          .append(header.value() == null ? "null" : new String(header.value())).append(';');
    }
    return record.topic() + "/" + record.partition() + "@" + record.offset() + " ts="
        + record.timestamp() + " " + record.timestampType() + " k=" + record.key() + " v="
        + record.value() + " h=" + headers;
  }

  static String show(String topic, int partition, long offset, long timestamp, String key,
                     String value, String headers) {
    return topic + "/" + partition + "@" + offset + " ts=" + timestamp + " CreateTime k=" + key
        + " v=" + value + " h=" + headers;
  }

  @Override
  public void close() {
    admin.close(Duration.ofSeconds(10));
  }
}
