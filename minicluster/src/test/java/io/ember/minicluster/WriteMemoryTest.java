package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.ClientKeys;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The direct memory a client keeps for its output streams' writes goes back once the client has
 * stopped writing for the idle time, and not while it still writes.
 */
class WriteMemoryTest {
  private static final Duration DEADLINE = Duration.ofMinutes(2);
  private static final int MIB = 1 << 20;

  @Test
  void keptWriteMemoryIsFreedOnceTheClientStopsWriting() throws Exception {
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .dramCapacity("64m")
                // Renewals, which free idle memory, every second.
                .set(NameNodeKeys.LEASE_TIMEOUT, "4s")
                .build();
        EmberClient keeps =
            cluster.newClient(
                EmberConfig.defaults()
                    .with(ClientKeys.WRITE_BUFFERS_KEPT, "32m")
                    .with(ClientKeys.WRITE_BUFFERS_IDLE, "1d"));
        EmberClient frees =
            cluster.newClient(
                EmberConfig.defaults()
                    .with(ClientKeys.WRITE_BUFFERS_KEPT, "32m")
                    .with(ClientKeys.WRITE_BUFFERS_IDLE, "200ms"))) {
      byte[] bytes = data(4 * MIB, 7);
      for (EmberClient c : new EmberClient[] {keeps, frees}) {
        try (EmberOutputStream out =
            c.create("/f-" + System.identityHashCode(c), CreateOptions.DEFAULT)) {
          out.write(bytes);
        }
        assertTrue(
            c.metrics().writeMemoryKept() >= MIB,
            "the writes' memory is kept once they are done: " + c.metrics());
      }

      long deadline = System.nanoTime() + DEADLINE.toNanos();
      while (frees.metrics().writeMemoryKept() > 0) {
        assertTrue(
            System.nanoTime() < deadline, "idle write memory never freed: " + frees.metrics());
        Thread.sleep(20);
      }
      // A file held open, with nothing written, makes the keeping client's renewals visible: its
      // renewer, which is what frees idle memory, has run twice more once they are counted.
      try (EmberOutputStream open = keeps.create("/held-open", CreateOptions.DEFAULT)) {
        long renewals = keeps.metrics().leaseRenewals();
        while (keeps.metrics().leaseRenewals() < renewals + 2) {
          assertTrue(System.nanoTime() < deadline, "no lease renewals: " + keeps.metrics());
          Thread.sleep(20);
        }
        assertTrue(keeps.metrics().writeMemoryKept() >= MIB, "kept within its idle time");
        assertEquals(0, open.position());
      }

      // A client that freed its memory writes on, from fresh memory.
      try (EmberOutputStream out = frees.create("/again", CreateOptions.DEFAULT)) {
        out.write(bytes);
      }
      try (EmberInputStream in = frees.open("/again")) {
        assertArrayEquals(bytes, in.readAllBytes());
      }
      assertEquals(4L * MIB, frees.lookup("/again").length());
    }
  }
}
