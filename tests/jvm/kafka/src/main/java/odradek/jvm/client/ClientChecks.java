package odradek.jvm.client;

import java.util.List;

/**
 * Kafka's Java client against a cluster, as many checks in one JVM, one JSON line per check
 * ({@code {"name", "ok", "details"}}):
 * {@code java -cp ... odradek.jvm.client.ClientChecks BOOTSTRAP CLIENT.properties full|subset}.
 * {@code full} runs everything (the producer, the consumer, transactions, every Admin API);
 * {@code subset} a representative part for a secured listener.
 */
public final class ClientChecks {
  static final int BROKERS = 3;

  private ClientChecks() {}

  public static void main(String[] args) throws Exception {
    boolean full = args[2].equals("full");
    try (Cluster cluster = new Cluster(args[0], args[1])) {
      List<Integer>[] brokers = new List[1];
      Checks.run("admin_describe_cluster",
          d -> brokers[0] = ClusterAdminChecks.describeCluster(cluster, d, BROKERS));
      ProducerChecks.run(cluster, full);
      ConsumerChecks.run(cluster, full);
      TransactionChecks.run(cluster, full);
      if (brokers[0] == null) {
        return;
      }
      TopicAdminChecks.run(cluster, brokers[0], full);
      if (full) {
        ClusterAdminChecks.run(cluster, brokers[0]);
        GroupAdminChecks.run(cluster);
        TransactionAdminChecks.run(cluster, brokers[0]);
      }
    }
    System.exit(0);
  }
}
