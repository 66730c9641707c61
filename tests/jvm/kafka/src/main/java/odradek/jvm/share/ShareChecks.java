package odradek.jvm.share;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import odradek.jvm.Json;

/**
 * Kafka's own KafkaShareConsumer against a broker, in explicit acknowledgement mode. Ten
 * records are produced and the group set to read from the earliest offset
 * (share.auto.offset.reset, a group config); the consumer accepts most, releases "r1" and
 * rejects "r2", then reads on until "r1" comes again. Prints one JSON object: every
 * delivery as [value, delivery count], and what a second consumer of the group finds after
 * the first one closed (nothing: every record was settled).
 *
 * <p>Arguments: bootstrap servers, topic, group, then any consumer configs as name=value.
 */
public final class ShareChecks {
  private ShareChecks() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    List<List<Object>> deliveries = new ArrayList<>();
    Map<String, Object> report = new LinkedHashMap<>();
    produce(bootstrap, topic);
    readFromEarliest(bootstrap, group);
    Properties extra = configs(args, 3);
    try (KafkaShareConsumer<String, String> consumer = consumer(bootstrap, group, extra)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + 60_000;
      boolean released = false;
      boolean redelivered = false;
      while (!redelivered && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          short count = record.deliveryCount().orElse((short) -1);
          deliveries.add(List.of(record.value(), (int) count));
          if (record.value().equals("r1") && !released) {
            consumer.acknowledge(record, AcknowledgeType.RELEASE);
            released = true;
          } else if (record.value().equals("r2")) {
            consumer.acknowledge(record, AcknowledgeType.REJECT);
          } else {
            consumer.acknowledge(record, AcknowledgeType.ACCEPT);
            redelivered |= record.value().equals("r1");
          }
        }
        Map<?, ?> committed = consumer.commitSync();
        for (Object outcome : committed.values()) {
          if (outcome instanceof java.util.Optional<?> failure && failure.isPresent()) {
            report.put("commit_error", String.valueOf(failure.get()));
          }
        }
      }
    }
    report.put("deliveries", deliveries);
    List<String> after = new ArrayList<>();
    try (KafkaShareConsumer<String, String> second = consumer(bootstrap, group, extra)) {
      second.subscribe(List.of(topic));
      long until = System.currentTimeMillis() + 5_000;
      while (System.currentTimeMillis() < until) {
        for (ConsumerRecord<String, String> record : second.poll(Duration.ofMillis(500))) {
          after.add(record.value());
          second.acknowledge(record, AcknowledgeType.RELEASE);
        }
      }
    }
    report.put("second_consumer", after);
    System.out.println(Json.object(report));
  }

  /** Sets the group's share.auto.offset.reset to earliest. */
  static void readFromEarliest(String bootstrap, String group) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
          new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
          .all().get();
    }
  }

  /** The name=value arguments from index `first` on. */
  static Properties configs(String[] args, int first) {
    Properties extra = new Properties();
    for (int i = first; i < args.length; i++) {
      String[] pair = args[i].split("=", 2);
      extra.put(pair[0], pair[1]);
    }
    return extra;
  }

  /** A KafkaShareConsumer in explicit acknowledgement mode with `extra` configs. */
  static KafkaShareConsumer<String, String> consumer(String bootstrap, String group,
      Properties extra) {
    Properties config = new Properties();
    config.putAll(extra);
    config.put("bootstrap.servers", bootstrap);
    config.put("group.id", group);
    config.put("share.acknowledgement.mode", "explicit");
    config.put("key.deserializer", StringDeserializer.class.getName());
    config.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaShareConsumer<>(config);
  }

  private static void produce(String bootstrap, String topic) throws Exception {
    Properties config = new Properties();
    config.put("bootstrap.servers", bootstrap);
    config.put("key.serializer", StringSerializer.class.getName());
    config.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
      for (int i = 0; i < 10; i++) {
        producer.send(new ProducerRecord<>(topic, 0, null, "r" + i)).get();
      }
    }
  }
}
