package odradek.jvm;

import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Prints, as one JSON line, what Kafka's own Admin client sees of a cluster: the client's
 * version, the cluster id, the controller and the broker ids. The toolchain's smoke test, and
 * a quick look at any cluster: {@code java -cp ... odradek.jvm.DescribeCluster HOST:PORT}.
 */
public final class DescribeCluster {
  private DescribeCluster() {}

  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    try (Admin admin = Admin.create(props)) {
      DescribeClusterResult cluster = admin.describeCluster();
      TreeSet<Integer> brokers = new TreeSet<>();
      for (Node node : cluster.nodes().get()) {
        brokers.add(node.id());
      }
      Node controller = cluster.controller().get();
      System.out.println(Json.object(Map.of(
          "client_version", AppInfoParser.getVersion(),
          "cluster_id", cluster.clusterId().get(),
          "controller", controller == null ? -1 : controller.id(),
          "brokers", brokers)));
    }
  }
}
