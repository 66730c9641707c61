package odradek.jvm.streams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import odradek.jvm.Json;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * An exactly-once ({@code exactly_once_v2}) Kafka Streams application over clicks, for the
 * Streams test against an Odradek cluster.
 *
 * <p>Input: {@code clicks} (key: click id, value: {@code user:amount}, event timestamps) and
 * {@code users} (key: user, value: region). The topology:
 *
 * <ul>
 *   <li>the clicks re-keyed by user through a repartition topic, copied to {@code
 *       clicks-by-user} (value: click id), so every click must come out exactly once;
 *   <li>a tumbling-window sum of amounts per user (10 s windows, a changelogged window
 *       store) to {@code window-sums} (key: {@code user@windowStart});
 *   <li>the all-time sum per user (a changelogged table) joined with the users table
 *       (KTable-KTable) to {@code user-regions} (value: {@code region:total});
 *   <li>that join grouped by region (a second repartition, with a subtractor) and summed to
 *       {@code region-totals}.
 * </ul>
 *
 * <p>Usage: {@code ClickStreams BOOTSTRAP APPLICATION_ID STATE_DIR}. Prints one JSON line
 * per state change, per store partition restored from its changelog and per uncaught
 * exception; closes cleanly when its stdin closes, then
 * prints {@code {"closed": true, "final": "NOT_RUNNING"}}.
 */
public final class ClickStreams {
  static final Duration WINDOW = Duration.ofSeconds(10);
  static final Duration GRACE = Duration.ofHours(1);

  private ClickStreams() {}

  static Topology topology() {
    StreamsBuilder builder = new StreamsBuilder();
    KStream<String, String> byUser = builder
        .stream("clicks", Consumed.with(Serdes.String(), Serdes.String()))
        .map((clickId, value) -> KeyValue.pair(beforeColon(value), clickId + ":" + amount(value)))
        .repartition(Repartitioned.<String, String>as("by-user")
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
    byUser.mapValues(ClickStreams::beforeColon)
        .to("clicks-by-user", Produced.with(Serdes.String(), Serdes.String()));

    byUser.mapValues(ClickStreams::amount)
        .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()))
        .windowedBy(TimeWindows.ofSizeAndGrace(WINDOW, GRACE))
        .reduce(Long::sum, Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(
                "window-sums-store").withRetention(WINDOW.plus(GRACE).multipliedBy(2)))
        .toStream()
        .map((window, sum) -> KeyValue.pair(
            window.key() + "@" + window.window().start(), Long.toString(sum)))
        .to("window-sums", Produced.with(Serdes.String(), Serdes.String()));

    // The join's two sides are not cached: a join reads the other side's store, cache
    // included, while a cached side forwards its updates (with their old values) only when
    // the cache flushes; the join's old values would then disagree with what it forwarded
    // before, and the regrouped sums below would take the wrong amounts off a region.
    KTable<String, Long> totals = byUser.mapValues(ClickStreams::amount)
        .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()))
        .reduce(Long::sum, Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(
            "user-totals-store").withCachingDisabled());
    KTable<String, String> regions = builder.table(
        "users", Consumed.with(Serdes.String(), Serdes.String()),
        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("users-store")
            .withCachingDisabled());
    KTable<String, String> joined = totals.join(
        regions, (total, region) -> region + ":" + total);
    joined.toStream().to("user-regions", Produced.with(Serdes.String(), Serdes.String()));

    joined.groupBy((user, regionTotal) -> KeyValue.pair(
                regionTotal.substring(0, regionTotal.indexOf(':')),
                Long.parseLong(regionTotal.substring(regionTotal.indexOf(':') + 1))),
            Grouped.with("by-region", Serdes.String(), Serdes.Long()))
        .reduce(Long::sum, (sum, old) -> sum - old,
            Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("region-totals-store"))
        .toStream()
        .mapValues(sum -> Long.toString(sum))
        .to("region-totals", Produced.with(Serdes.String(), Serdes.String()));
    return builder.build();
  }

  /** The user of a click's value {@code user:amount}, or the click id of a by-user value
   * {@code clickId:amount}. */
  private static String beforeColon(String value) {
    return value.substring(0, value.indexOf(':'));
  }

  private static Long amount(String value) {
    return Long.parseLong(value.substring(value.indexOf(':') + 1));
  }

  static Properties config(String bootstrap, String applicationId, String stateDir) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 3);
    props.put(StreamsConfig.topicPrefix("min.insync.replicas"), "2");
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    // Transactions of 2 s rather than 100 ms (exactly_once_v2's default): an instance fed
    // without pause is inside one most of the time, where the test kills it.
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 2000);
    // Purges the repartition topics (DeleteRecords) within the test's run, not every 30 s.
    props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
    // A killed instance leaves the group after 6 s (Kafka's group.min.session.timeout.ms).
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
    return props;
  }

  public static void main(String[] args) throws Exception {
    KafkaStreams streams = new KafkaStreams(topology(), config(args[0], args[1], args[2]));
    streams.setStateListener((now, before) -> report(Map.of(
        "state", now.name(), "from", before.name())));
    streams.setUncaughtExceptionHandler(error -> {
      report(Map.of("uncaught", String.valueOf(error)));
      return StreamThreadExceptionResponse.REPLACE_THREAD;
    });
    streams.setGlobalStateRestoreListener(new StateRestoreListener() {
      @Override
      public void onRestoreStart(TopicPartition partition, String store, long start, long end) {}

      @Override
      public void onBatchRestored(TopicPartition partition, String store, long end, long count) {}

      @Override
      public void onRestoreEnd(TopicPartition partition, String store, long restored) {
        report(Map.of("restored", store, "changelog", partition.toString(),
            "records", restored));
      }
    });
    streams.start();
    BufferedReader stdin = new BufferedReader(
        new InputStreamReader(System.in, StandardCharsets.UTF_8));
    while (stdin.readLine() != null) {
      // Runs until the test closes stdin.
    }
    boolean closed = streams.close(Duration.ofSeconds(60));
    // The listener hears NOT_RUNNING on Streams' daemon close thread, which may not get to
    // report it before this thread returns and the JVM exits: the state is reported here too.
    report(Map.of("closed", closed, "final", streams.state().name()));
  }

  private static synchronized void report(Map<String, ?> fields) {
    System.out.println(Json.object(fields));
    System.out.flush();
  }
}
