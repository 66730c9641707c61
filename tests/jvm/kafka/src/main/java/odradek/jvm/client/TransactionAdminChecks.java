package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;
import static odradek.jvm.client.Checks.expect;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;

/** Admin on transactions: an open transaction listed and described, its producer described on
 * the partition, the transaction aborted by the admin (a hanging transaction's cure), and a
 * transactional id fenced. */
final class TransactionAdminChecks {
  private TransactionAdminChecks() {}

  static void run(Cluster cluster, List<Integer> brokers) throws Exception {
    String topic = cluster.topic("txn-admin", 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    String id = Cluster.unique("hanging");
    KafkaProducer<String, String> producer = cluster.producer(Map.of("transactional.id", id));
    try {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(topic, 0, "k", "one"));
      producer.send(new ProducerRecord<>(topic, 0, "k", "two"));
      producer.flush();
      long[] producerId = new long[1];
      Checks.run("admin_list_transactions", d -> {
        TransactionListing listing = cluster.admin.listTransactions().all().get().stream()
            .filter(t -> t.transactionalId().equals(id)).findFirst().orElseThrow();
        equal(TransactionState.ONGOING, listing.state(), "the listed state");
        expect(listing.producerId() >= 0, "a producer id");
        producerId[0] = listing.producerId();
        d.put("producer_id", listing.producerId());
      });
      Checks.run("admin_describe_transactions", d -> {
        TransactionDescription description =
            cluster.admin.describeTransactions(List.of(id)).description(id).get();
        equal(TransactionState.ONGOING, description.state(), "the state");
        equal(Set.of(tp), description.topicPartitions(), "the partitions in the transaction");
        equal(producerId[0], description.producerId(), "the producer id");
        equal(60000L, description.transactionTimeoutMs(), "the transaction timeout");
        expect(brokers.contains(description.coordinatorId()), "the coordinator is a broker");
        expect(description.transactionStartTimeMs().isPresent(), "a start time");
      });
      ProducerState[] state = new ProducerState[1];
      Checks.run("admin_describe_producers", d -> {
        List<ProducerState> active = cluster.admin.describeProducers(List.of(tp))
            .partitionResult(tp).get().activeProducers();
        equal(1, active.size(), "active producers");
        state[0] = active.get(0);
        equal(producerId[0], state[0].producerId(), "the producer id");
        equal(1, state[0].lastSequence(), "the last sequence");
        equal(0L, state[0].currentTransactionStartOffset().orElse(-1), "the transaction start");
        // no marker written on the partition yet: Kafka knows no coordinator epoch (-1)
        expect(state[0].coordinatorEpoch().isEmpty(), "no coordinator epoch: " + state[0]);
        d.put("state", state[0].toString());
      });
      Checks.run("admin_abort_transaction", d -> {
        cluster.admin.abortTransaction(new AbortTransactionSpec(tp, state[0].producerId(),
            (short) state[0].producerEpoch(), state[0].coordinatorEpoch().orElse(0)))
            .all().get();
        ProducerState after = cluster.admin.describeProducers(List.of(tp))
            .partitionResult(tp).get().activeProducers().get(0);
        expect(after.currentTransactionStartOffset().isEmpty(),
            "no open transaction after the abort: " + after);
        try (KafkaConsumer<String, String> consumer =
                 cluster.consumer(Map.of("isolation.level", "read_committed"))) {
          equal(Map.of(tp, 3L), consumer.endOffsets(List.of(tp)),
              "the last stable offset past the abort marker");
          consumer.assign(List.of(tp));
          consumer.seekToBeginning(List.of(tp));
          equal(0, consumer.poll(Duration.ofSeconds(2)).count(), "records read_committed");
        }
      });
    } finally {
      producer.close(Duration.ZERO);
    }
    Checks.run("admin_fence_producers", d -> fence(cluster, d, topic));
  }

  static void fence(Cluster cluster, Map<String, Object> details, String topic)
      throws Exception {
    String id = Cluster.unique("fenced");
    try (KafkaProducer<String, String> producer =
             cluster.producer(Map.of("transactional.id", id))) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(topic, 0, "k", "fenced")).get();
      int before = cluster.admin.describeTransactions(List.of(id)).description(id).get()
          .producerEpoch();
      cluster.admin.fenceProducers(List.of(id)).all().get();
      TransactionDescription after =
          cluster.admin.describeTransactions(List.of(id)).description(id).get();
      expect(after.producerEpoch() > before, "the epoch bumped: " + before + " -> "
          + after.producerEpoch());
      equal(TransactionState.EMPTY, after.state(), "the state after fencing");
      try {
        producer.commitTransaction();
        throw new AssertionError("the fenced producer committed");
      } catch (KafkaException expected) {
        expect(expected instanceof ProducerFencedException
            || expected.getCause() instanceof ProducerFencedException,
            "the fenced producer's commit: " + expected);
      }
      details.put("epochs", before + " -> " + after.producerEpoch());
    }
  }
}
