package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The file behaviour on DRAM data nodes that serve one-sided RDMA: two data nodes bound to the
 * soft-RoCE device's address, the client reading and writing their regions with RDMA READ and
 * WRITE. Run inside the kernel-nvmet VM by {@link DramRdmaInVmTest}; skipped, saying so, elsewhere.
 */
@RequiresRdmaAddress
class DramRdmaFileTest extends FileBehaviourTest {
  @Override
  MiniCluster startCluster() throws Exception {
    TestTier.assumeRdmaRuns();
    return TestTier.DRAM_RDMA.cluster(2, "16m").blockSize(BLOCK_SIZE).build();
  }

  @Override
  CreateOptions options() {
    return CreateOptions.DEFAULT;
  }

  private static Map<String, Double> metrics(DramDataNode node) throws Exception {
    HttpResponse<String> r =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://" + hostPort(node) + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), r.body());
    return PrometheusText.parse(r.body());
  }

  private static String hostPort(DramDataNode node) {
    var a = node.httpAddress();
    return a.getAddress().getHostAddress() + ":" + a.getPort();
  }

  private static final String WRITTEN = "ember_datanode_written_bytes_total{tier=\"dram\"}";

  private static double calls(Map<String, Double> m, String type) {
    return m.getOrDefault("ember_rpc_calls_total{outcome=\"OK\",type=\"" + type + "\"}", 0.0);
  }

  @Test
  void blocksAreReadAndWrittenOneSidedAndTheDataNodesCountWhatWasWritten() throws Exception {
    double writtenBefore = 0;
    double grantsBefore = 0;
    for (DramDataNode node : cluster.datanodes()) {
      Map<String, Double> m = metrics(node);
      writtenBefore += m.getOrDefault(WRITTEN, 0.0);
      grantsBefore += calls(m, "BLOCK_GRANT");
    }
    byte[] bytes = data(5 * 65536 + 123, 77);
    try (EmberOutputStream out = client.create("/rw/one-sided", options())) {
      out.write(bytes);
    }
    assertArrayEquals(bytes, TestFiles.readAll(client, "/rw/one-sided"));
    double grants = 0;
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (true) {
      double written = 0;
      grants = 0;
      for (DramDataNode node : cluster.datanodes()) {
        Map<String, Double> m = metrics(node);
        // Neither node saw a block read or write frame: the bytes went by RDMA.
        assertEquals(0.0, calls(m, "BLOCK_READ"), "BLOCK_READ frames served");
        assertEquals(0.0, calls(m, "BLOCK_WRITE"), "BLOCK_WRITE frames served");
        grants += calls(m, "BLOCK_GRANT");
        written += m.getOrDefault(WRITTEN, 0.0);
      }
      // Counted from the writers' notices, which arrive after their writes.
      written -= writtenBefore;
      grants -= grantsBefore;
      if (written >= bytes.length) {
        assertEquals((double) bytes.length, written, "bytes the data nodes counted");
        break;
      }
      assertTrue(System.nanoTime() < deadline, "the data nodes counted " + written + " bytes");
      Thread.sleep(20);
    }
    assertTrue(grants >= 6, "one grant per block at least: " + grants);
    int registered = 0;
    for (DramDataNode node : cluster.datanodes()) {
      assertEquals(DramDataNode.RDMA_TIER, node.tier());
      registered += node.rdmaRegisteredSlots();
      assertTrue(node.rdmaConnections() >= 1, "the client's RDMA connection to " + node.endpoint());
    }
    assertTrue(registered >= 6, "slots registered: " + registered);
  }
}
