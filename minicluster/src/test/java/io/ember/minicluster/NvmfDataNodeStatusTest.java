package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.nvmf.NvmfDataNode;
import io.ember.protocol.StorageClass;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * An NVMf data node's status page and metrics: the embedded target's controllers, with their
 * commands, bytes, queue depth and latency, moved by a client's real NVMe/TCP I/O.
 */
class NvmfDataNodeStatusTest {
  private static final Pattern WRITTEN =
      Pattern.compile(
          "ember_nvmf_target_bytes_total\\{controller=\"(\\d+)\",direction=\"written\",host=\"([^\"]+)\"\\}");

  @Test
  void theEmbeddedTargetsControllersShowTheClientsIo() throws Exception {
    HttpClient http = HttpClient.newHttpClient();
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(0)
                .blockSize("1m")
                .set(io.ember.datanode.nvmf.NvmfDataNodeKeys.EMBEDDED_SIZE, "64m")
                .nvmfDatanode("")
                .build();
        EmberClient client = cluster.newClient()) {
      NvmfDataNode node = cluster.nvmfDatanodes().get(0);
      String at = "http://127.0.0.1:" + node.httpAddress().getPort();
      Map<String, Double> before = PrometheusText.parse(get(http, at + "/metrics"));
      assertEquals(
          (double) node.capacity(), before.get("ember_datanode_capacity_bytes{tier=\"nvmf\"}"));
      Set<String> oldControllers = controllers(before);

      int size = 5 << 20;
      try (EmberOutputStream out =
          client.create("/n", CreateOptions.DEFAULT.withStorageClass(StorageClass.NVMF))) {
        out.write(TestFiles.data(size, 9));
      }
      assertEquals(size, TestFiles.readAll(client, "/n").length);

      Map<String, Double> after = PrometheusText.parse(get(http, at + "/metrics"));
      Set<String> fresh = controllers(after);
      fresh.removeAll(oldControllers);
      assertEquals(1, fresh.size(), "the client's controller, new: " + after.keySet());
      String[] c = fresh.iterator().next().split("\n", 2);
      // Label names in alphabetical order, as the parser keys series.
      String id = "controller=\"" + c[0] + "\"";
      String host = "host=\"" + c[1] + "\"";
      assertEquals(
          size,
          after.get(
              "ember_nvmf_target_bytes_total{" + id + ",direction=\"written\"," + host + "}"));
      assertTrue(
          after.get("ember_nvmf_target_bytes_total{" + id + ",direction=\"read\"," + host + "}")
              >= size);
      assertEquals(0, after.get("ember_nvmf_target_queue_depth{" + id + "," + host + "}"));
      double commands = 0;
      for (String kind : new String[] {"read", "write", "other"}) {
        commands +=
            after.get(
                "ember_nvmf_target_commands_total{" + id + "," + host + ",kind=\"" + kind + "\"}");
      }
      assertTrue(commands >= 10, "5 MiB in 1 MiB writes, read back: " + commands);
      assertEquals(
          commands,
          after.get("ember_nvmf_target_command_latency_seconds_count{" + id + "," + host + "}"));
      assertEquals(
          commands,
          after.get(
              "ember_nvmf_target_command_latency_seconds_bucket{"
                  + id
                  + ","
                  + host
                  + ",le=\"+Inf\"}"));

      // The data node's and the client's I/O queues, spread over the target's network threads.
      java.util.List<Double> perThread = new java.util.ArrayList<>();
      for (int t = 0; after.containsKey(threadQueues(t)); t++) {
        perThread.add(after.get(threadQueues(t)));
      }
      assertTrue(!perThread.isEmpty(), "no ember_nvmf_target_thread_io_queues: " + after.keySet());
      assertTrue(
          perThread.stream().mapToDouble(Double::doubleValue).sum() >= 2, perThread.toString());
      assertTrue(
          java.util.Collections.max(perThread) - java.util.Collections.min(perThread) <= 1,
          "I/O queues per network thread: " + perThread);

      String page = get(http, at + "/");
      assertTrue(page.contains("Controllers of the embedded target"), page);
      JsonNode summary = new ObjectMapper().readTree(get(http, at + "/api/summary"));
      assertEquals(node.endpoint(), summary.get("endpoint").asText());
      assertTrue(summary.get("connected").asBoolean());
      assertTrue(summary.get("controllers").size() >= 2, summary.toString());
    }
  }

  private static String threadQueues(int thread) {
    return "ember_nvmf_target_thread_io_queues{thread=\"" + thread + "\"}";
  }

  /** Each controller in the metrics, as its id and host NQN on two lines. */
  private static Set<String> controllers(Map<String, Double> metrics) {
    Set<String> out = new HashSet<>();
    for (String key : metrics.keySet()) {
      Matcher m = WRITTEN.matcher(key);
      if (m.matches()) {
        out.add(m.group(1) + "\n" + m.group(2));
      }
    }
    return out;
  }

  private static String get(HttpClient http, String url) throws Exception {
    HttpResponse<String> r =
        http.send(
            HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), url + ": " + r.body());
    return r.body();
  }
}
