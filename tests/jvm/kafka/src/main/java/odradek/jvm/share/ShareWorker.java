package odradek.jvm.share;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import odradek.jvm.Json;

/**
 * One member of a share group for a fault test: it accepts every record it is given and
 * reports on stdout, one JSON line each, what it was delivered ({"delivered": value,
 * "count": delivery count, "partition": p}) and, after each commitSync, which acceptances the
 * broker confirmed ({"committed": [values]}) and which it did not ({"uncertain": [values],
 * "error": ...}). It runs until its stdin closes.
 *
 * <p>Arguments: bootstrap servers, topic, group.
 */
public final class ShareWorker {
  private ShareWorker() {}

  public static void main(String[] args) throws Exception {
    Properties config = new Properties();
    config.put("bootstrap.servers", args[0]);
    config.put("group.id", args[2]);
    config.put("share.acknowledgement.mode", "explicit");
    config.put("key.deserializer", StringDeserializer.class.getName());
    config.put("value.deserializer", StringDeserializer.class.getName());
    Thread stdin = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {
          // until the test closes it
        }
      } catch (java.io.IOException ignored) {
        // closed
      }
    });
    stdin.start();
    try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(config)) {
      consumer.subscribe(List.of(args[1]));
      while (stdin.isAlive()) {
        Map<Integer, List<String>> accepted = new java.util.HashMap<>();
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          emit(Map.of("delivered", record.value(), "partition", record.partition(),
              "count", (int) record.deliveryCount().orElse((short) -1)));
          consumer.acknowledge(record, AcknowledgeType.ACCEPT);
          accepted.computeIfAbsent(record.partition(), p -> new ArrayList<>()).add(record.value());
        }
        if (accepted.isEmpty()) {
          continue;
        }
        Map<TopicIdPartition, Optional<org.apache.kafka.common.KafkaException>> outcomes;
        try {
          outcomes = consumer.commitSync(Duration.ofSeconds(30));
        } catch (RuntimeException failure) {
          for (List<String> values : accepted.values()) {
            emit(Map.of("uncertain", values, "error", String.valueOf(failure)));
          }
          continue;
        }
        for (Map.Entry<Integer, List<String>> entry : accepted.entrySet()) {
          Optional<Optional<org.apache.kafka.common.KafkaException>> outcome =
              outcomes.entrySet().stream()
                  .filter(e -> e.getKey().partition() == entry.getKey())
                  .map(Map.Entry::getValue).findFirst();
          if (outcome.isEmpty() || outcome.get().isPresent()) {
            String error = outcome.isEmpty() ? "no outcome" : String.valueOf(outcome.get().get());
            emit(Map.of("uncertain", entry.getValue(), "error", error));
          } else {
            emit(Map.of("committed", entry.getValue()));
          }
        }
      }
    }
  }

  private static void emit(Map<String, ?> line) {
    System.out.println(Json.object(line));
    System.out.flush();
  }
}
