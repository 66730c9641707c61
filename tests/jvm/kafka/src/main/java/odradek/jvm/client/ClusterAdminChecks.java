package odradek.jvm.client;

import static odradek.jvm.client.Checks.equal;
import static odradek.jvm.client.Checks.expect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.DuplicateResourceException;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/** Admin on the cluster: its description, the metadata quorum, log dirs, features, ACLs,
 * SCRAM credentials and client quotas. */
final class ClusterAdminChecks {
  private ClusterAdminChecks() {}

  /** The brokers' ids, sorted; the cluster description is checked on the way. */
  static List<Integer> describeCluster(Cluster cluster, Map<String, Object> details,
                                       int brokers) throws Exception {
    DescribeClusterResult result = cluster.admin.describeCluster();
    List<Integer> ids = new ArrayList<>();
    for (Node node : result.nodes().get()) {
      ids.add(node.id());
      equal("127.0.0.1", node.host(), "a broker's host");
    }
    ids.sort(null);
    equal(brokers, ids.size(), "brokers described");
    expect(result.clusterId().get() != null && !result.clusterId().get().isEmpty(),
        "a cluster id");
    expect(ids.contains(result.controller().get().id()),
        "the controller answered is a broker (KIP-590)");
    details.put("brokers", ids);
    details.put("cluster_id", result.clusterId().get());
    return ids;
  }

  static void run(Cluster cluster, List<Integer> brokers) {
    Checks.run("admin_describe_metadata_quorum", d -> quorum(cluster, d, brokers));
    Checks.run("admin_describe_log_dirs", d -> logDirs(cluster, d, brokers));
    Checks.run("admin_describe_features", d -> features(cluster, d));
    Checks.run("admin_acls", d -> acls(cluster, d));
    Checks.run("admin_scram_credentials", d -> scram(cluster, d));
    Checks.run("admin_client_quotas", d -> quotas(cluster, d));
  }

  static void quorum(Cluster cluster, Map<String, Object> details, List<Integer> brokers)
      throws Exception {
    QuorumInfo quorum = cluster.admin.describeMetadataQuorum().quorumInfo().get();
    List<Integer> voters = quorum.voters().stream().map(QuorumInfo.ReplicaState::replicaId)
        .toList();
    Set<Integer> observers = new HashSet<>();
    quorum.observers().forEach(o -> observers.add(o.replicaId()));
    equal(1, voters.size(), "voters (one controller)");
    equal(voters.get(0), quorum.leaderId(), "the leader is the voter");
    expect(!brokers.contains(quorum.leaderId()), "the leader is a controller, not a broker");
    equal(Set.copyOf(brokers), observers, "the observers are the brokers");
    expect(quorum.leaderEpoch() >= 1, "a leader epoch");
    expect(quorum.highWatermark() > 0, "a high watermark");
    for (QuorumInfo.ReplicaState replica : quorum.voters()) {
      expect(replica.logEndOffset() > 0, "the voter's log end offset");
    }
    details.put("voters", voters);
    details.put("observers", observers);
  }

  static void logDirs(Cluster cluster, Map<String, Object> details, List<Integer> brokers)
      throws Exception {
    String topic = cluster.topic("log-dirs", ProducerChecks.PARTITIONS);
    ProducerChecks.send(cluster, topic, Map.of(), 10, true);
    TopicPartition tp = new TopicPartition(topic, 0);
    Map<Integer, String> dirs = new HashMap<>();
    Checks.eventually(d -> {
      Map<Integer, Map<String, LogDirDescription>> all =
          cluster.admin.describeLogDirs(brokers).allDescriptions().get();
      equal(Set.copyOf(brokers), all.keySet(), "brokers described");
      for (int broker : brokers) {
        equal(1, all.get(broker).size(), "log dirs of broker " + broker);
        var entry = all.get(broker).entrySet().iterator().next();
        expect(entry.getValue().error() == null, "no error: " + entry.getValue().error());
        var replica = entry.getValue().replicaInfos().get(tp);
        expect(replica != null, "broker " + broker + " holds " + tp);
        expect(replica.size() > 0, "the replica's size on broker " + broker);
        equal(0L, replica.offsetLag(), "the replica's offset lag");
        dirs.put(broker, entry.getKey());
      }
    }, details);
    List<TopicPartitionReplica> replicas = new ArrayList<>();
    brokers.forEach(b -> replicas.add(new TopicPartitionReplica(topic, 0, b)));
    var replicaDirs = cluster.admin.describeReplicaLogDirs(replicas).all().get();
    for (TopicPartitionReplica replica : replicas) {
      equal(dirs.get(replica.brokerId()),
          replicaDirs.get(replica).getCurrentReplicaLogDir(), "replica log dir of " + replica);
    }
    details.put("dirs", dirs);
  }

  static void features(Cluster cluster, Map<String, Object> details) throws Exception {
    FeatureMetadata features = cluster.admin.describeFeatures().featureMetadata().get();
    expect(features.finalizedFeatures().containsKey("metadata.version"),
        "metadata.version finalized: " + features.finalizedFeatures());
    short level = features.finalizedFeatures().get("metadata.version").maxVersionLevel();
    expect(level >= 7, "metadata.version level " + level);
    var supported = features.supportedFeatures().get("metadata.version");
    expect(supported != null && supported.minVersion() <= level
        && level <= supported.maxVersion(), "the finalized level is supported: " + supported);
    expect(features.finalizedFeaturesEpoch().isPresent(), "a finalized features epoch");
    details.put("finalized", features.finalizedFeatures().toString());
  }

  static void acls(Cluster cluster, Map<String, Object> details) throws Exception {
    String user = "User:" + Cluster.unique("alice");
    String topic = Cluster.unique("acl-topic");
    AclBinding read = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic,
        PatternType.LITERAL), new AccessControlEntry(user, "*", AclOperation.READ,
        AclPermissionType.ALLOW));
    AclBinding deny = new AclBinding(new ResourcePattern(ResourceType.GROUP, "team-",
        PatternType.PREFIXED), new AccessControlEntry(user, "127.0.0.1",
        AclOperation.DELETE, AclPermissionType.DENY));
    cluster.admin.createAcls(List.of(read, deny)).all().get();
    AclBindingFilter byUser = new AclBindingFilter(ResourcePatternFilter.ANY,
        new AccessControlEntryFilter(user, null, AclOperation.ANY, AclPermissionType.ANY));
    Checks.eventually(d -> equal(Set.of(read, deny),
        Set.copyOf(cluster.admin.describeAcls(byUser).values().get()), "ACLs described"),
        details);
    AclBindingFilter onTopic = new AclBindingFilter(new ResourcePatternFilter(
        ResourceType.TOPIC, topic, PatternType.MATCH), AccessControlEntryFilter.ANY);
    equal(Set.of(read), Set.copyOf(cluster.admin.describeAcls(onTopic).values().get()),
        "ACLs matching the topic");
    var deleted = cluster.admin.deleteAcls(List.of(byUser)).all().get();
    equal(Set.of(read, deny), Set.copyOf(deleted), "ACLs deleted");
    Checks.eventually(d -> equal(List.of(),
        List.copyOf(cluster.admin.describeAcls(byUser).values().get()),
        "ACLs after the deletion"), details);
  }

  static void scram(Cluster cluster, Map<String, Object> details) throws Exception {
    String user = Cluster.unique("carol");
    UserScramCredentialUpsertion sha256 = new UserScramCredentialUpsertion(user,
        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "carol-secret");
    UserScramCredentialUpsertion sha512 = new UserScramCredentialUpsertion(user,
        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "carol-secret");
    try {
      cluster.admin.alterUserScramCredentials(List.of(sha256, sha512)).all().get();
      throw new AssertionError("two changes of one user in one request were accepted");
    } catch (ExecutionException expected) {
      // Kafka's controller (ScramControlManager) keys a request's changes by user alone
      expect(expected.getCause() instanceof DuplicateResourceException,
          "two changes of one user in one request: " + expected.getCause());
    }
    cluster.admin.alterUserScramCredentials(List.of(sha256)).all().get();
    cluster.admin.alterUserScramCredentials(List.of(sha512)).all().get();
    Checks.eventually(d -> {
      var described = cluster.admin.describeUserScramCredentials(List.of(user)).all().get();
      Set<String> infos = new HashSet<>();
      described.get(user).credentialInfos().forEach(i -> infos.add(i.mechanism() + "/"
          + i.iterations()));
      equal(Set.of("SCRAM_SHA_256/8192", "SCRAM_SHA_512/4096"), infos, "credentials");
    }, details);
    expect(cluster.admin.describeUserScramCredentials().users().get().contains(user),
        "listed among all users");
    cluster.admin.alterUserScramCredentials(List.of(
        new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256))).all().get();
    Checks.eventually(d -> {
      var infos = cluster.admin.describeUserScramCredentials(List.of(user)).all().get()
          .get(user).credentialInfos();
      equal(1, infos.size(), "credentials after a deletion");
      equal(ScramMechanism.SCRAM_SHA_512, infos.get(0).mechanism(), "the one left");
    }, details);
    String nobody = Cluster.unique("nobody");
    var unknown = cluster.admin.describeUserScramCredentials(List.of(nobody));
    // Kafka's all() keeps a RESOURCE_NOT_FOUND user, with no credentials
    expect(unknown.all().get().get(nobody).credentialInfos().isEmpty(),
        "all() gives an unknown user no credentials");
    try {
      unknown.description(nobody).get();
      throw new AssertionError("an unknown user was described");
    } catch (ExecutionException expected) {
      expect(expected.getCause() instanceof ResourceNotFoundException,
          "describing an unknown user: " + expected.getCause());
    }
  }

  static void quotas(Cluster cluster, Map<String, Object> details) throws Exception {
    String user = Cluster.unique("dave");
    ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user));
    cluster.admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
        new ClientQuotaAlteration.Op("producer_byte_rate", 1024.0),
        new ClientQuotaAlteration.Op("consumer_byte_rate", 2048.0))))).all().get();
    ClientQuotaFilter filter = ClientQuotaFilter.containsOnly(List.of(
        ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user)));
    Checks.eventually(d -> equal(Map.of(entity, Map.of("producer_byte_rate", 1024.0,
        "consumer_byte_rate", 2048.0)), cluster.admin.describeClientQuotas(filter)
        .entities().get(), "quotas described"), details);
    cluster.admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
        new ClientQuotaAlteration.Op("producer_byte_rate", null))))).all().get();
    Checks.eventually(d -> equal(Map.of(entity, Map.of("consumer_byte_rate", 2048.0)),
        cluster.admin.describeClientQuotas(filter).entities().get(),
        "quotas after a removal"), details);
    Checks.refused("InvalidRequestException", "an unknown quota key", () ->
        cluster.admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, List.of(
            new ClientQuotaAlteration.Op("no_such_quota", 1.0))))).all().get());
  }
}
