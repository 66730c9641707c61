package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;
import static odradek.jvm.client.Checks.expect;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;

/** Admin on consumer groups, one of each protocol: listing, describing (while their members
 * are active), offsets listed, altered and deleted, and the groups deleted. */
final class GroupAdminChecks {
  private GroupAdminChecks() {}

  static void run(Cluster cluster) throws Exception {
    String topic = cluster.topic("groups", ProducerChecks.PARTITIONS);
    ProducerChecks.send(cluster, topic, Map.of(), 20, true);
    TopicPartition first = new TopicPartition(topic, 0);
    TopicPartition second = new TopicPartition(topic, 1);
    Map<String, String> groups = new HashMap<>();
    for (String protocol : ConsumerChecks.PROTOCOLS) {
      groups.put(protocol, Cluster.unique("admin-" + protocol));
    }
    List<KafkaConsumer<String, String>> members = new java.util.ArrayList<>();
    try {
      for (String protocol : ConsumerChecks.PROTOCOLS) {
        KafkaConsumer<String, String> consumer =
            cluster.consumer(ConsumerChecks.group(protocol, groups.get(protocol)));
        members.add(consumer);
        consumer.subscribe(List.of(topic));
        Cluster.poll(consumer, 20);
        consumer.commitSync();
      }
      Checks.run("admin_list_groups", d -> Checks.eventually(dd -> {
        Map<String, GroupListing> listed = new HashMap<>();
        cluster.admin.listGroups().all().get().forEach(g -> listed.put(g.groupId(), g));
        GroupListing classic = listed.get(groups.get("classic"));
        GroupListing consumer = listed.get(groups.get("consumer"));
        expect(classic != null && consumer != null, "both groups listed: " + listed.keySet());
        equal(GroupType.CLASSIC, classic.type().orElse(null), "the classic group's type");
        equal("consumer", classic.protocol(), "the classic group's protocol type");
        equal(GroupType.CONSUMER, consumer.type().orElse(null), "the consumer group's type");
        equal(GroupState.STABLE, classic.groupState().orElse(null), "the classic group's state");
        equal(GroupState.STABLE, consumer.groupState().orElse(null),
            "the consumer group's state");
        Set<String> consumerGroups = new java.util.HashSet<>();
        cluster.admin.listConsumerGroups().all().get()
            .forEach(g -> consumerGroups.add(g.groupId()));
        expect(consumerGroups.containsAll(groups.values()),
            "listConsumerGroups names both: " + consumerGroups);
      }, d));
      Checks.run("admin_describe_consumer_groups", d -> {
        Map<String, ConsumerGroupDescription> described =
            cluster.admin.describeConsumerGroups(groups.values()).all().get();
        for (String protocol : ConsumerChecks.PROTOCOLS) {
          ConsumerGroupDescription group = described.get(groups.get(protocol));
          equal(GroupState.STABLE, group.groupState(), protocol + " group state");
          equal(protocol.equals("classic") ? GroupType.CLASSIC : GroupType.CONSUMER,
              group.type(), protocol + " group type");
          equal(1, group.members().size(), protocol + " group members");
          MemberDescription member = group.members().iterator().next();
          equal(Set.of(first, second), member.assignment().topicPartitions(),
              protocol + " member's assignment");
          expect(member.host().contains("127.0.0.1"), "the member's host: " + member.host());
          expect(!group.isSimpleConsumerGroup(), "not a simple group");
          d.put(protocol + "_assignor", group.partitionAssignor());
        }
        equal("uniform", described.get(groups.get("consumer")).partitionAssignor(),
            "the consumer group's server assignor");
        equal("range", described.get(groups.get("classic")).partitionAssignor(),
            "the classic group's assignor");
      });
    } finally {
      members.forEach(KafkaConsumer::close);
    }
    String classic = groups.get("classic");
    Checks.run("admin_list_consumer_group_offsets", d -> Checks.eventually(dd -> {
      for (String group : groups.values()) {
        equal(Map.of(first, 10L, second, 10L), offsets(cluster, group),
            "offsets of " + group);
      }
      var described = cluster.admin.describeConsumerGroups(List.of(classic)).all().get();
      equal(GroupState.EMPTY, described.get(classic).groupState(), "state once closed");
    }, d));
    Checks.run("admin_alter_consumer_group_offsets", d -> {
      cluster.admin.alterConsumerGroupOffsets(classic, Map.of(first,
          new OffsetAndMetadata(3, "moved"))).all().get();
      var listed = cluster.admin.listConsumerGroupOffsets(classic)
          .partitionsToOffsetAndMetadata().get();
      equal(3L, listed.get(first).offset(), "the altered offset");
      equal("moved", listed.get(first).metadata(), "its metadata");
      equal(10L, listed.get(second).offset(), "the other partition's offset");
    });
    Checks.run("admin_delete_consumer_group_offsets", d -> {
      cluster.admin.deleteConsumerGroupOffsets(classic, Set.of(second)).all().get();
      equal(Map.of(first, 3L), offsets(cluster, classic), "offsets after the deletion");
    });
    Checks.run("admin_delete_consumer_groups", d -> {
      cluster.admin.deleteConsumerGroups(groups.values()).all().get();
      Set<String> listed = new java.util.HashSet<>();
      cluster.admin.listGroups().all().get().forEach(g -> listed.add(g.groupId()));
      expect(!listed.contains(classic) && !listed.contains(groups.get("consumer")),
          "the deleted groups are not listed");
      try {
        var gone = cluster.admin.describeConsumerGroups(List.of(classic)).all().get();
        equal(GroupState.DEAD, gone.get(classic).groupState(), "a deleted group's state");
      } catch (ExecutionException expected) {
        expect(expected.getCause() instanceof GroupIdNotFoundException,
            "describing a deleted group: " + expected.getCause());
      }
    });
  }

  static Map<TopicPartition, Long> offsets(Cluster cluster, String group) throws Exception {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    cluster.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
        .forEach((tp, om) -> offsets.put(tp, om.offset()));
    return offsets;
  }
}
