package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The name node's status pages, JSON API and metrics, over real HTTP against a mini cluster. */
class StatusPagesTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration DEADLINE = Duration.ofSeconds(60);

  private MiniCluster cluster;
  private EmberClient client;
  private HttpClient http;
  private String base;

  @BeforeEach
  void start() throws Exception {
    cluster = MiniCluster.builder().dramDatanodes(2).dramCapacity("16m").blockSize("1m").build();
    client = cluster.newClient();
    http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(20)).build();
    InetSocketAddress at = cluster.namenode().httpAddress();
    base = "http://127.0.0.1:" + at.getPort();
  }

  @AfterEach
  void stop() {
    if (client != null) {
      client.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  private HttpResponse<String> get(String path) throws Exception {
    return fetch(base + path);
  }

  /** A GET that fails the test, rather than hangs it, when a server does not answer. */
  private HttpResponse<String> fetch(String url) throws Exception {
    return send(HttpRequest.newBuilder(URI.create(url)));
  }

  private HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
    return http.send(
        request.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode json(String path) throws Exception {
    HttpResponse<String> r = get(path);
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
    return JSON.readTree(r.body());
  }

  private void write(String path, int bytes) throws IOException {
    try (EmberOutputStream out =
        client.create(path, CreateOptions.DEFAULT.withCreateParents(true))) {
      out.write(TestFiles.data(bytes, bytes));
    }
  }

  @Test
  void theStatusPageListsTheDataNodesWithTheirCapacity() throws Exception {
    HttpResponse<String> page = get("/");
    assertEquals(200, page.statusCode());
    assertTrue(page.headers().firstValue("content-type").orElse("").startsWith("text/html"));
    assertTrue(page.body().contains("http-equiv=\"refresh\""), "refreshes without script");
    for (var dn : cluster.datanodes()) {
      assertTrue(page.body().contains(dn.endpoint()), "lists " + dn.endpoint());
    }
    JsonNode nodes = json("/api/datanodes");
    assertEquals(2, nodes.size());
    for (JsonNode n : nodes) {
      assertEquals("live", n.get("state").asText());
      assertEquals(16L << 20, n.get("capacityBytes").asLong());
      assertEquals(0, n.get("usedBytes").asLong());
    }
    write("/a/three-blocks", 3 << 20);
    JsonNode cluster = json("/api/cluster");
    assertEquals(1, cluster.get("files").asLong());
    JsonNode dram = cluster.get("classes").get(0);
    assertEquals(32L << 20, dram.get("capacityBytes").asLong());
    assertEquals(3L << 20, dram.get("usedBytes").asLong());
  }

  @Test
  void aKilledDataNodeTurnsLostAndItsWarningIsShown() throws Exception {
    String killed = cluster.datanodes().get(0).endpoint();
    cluster.killDatanode(0);
    long deadline = System.nanoTime() + DEADLINE.toNanos();
    String state = "";
    while (System.nanoTime() < deadline) {
      for (JsonNode n : json("/api/datanodes")) {
        if (n.get("endpoint").asText().equals(killed)) {
          state = n.get("state").asText();
        }
      }
      if (state.equals("lost")) {
        break;
      }
      Thread.sleep(50);
    }
    assertEquals("lost", state, "the killed data node within " + DEADLINE);
    String page = get("/").body();
    assertTrue(page.contains("class=\"lost\">lost<"), page);
    assertTrue(page.contains("no heartbeat"), "the last warnings say why");
    JsonNode events = json("/api/events");
    boolean named = false;
    for (JsonNode event : events) {
      named |= event.get("message").asText().contains(killed);
    }
    assertTrue(named, "an event names the lost node: " + events);
    Map<String, Double> m = metrics();
    assertEquals(1, m.get("ember_namenode_datanodes{class=\"dram\",state=\"lost\"}"));
    assertEquals(1, m.get("ember_namenode_datanodes{class=\"dram\",state=\"live\"}"));
  }

  @Test
  void theBrowserShowsDirectoriesAndAFilesBlocks() throws Exception {
    write("/dir/sub/f <b>", (2 << 20) + 5);
    String root = get("/browse?path=/").body();
    assertTrue(root.contains("href=\"/browse?path=%2Fdir\""), root);
    String dir = get("/browse?path=/dir/sub").body();
    assertTrue(dir.contains("f &lt;b&gt;"), "names are escaped: " + dir);
    JsonNode file = json("/api/file?path=/dir/sub/f%20%3Cb%3E");
    assertEquals((2 << 20) + 5, file.get("status").get("length").asLong());
    JsonNode blocks = file.get("blocks");
    assertEquals(3, blocks.size());
    String page = get("/browse?path=/dir/sub/f%20%3Cb%3E").body();
    for (JsonNode b : blocks) {
      assertTrue(page.contains("<td class=\"num\">" + b.get("blockId").asLong() + "</td>"), page);
      assertTrue(page.contains(b.get("endpoint").asText()));
    }
    JsonNode listed = json("/api/list?path=/dir");
    assertEquals("sub", listed.get("entries").get(0).get("name").asText());
  }

  @Test
  void unknownPathsAndMethodsAreRefused() throws Exception {
    assertEquals(404, get("/nope").statusCode());
    HttpResponse<String> missing = get("/browse?path=/missing");
    assertEquals(404, missing.statusCode());
    assertTrue(missing.body().contains("/missing"), missing.body());
    assertEquals(404, get("/api/file?path=/a/../../x%00").statusCode());
    HttpResponse<String> post =
        send(
            HttpRequest.newBuilder(URI.create(base + "/"))
                .POST(HttpRequest.BodyPublishers.ofString("x")));
    assertEquals(405, post.statusCode());
    HttpResponse<String> head =
        send(
            HttpRequest.newBuilder(URI.create(base + "/"))
                .method("HEAD", HttpRequest.BodyPublishers.noBody()));
    assertEquals(200, head.statusCode());
    assertEquals("", head.body());
    assertTrue(
        head.headers().firstValueAsLong("content-length").orElse(0) > 100, "a page's length");
    assertEquals("GET, HEAD", post.headers().firstValue("allow").orElse(""));
  }

  @Test
  void metricsParseAndCountTheRequestsMade() throws Exception {
    Map<String, Double> before = metrics();
    String creates = "ember_rpc_calls_total{outcome=\"OK\",type=\"CREATE\"}";
    int n = 7;
    for (int i = 0; i < n; i++) {
      write("/m/f" + i, 10);
    }
    assertTrue(client.lookupAsync("/m/none").handle((s, e) -> e != null).get());
    Map<String, Double> after = metrics();
    assertEquals(n, after.getOrDefault(creates, 0.0) - before.getOrDefault(creates, 0.0));
    String notFound = "ember_rpc_calls_total{outcome=\"NOT_FOUND\",type=\"LOOKUP\"}";
    assertEquals(1, after.getOrDefault(notFound, 0.0) - before.getOrDefault(notFound, 0.0));
    assertEquals(n, after.get("ember_namenode_files{}"));
    assertEquals(
        after.get("ember_rpc_latency_seconds_count{type=\"CREATE\"}"),
        after.get("ember_rpc_latency_seconds_bucket{le=\"+Inf\",type=\"CREATE\"}"));
    assertEquals(2, after.get("ember_namenode_datanodes{class=\"dram\",state=\"live\"}"));
    assertTrue(after.get("jvm_memory_used_bytes{area=\"heap\"}") > 0);
    assertTrue(after.containsKey("netty_direct_memory_used_bytes{}"));
  }

  @Test
  void dataNodesCountTheBytesWrittenAndReadExactly() throws Exception {
    String written = "ember_datanode_written_bytes_total{tier=\"dram\"}";
    String read = "ember_datanode_read_bytes_total{tier=\"dram\"}";
    double writtenBefore = sumOverDatanodes(written);
    double readBefore = sumOverDatanodes(read);
    int size = (24 << 20) + 12345;
    write("/bytes", size);
    assertEquals(size, sumOverDatanodes(written) - writtenBefore);
    assertEquals(size, TestFiles.readAll(client, "/bytes").length);
    assertEquals(size, sumOverDatanodes(read) - readBefore);
    for (var dn : cluster.datanodes()) {
      String at = "http://127.0.0.1:" + dn.httpAddress().getPort();
      HttpResponse<String> page = fetch(at + "/");
      assertEquals(200, page.statusCode());
      assertTrue(page.body().contains(dn.endpoint()), page.body());
      JsonNode summary = JSON.readTree(fetch(at + "/api/summary").body());
      assertEquals(16L << 20, summary.get("capacityBytes").asLong());
      assertEquals(dn.datanodeId(), summary.get("datanodeId").asInt());
    }
  }

  @Test
  void withMetricsOffMetricsAnswer404AndThePagesStay() throws Exception {
    try (MiniCluster quiet =
            MiniCluster.builder()
                .dramDatanodes(1)
                .dramCapacity("8m")
                .blockSize("1m")
                .set(io.ember.protocol.EmberKeys.METRICS_ENABLED, "false")
                .build();
        EmberClient c = quiet.newClient()) {
      try (EmberOutputStream out = c.create("/f", CreateOptions.DEFAULT)) {
        out.write(TestFiles.data(3 << 20, 3));
      }
      for (int port :
          new int[] {
            quiet.namenode().httpAddress().getPort(),
            quiet.datanodes().get(0).httpAddress().getPort()
          }) {
        String at = "http://127.0.0.1:" + port;
        HttpResponse<String> m = fetch(at + "/metrics");
        assertEquals(404, m.statusCode());
        assertTrue(m.body().contains("ember.metrics.enabled=false"), m.body());
        HttpResponse<String> page = fetch(at + "/");
        assertEquals(200, page.statusCode());
      }
    }
  }

  private double sumOverDatanodes(String series) throws Exception {
    double sum = 0;
    for (var dn : cluster.datanodes()) {
      HttpResponse<String> r = fetch("http://127.0.0.1:" + dn.httpAddress().getPort() + "/metrics");
      assertEquals(200, r.statusCode());
      sum += PrometheusText.parse(r.body()).getOrDefault(series, 0.0);
    }
    return sum;
  }

  private Map<String, Double> metrics() throws Exception {
    HttpResponse<String> r = get("/metrics");
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("text/plain"));
    return PrometheusText.parse(r.body());
  }

  @Test
  void aStuckHttpClientSlowsNeitherRpcsNorOtherPages() throws Exception {
    InetSocketAddress at =
        new InetSocketAddress(
            InetAddress.getLoopbackAddress(), cluster.namenode().httpAddress().getPort());
    try (Socket stuck = new Socket();
        Socket neverReads = new Socket()) {
      stuck.connect(at);
      neverReads.connect(at);
      // One sends half a request and waits; the other asks for many pages and reads none.
      stuck
          .getOutputStream()
          .write("GET / HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.UTF_8));
      OutputStream out = neverReads.getOutputStream();
      byte[] request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.UTF_8);
      for (int i = 0; i < 200; i++) {
        out.write(request);
      }
      out.flush();
      for (int i = 0; i < 20; i++) {
        write("/busy/f" + i, 100);
      }
      assertEquals(20, client.list("/busy").size());
      assertEquals(200, get("/").statusCode());
    }
  }
}
