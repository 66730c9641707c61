package odradek.jvm.catalogue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import odradek.jvm.Json;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Prints Kafka's own config catalogue as one JSON object, documentation left out: every broker
 * config of the broker's ConfigDef (type, default as DescribeConfigs reports it, internal, how
 * it may be updated dynamically, its validator), the broker synonyms DescribeConfigs lists, and
 * every topic config of LogConfig with the broker config that supplies its default. Odradek's
 * {@code odradek/config/kafka_catalogue.py} is generated from this output.
 *
 * <p>The broker's classes (kafka-server, kafka-storage) are runtime dependencies of kafka_2.13,
 * off the compile classpath, so they are reached by reflection.
 */
public final class DumpCatalogue {
  private DumpCatalogue() {}

  private static final String SERVER_CONFIG = "org.apache.kafka.server.config.";

  public static void main(String[] args) throws ReflectiveOperationException {
    Map<String, String> modes = call(SERVER_CONFIG + "DynamicBrokerConfig",
        "dynamicConfigUpdateModes");
    ConfigDef brokerDef = field(SERVER_CONFIG + "AbstractKafkaConfig", "CONFIG_DEF");
    Map<String, String> topicSynonyms = field(SERVER_CONFIG + "ServerTopicConfigSynonyms",
        "TOPIC_CONFIG_SYNONYMS");
    Map<String, ConfigDef.ConfigKey> topicKeys = call(
        "org.apache.kafka.storage.internals.log.LogConfig", "configKeys");
    Set<String> security = field(SERVER_CONFIG + "DynamicBrokerConfig",
        "DYNAMIC_SECURITY_CONFIGS");
    Map<String, Object> broker = new TreeMap<>();
    Map<String, Object> brokerSynonyms = new TreeMap<>();
    for (ConfigDef.ConfigKey key : brokerDef.configKeys().values()) {
      Map<String, Object> entry = describe(key);
      entry.put("mode", modes.getOrDefault(key.name, "read-only"));
      broker.put(key.name, entry);
      List<String> synonyms = brokerSynonyms(key.name);
      if (!synonyms.equals(List.of(key.name))) {
        brokerSynonyms.put(key.name, new ArrayList<>(synonyms));
      }
    }
    // Dynamic configs outside the broker's ConfigDef (the replication throttle rates): typed by
    // DynamicConfig.Broker's own ConfigDef; DescribeConfigs lists them only once set.
    Map<String, ConfigDef.ConfigKey> dynamicKeys = call(SERVER_CONFIG + "DynamicConfig$Broker",
        "configKeys");
    Map<String, Object> dynamicOnly = new TreeMap<>();
    for (String name : modes.keySet()) {
      if (!broker.containsKey(name)) {
        Map<String, Object> entry = describe(dynamicKeys.get(name));
        entry.put("mode", modes.get(name));
        dynamicOnly.put(name, entry);
      }
    }
    Map<String, Object> topic = new TreeMap<>();
    for (ConfigDef.ConfigKey key : topicKeys.values()) {
      Map<String, Object> entry = describe(key);
      entry.put("synonym", topicSynonyms.get(key.name));
      topic.put(key.name, entry);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("kafka_version", AppInfoParser.getVersion());
    out.put("broker", broker);
    out.put("broker_synonyms", brokerSynonyms);
    out.put("broker_dynamic_only", dynamicOnly);
    out.put("listener_prefix_only", new TreeSet<>(security));
    out.put("topic", topic);
    System.out.println(Json.object(out));
  }

  @SuppressWarnings("unchecked")
  private static <T> T field(String className, String name) throws ReflectiveOperationException {
    return (T) Class.forName(className).getField(name).get(null);
  }

  @SuppressWarnings("unchecked")
  private static <T> T call(String className, String name) throws ReflectiveOperationException {
    return (T) Class.forName(className).getMethod(name).invoke(null);
  }

  /** DynamicBrokerConfig.brokerConfigSynonyms(name, matchListenerOverride = true). */
  @SuppressWarnings("unchecked")
  private static List<String> brokerSynonyms(String name) throws ReflectiveOperationException {
    return (List<String>) Class.forName(SERVER_CONFIG + "DynamicBrokerConfig")
        .getMethod("brokerConfigSynonyms", String.class, boolean.class).invoke(null, name, true);
  }

  private static Map<String, Object> describe(ConfigDef.ConfigKey key) {
    Map<String, Object> entry = new TreeMap<>();
    entry.put("type", key.type.name());
    boolean hasDefault = key.defaultValue != ConfigDef.NO_DEFAULT_VALUE;
    entry.put("has_default", hasDefault);
    Object value = hasDefault ? key.defaultValue : null;
    entry.put("default", value instanceof Password password ? password.value()
        : ConfigDef.convertToString(value, key.type));
    entry.put("internal", key.internalConfig);
    entry.put("validator", key.validator == null ? null : key.validator.toString());
    return entry;
  }
}
