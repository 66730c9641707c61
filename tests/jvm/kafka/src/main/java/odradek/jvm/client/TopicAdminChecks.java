package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;
import static odradek.jvm.client.Checks.expect;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** Admin on topics: create/list/describe/delete, partitions, configs (incremental and the
 * legacy whole-set AlterConfigs), records deletion, reassignments and leader election. */
final class TopicAdminChecks {
  private TopicAdminChecks() {}

  static void run(Cluster cluster, List<Integer> brokers, boolean full) {
    Checks.run("admin_topics", d -> topics(cluster, d));
    if (!full) {
      return;
    }
    Checks.run("admin_create_partitions", d -> createPartitions(cluster, d));
    Checks.run("admin_describe_configs", d -> describeConfigs(cluster, d, brokers));
    Checks.run("admin_incremental_alter_configs", d -> incrementalAlterConfigs(cluster, d));
    Checks.run("admin_incremental_alter_broker_configs",
        d -> incrementalAlterBrokerConfigs(cluster, d, brokers));
    Checks.run("admin_alter_configs_legacy", d -> legacyAlterConfigs(cluster, d));
    Checks.run("admin_delete_records", d -> deleteRecords(cluster, d));
    Checks.run("admin_reassign_and_elect_leaders", d -> reassignAndElect(cluster, d, brokers));
  }

  static TopicDescription describe(Cluster cluster, String topic) throws Exception {
    return cluster.admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
  }

  static void topics(Cluster cluster, Map<String, Object> details) throws Exception {
    String topic = cluster.topic("admin-topic", 3, (short) 3, Map.of("retention.ms", "3600000"));
    expect(cluster.admin.listTopics().names().get().contains(topic), "listTopics names it");
    TopicDescription description = describe(cluster, topic);
    equal(3, description.partitions().size(), "partitions");
    for (TopicPartitionInfo partition : description.partitions()) {
      equal(3, partition.replicas().size(), "replicas of partition " + partition.partition());
      expect(partition.replicas().contains(partition.leader()), "the leader is a replica");
      Checks.eventually(dd -> equal(3, describe(cluster, topic).partitions()
          .get(partition.partition()).isr().size(), "in-sync replicas"), details);
    }
    expect(description.topicId() != null, "a topic id");
    expect(!description.isInternal(), "not internal");
    Checks.refused("TopicExistsException", "creating it again", () ->
        cluster.admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get());
    cluster.admin.deleteTopics(List.of(topic)).all().get();
    Checks.eventually(dd -> expect(!cluster.admin.listTopics().names().get().contains(topic),
        "the deleted topic is no longer listed"), details);
    try {
      describe(cluster, topic);
      throw new AssertionError("the deleted topic is still described");
    } catch (ExecutionException expected) {
      expect(expected.getCause() instanceof UnknownTopicOrPartitionException,
          "describing the deleted topic: " + expected.getCause());
    }
    details.put("topic", topic);
  }

  static void createPartitions(Cluster cluster, Map<String, Object> details) throws Exception {
    String topic = cluster.topic("grow", 1);
    cluster.admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
    Checks.eventually(d -> equal(4, describe(cluster, topic).partitions().size(),
        "partitions after the increase"), details);
    Checks.refused("InvalidPartitionsException", "decreasing the partition count", () ->
        cluster.admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get());
  }

  static Config config(Cluster cluster, ConfigResource resource) throws Exception {
    return cluster.admin.describeConfigs(List.of(resource)).all().get().get(resource);
  }

  static void describeConfigs(Cluster cluster, Map<String, Object> details,
                              List<Integer> brokers) throws Exception {
    String topic = cluster.topic("configs", 1, (short) 3, Map.of("retention.ms", "123456"));
    Config config = config(cluster, new ConfigResource(ConfigResource.Type.TOPIC, topic));
    ConfigEntry retention = config.get("retention.ms");
    equal("123456", retention.value(), "retention.ms");
    equal(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source(), "its source");
    expect(!retention.isDefault() && !retention.isReadOnly(), "retention.ms not default");
    ConfigEntry policy = config.get("cleanup.policy");
    equal("delete", policy.value(), "cleanup.policy");
    equal(ConfigEntry.ConfigSource.DEFAULT_CONFIG, policy.source(), "its source");
    ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER,
        Integer.toString(brokers.get(0)));
    Config brokerConfig = config(cluster, broker);
    ConfigEntry maxBytes = brokerConfig.get("message.max.bytes");
    equal("1048588", maxBytes.value(), "the broker's message.max.bytes");
    ConfigEntry brokerId = brokerConfig.get("node.id");
    equal(Integer.toString(brokers.get(0)), brokerId.value(), "the broker's node.id");
    expect(brokerId.isReadOnly(), "node.id is read-only");
    details.put("topic_configs", config.entries().size());
    details.put("broker_configs", brokerConfig.entries().size());
  }

  static void incrementalAlterConfigs(Cluster cluster, Map<String, Object> details)
      throws Exception {
    String topic = cluster.topic("alter", 1);
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    cluster.admin.incrementalAlterConfigs(Map.of(resource, List.of(
        new AlterConfigOp(new ConfigEntry("retention.ms", "99999"), AlterConfigOp.OpType.SET),
        new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"),
            AlterConfigOp.OpType.APPEND)))).all().get();
    Checks.eventually(d -> {
      Config config = config(cluster, resource);
      equal("99999", config.get("retention.ms").value(), "retention.ms after SET");
      equal("delete,compact", config.get("cleanup.policy").value(),
          "cleanup.policy after APPEND");
    }, details);
    cluster.admin.incrementalAlterConfigs(Map.of(resource, List.of(
        new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
        new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"),
            AlterConfigOp.OpType.SUBTRACT)))).all().get();
    Checks.eventually(d -> {
      Config config = config(cluster, resource);
      equal("604800000", config.get("retention.ms").value(), "retention.ms after DELETE");
      equal(ConfigEntry.ConfigSource.DEFAULT_CONFIG, config.get("retention.ms").source(),
          "its source after DELETE");
      equal("compact", config.get("cleanup.policy").value(), "cleanup.policy after SUBTRACT");
    }, details);
    Checks.refused("InvalidConfigurationException", "an invalid value", () ->
        cluster.admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
            new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))).all().get());
  }

  static void incrementalAlterBrokerConfigs(Cluster cluster, Map<String, Object> details,
                                            List<Integer> brokers) throws Exception {
    ConfigResource defaults = new ConfigResource(ConfigResource.Type.BROKER, "");
    ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER,
        Integer.toString(brokers.get(1)));
    cluster.admin.incrementalAlterConfigs(Map.of(defaults, List.of(new AlterConfigOp(
        new ConfigEntry("log.cleaner.backoff.ms", "16000"), AlterConfigOp.OpType.SET))))
        .all().get();
    Checks.eventually(d -> {
      ConfigEntry entry = config(cluster, broker).get("log.cleaner.backoff.ms");
      equal("16000", entry.value(), "log.cleaner.backoff.ms on a broker");
      equal(ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, entry.source(),
          "its source");
    }, details);
    cluster.admin.incrementalAlterConfigs(Map.of(defaults, List.of(new AlterConfigOp(
        new ConfigEntry("log.cleaner.backoff.ms", ""), AlterConfigOp.OpType.DELETE))))
        .all().get();
    Checks.eventually(d -> equal("15000",
        config(cluster, broker).get("log.cleaner.backoff.ms").value(),
        "log.cleaner.backoff.ms after DELETE"), details);
  }

  static void legacyAlterConfigs(Cluster cluster, Map<String, Object> details)
      throws Exception {
    String topic = cluster.topic("legacy", 1, (short) 3,
        Map.of("retention.ms", "123456", "max.message.bytes", "200000"));
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    Map<String, Object> answer = LegacyAlterConfigs.send(cluster.bootstrap.split(",")[0],
        resource, Map.of("retention.ms", "55555"));
    equal(Map.of(topic, "NONE"), answer, "AlterConfigs' errors");
    Checks.eventually(d -> {
      Config config = config(cluster, resource);
      equal("55555", config.get("retention.ms").value(), "retention.ms after AlterConfigs");
      ConfigEntry maxBytes = config.get("max.message.bytes");
      equal("1048588", maxBytes.value(), "max.message.bytes, not in the new set, is default");
      equal(ConfigEntry.ConfigSource.DEFAULT_CONFIG, maxBytes.source(), "its source");
    }, details);
  }

  static void deleteRecords(Cluster cluster, Map<String, Object> details) throws Exception {
    String topic = cluster.topic("delete-records", ProducerChecks.PARTITIONS);
    ProducerChecks.send(cluster, topic, Map.of(), 20, true);
    TopicPartition first = new TopicPartition(topic, 0);
    TopicPartition second = new TopicPartition(topic, 1);
    var result = cluster.admin.deleteRecords(Map.of(first, RecordsToDelete.beforeOffset(4),
        second, RecordsToDelete.beforeOffset(-1))).lowWatermarks();
    equal(4L, result.get(first).get().lowWatermark(), "the low watermark before offset 4");
    equal(10L, result.get(second).get().lowWatermark(), "the low watermark at the end");
    try (KafkaConsumer<String, String> consumer = cluster.consumer(Map.of())) {
      equal(Map.of(first, 4L, second, 10L), consumer.beginningOffsets(List.of(first, second)),
          "the beginning offsets");
      consumer.assign(List.of(first));
      consumer.seekToBeginning(List.of(first));
      List<String> seen = Cluster.poll(consumer, 6);
      expect(seen.get(0).startsWith(topic + "/0@4 "), "the first record left: " + seen.get(0));
      equal(6, seen.size(), "records left");
    }
    Checks.refused("OffsetOutOfRangeException", "deleting past the end", () ->
        cluster.admin.deleteRecords(Map.of(first, RecordsToDelete.beforeOffset(11))).all().get());
  }

  static void reassignAndElect(Cluster cluster, Map<String, Object> details,
                               List<Integer> brokers) throws Exception {
    int a = brokers.get(0);
    int b = brokers.get(1);
    int c = brokers.get(2);
    String topic = Cluster.unique("reassign");
    cluster.admin.createTopics(List.of(new NewTopic(topic, Map.of(0, List.of(a, b)))))
        .all().get();
    TopicPartition tp = new TopicPartition(topic, 0);
    Checks.eventually(d -> equal(a, describe(cluster, topic).partitions().get(0).leader().id(),
        "the first replica leads"), details);
    cluster.admin.alterPartitionReassignments(Map.of(tp,
        Optional.of(new NewPartitionReassignment(List.of(c, a))))).all().get();
    Map<TopicPartition, PartitionReassignment> ongoing =
        cluster.admin.listPartitionReassignments(Set.of(tp)).reassignments().get();
    if (ongoing.containsKey(tp)) {
      equal(List.of(c), ongoing.get(tp).addingReplicas(), "adding replicas");
      equal(List.of(b), ongoing.get(tp).removingReplicas(), "removing replicas");
    }
    details.put("listed_while_ongoing", ongoing.containsKey(tp));
    Checks.eventually(d -> {
      equal(Map.of(), cluster.admin.listPartitionReassignments().reassignments().get(),
          "reassignments once done");
      TopicPartitionInfo partition = describe(cluster, topic).partitions().get(0);
      equal(List.of(c, a), partition.replicas().stream().map(Node::id).toList(), "replicas");
      equal(2, partition.isr().size(), "in-sync replicas");
    }, details);
    equal(a, describe(cluster, topic).partitions().get(0).leader().id(),
        "the leader, still a replica, keeps leading");
    Map<TopicPartition, Optional<Throwable>> elected = cluster.admin
        .electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
    equal(Map.of(tp, Optional.empty()), elected, "the preferred election");
    Checks.eventually(d -> equal(c, describe(cluster, topic).partitions().get(0).leader().id(),
        "the preferred replica leads"), details);
    Map<TopicPartition, Optional<Throwable>> again = cluster.admin
        .electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
    expect(again.get(tp).orElse(null) instanceof ElectionNotNeededException,
        "a second election is not needed: " + again);
  }
}
