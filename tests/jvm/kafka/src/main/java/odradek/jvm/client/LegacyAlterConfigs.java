package odradek.jvm.client;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterConfigsRequest;
import org.apache.kafka.common.requests.AlterConfigsResponse;
import org.apache.kafka.common.requests.RequestHeader;

/**
 * The legacy AlterConfigs request (API 33, which replaces a resource's whole dynamic config
 * set), built and read by Kafka's own request classes: Kafka 4's Admin no longer sends it,
 * but brokers still serve it (older clients and tools do). Plain TCP: PLAINTEXT only.
 */
final class LegacyAlterConfigs {
  private LegacyAlterConfigs() {}

  /** Sends the request to {@code hostPort}; returns each resource's error name. */
  static Map<String, Object> send(String hostPort, ConfigResource resource,
                                  Map<String, String> configs) throws Exception {
    List<AlterConfigsRequest.ConfigEntry> entries = new ArrayList<>();
    configs.forEach((name, value) -> entries.add(new AlterConfigsRequest.ConfigEntry(name,
        value)));
    short version = ApiKeys.ALTER_CONFIGS.latestVersion();
    AlterConfigsRequest request = new AlterConfigsRequest.Builder(
        Map.of(resource, new AlterConfigsRequest.Config(entries)), false).build(version);
    RequestHeader header = new RequestHeader(ApiKeys.ALTER_CONFIGS, version, "odradek-checks",
        1);
    ByteBuffer bytes = request.serializeWithHeader(header);
    String[] parts = hostPort.split(":");
    try (Socket socket = new Socket(parts[0], Integer.parseInt(parts[1]))) {
      socket.setSoTimeout(60_000);
      DataOutputStream out = new DataOutputStream(socket.getOutputStream());
      out.writeInt(bytes.remaining());
      out.write(bytes.array(), bytes.arrayOffset() + bytes.position(), bytes.remaining());
      out.flush();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      byte[] answer = new byte[in.readInt()];
      in.readFully(answer);
      AlterConfigsResponse response = (AlterConfigsResponse) AbstractResponse.parseResponse(
          ByteBuffer.wrap(answer), header);
      Map<String, Object> errors = new TreeMap<>();
      response.errors().forEach((r, error) -> errors.put(r.name(), error.error().name()));
      return errors;
    }
  }
}
