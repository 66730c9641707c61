package odradek.jvm.share;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import odradek.jvm.Json;

/**
 * How many records each poll of a KafkaShareConsumer returns: `count` records are produced
 * to partition 0 in one batch, then one consumer accepts everything it is given until it has
 * seen them all (or 60 s passed). Prints one JSON object: "polls", the size of each
 * non-empty poll, and "values", every value delivered, in order.
 *
 * <p>Arguments: bootstrap servers, topic, group, count, then any consumer configs as
 * name=value (share.acquire.mode, max.poll.records).
 */
public final class SharePolls {
  private SharePolls() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    int count = Integer.parseInt(args[3]);
    produceOneBatch(bootstrap, topic, count);
    ShareChecks.readFromEarliest(bootstrap, group);
    List<Integer> polls = new ArrayList<>();
    List<String> values = new ArrayList<>();
    Properties extra = ShareChecks.configs(args, 4);
    try (KafkaShareConsumer<String, String> consumer =
        ShareChecks.consumer(bootstrap, group, extra)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + 60_000;
      while (values.size() < count && System.currentTimeMillis() < deadline) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
        if (records.isEmpty()) {
          continue;
        }
        polls.add(records.count());
        for (ConsumerRecord<String, String> record : records) {
          values.add(record.value());
          consumer.acknowledge(record, AcknowledgeType.ACCEPT);
        }
        consumer.commitSync();
      }
    }
    Map<String, Object> report = new LinkedHashMap<>();
    report.put("polls", polls);
    report.put("values", values);
    System.out.println(Json.object(report));
  }

  private static void produceOneBatch(String bootstrap, String topic, int count)
      throws Exception {
    Properties config = new Properties();
    config.put("bootstrap.servers", bootstrap);
    config.put("linger.ms", "60000");
    config.put("batch.size", "1048576");
    config.put("key.serializer", StringSerializer.class.getName());
    config.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
      for (int i = 0; i < count; i++) {
        producer.send(new ProducerRecord<>(topic, 0, null, "v" + i));
      }
      producer.flush();
    }
  }
}
