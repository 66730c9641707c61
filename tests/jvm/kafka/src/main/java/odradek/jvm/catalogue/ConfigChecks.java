package odradek.jvm.catalogue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import odradek.jvm.Json;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.Errors;

/**
 * Runs config checks with Kafka's own Admin client against one cluster and prints each check's
 * outcome as one JSON object keyed by label. The checks come on stdin, one a line:
 * <pre>
 * create|LABEL|TOPIC|name=value,name=value
 * describe|LABEL|broker, default or topic:NAME
 * describe-when|LABEL|RESOURCE|CONFIG|SOURCE   (waits until CONFIG has that source, or ABSENT)
 * alter|LABEL|broker, default, topic:NAME or group:NAME|VALIDATE_ONLY|OP name=value;OP name;...
 * alter-message|LABEL|RESOURCE|VALIDATE_ONLY|OPS   (as alter, with the error's message)
 * </pre>
 * "broker" is the first broker's own resource, "default" the cluster-wide one (""). A describe
 * reports every entry (value, source, read-only, sensitive, type, synonyms) with synonyms and
 * without documentation; a create or alter reports its error's name (NONE on success). A broker
 * applies a committed config change asynchronously, so a describe after an alter waits for it
 * (describe-when, up to 60 s).
 */
public final class ConfigChecks {
  private ConfigChecks() {}

  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
    Map<String, Object> results = new LinkedHashMap<>();
    try (Admin admin = Admin.create(props)) {
      String nodeId = admin.describeCluster().nodes().get().iterator().next().idString();
      BufferedReader input = new BufferedReader(
          new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = input.readLine(); line != null; line = input.readLine()) {
        if (line.isBlank()) {
          continue;
        }
        String[] fields = line.split("\\|", -1);
        results.put(fields[1], switch (fields[0]) {
          case "create" -> create(admin, fields[2], fields[3]);
          case "describe" -> describe(admin, resource(fields[2], nodeId));
          case "describe-when" -> describeWhen(admin, resource(fields[2], nodeId), fields[3],
              fields[4]);
          case "alter" -> alter(admin, resource(fields[2], nodeId),
              Boolean.parseBoolean(fields[3]), fields[4], false);
          case "alter-message" -> alter(admin, resource(fields[2], nodeId),
              Boolean.parseBoolean(fields[3]), fields[4], true);
          default -> throw new IllegalArgumentException("unknown check " + line);
        });
      }
    }
    System.out.println(Json.object(results));
  }

  private static ConfigResource resource(String spec, String nodeId) {
    if (spec.startsWith("topic:")) {
      return new ConfigResource(ConfigResource.Type.TOPIC, spec.substring("topic:".length()));
    }
    if (spec.startsWith("group:")) {
      return new ConfigResource(ConfigResource.Type.GROUP, spec.substring("group:".length()));
    }
    return new ConfigResource(ConfigResource.Type.BROKER, spec.equals("broker") ? nodeId : "");
  }

  private static String error(ExecutionException failure) {
    return Errors.forException(failure.getCause()).name();
  }

  private static String create(Admin admin, String topic, String configs) throws Exception {
    Map<String, String> overrides = new TreeMap<>();
    for (String pair : configs.split(",")) {
      if (!pair.isEmpty()) {
        String[] kv = pair.split("=", 2);
        overrides.put(kv[0], kv[1]);
      }
    }
    try {
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(overrides)))
          .all().get();
      return Errors.NONE.name();
    } catch (ExecutionException failure) {
      return error(failure);
    }
  }

  private static Object describe(Admin admin, ConfigResource resource) throws Exception {
    DescribeConfigsOptions options = new DescribeConfigsOptions()
        .includeSynonyms(true).includeDocumentation(false);
    Map<String, Object> out = new TreeMap<>();
    try {
      Config config = admin.describeConfigs(List.of(resource), options).all().get()
          .get(resource);
      for (ConfigEntry entry : config.entries()) {
        List<Object> synonyms = new ArrayList<>();
        for (ConfigEntry.ConfigSynonym synonym : entry.synonyms()) {
          synonyms.add(java.util.Arrays.asList(synonym.name(), synonym.value(),
              synonym.source().name()));
        }
        Map<String, Object> fields = new TreeMap<>();
        fields.put("value", entry.value());
        fields.put("source", entry.source().name());
        fields.put("read_only", entry.isReadOnly());
        fields.put("sensitive", entry.isSensitive());
        fields.put("type", entry.type().name());
        fields.put("synonyms", synonyms);
        out.put(entry.name(), fields);
      }
      return Map.of("error", Errors.NONE.name(), "entries", out);
    } catch (ExecutionException failure) {
      return Map.of("error", error(failure), "entries", out);
    }
  }

  @SuppressWarnings("unchecked")
  private static Object describeWhen(Admin admin, ConfigResource resource, String config,
                                     String source) throws Exception {
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      Map<String, Object> result = (Map<String, Object>) describe(admin, resource);
      Map<String, Object> entry = (Map<String, Object>)
          ((Map<String, Object>) result.get("entries")).get(config);
      String seen = entry == null ? "ABSENT" : (String) entry.get("source");
      if (seen.equals(source) || System.nanoTime() > deadline) {
        return result;
      }
      Thread.sleep(100);
    }
  }

  private static String alter(Admin admin, ConfigResource resource, boolean validateOnly,
                              String operations, boolean withMessage) throws Exception {
    List<AlterConfigOp> ops = new ArrayList<>();
    for (String operation : operations.split(";")) {
      String[] opAndConfig = operation.split(" ", 2);
      String[] kv = opAndConfig[1].split("=", 2);
      ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv.length > 1 ? kv[1] : null),
          AlterConfigOp.OpType.valueOf(opAndConfig[0])));
    }
    try {
      admin.incrementalAlterConfigs(Map.of(resource, ops),
          new AlterConfigsOptions().validateOnly(validateOnly)).all().get();
      return Errors.NONE.name();
    } catch (ExecutionException failure) {
      return withMessage ? error(failure) + ": " + failure.getCause().getMessage()
          : error(failure);
    }
  }
}
