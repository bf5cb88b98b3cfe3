package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static io.ember.minicluster.TestFiles.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.nvmf.rdma.RdmaVm;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What keeps one-sided RDMA access to DRAM data nodes safe: a key a client kept for a block that
 * went to another file is refused by the device, so the client reaches none of the new file's
 * bytes, reading or writing; a data node killed under a writer fails the write, with no hang; and a
 * writer that dies leaves its file closed at what the data node was told it wrote. Run inside the
 * kernel-nvmet VM by {@link DramRdmaInVmTest}; skipped, saying so, elsewhere.
 */
@RequiresRdmaAddress
class DramRdmaSafetyTest {
  private static final int BLOCK = 64 * 1024;

  private MiniCluster cluster;

  @BeforeEach
  void needsRdma() {
    TestTier.assumeRdmaRuns();
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static void write(EmberClient c, String path, byte[] bytes) throws IOException {
    try (EmberOutputStream out = c.create(path, CreateOptions.DEFAULT)) {
      out.write(bytes);
    }
  }

  /** One data node of two blocks: /x takes one, /filler the other, so /y must reuse /x's. */
  private byte[] reuseXsBlock(EmberClient writer, BlockLocation xBlock) throws Exception {
    writer.delete("/x", false);
    byte[] y = data(BLOCK, 2);
    write(writer, "/y", y);
    BlockLocation yBlock = writer.blockLocations("/y").get(0);
    assertEquals(xBlock.address(), yBlock.address(), "/y reuses /x's block");
    assertTrue(yBlock.generation() > xBlock.generation());
    return y;
  }

  @Test
  void aReaderThatKeptTheKeyOfAReusedBlockIsRefusedAndReadsNoneOfTheNewFile() throws Exception {
    cluster = TestTier.DRAM_RDMA.cluster(1, "128k").blockSize("64k").build();
    try (EmberClient writer = cluster.newClient();
        EmberClient reader = cluster.newClient()) {
      byte[] x = data(BLOCK, 1);
      write(writer, "/x", x);
      write(writer, "/filler", data(10, 3));
      try (EmberInputStream stale = reader.open("/x")) {
        // Read once, so the reader holds the block's key, not only its location.
        byte[] first = new byte[1000];
        stale.readFully(0, first, 0, first.length);
        assertArrayEquals(Arrays.copyOf(x, first.length), first);
        BlockLocation xBlock = reader.blockLocations("/x").get(0);
        byte[] y = reuseXsBlock(writer, xBlock);
        byte[] got = new byte[1000];
        EmberException e =
            assertThrows(
                EmberException.class,
                () -> stale.readFully(0, got, 0, got.length),
                () ->
                    Arrays.equals(got, Arrays.copyOf(y, got.length))
                        ? "read the bytes of the file that reused the block"
                        : "read something");
        // Refused by the device, then the location was asked for again: /x is gone.
        assertEquals(ErrorCode.NOT_FOUND, e.code(), e.getMessage());
        assertNotEquals(
            Arrays.toString(Arrays.copyOf(y, 16)), Arrays.toString(Arrays.copyOf(got, 16)));
        // The reader's connection is made anew, and it reads the new file.
        assertArrayEquals(y, readAll(reader, "/y"));
      }
    }
  }

  @Test
  void aWriterThatKeptTheKeyOfAReusedBlockCannotWriteIntoTheNewFile() throws Exception {
    cluster = TestTier.DRAM_RDMA.cluster(1, "128k").blockSize("64k").build();
    try (EmberClient writer = cluster.newClient();
        EmberClient other = cluster.newClient()) {
      EmberOutputStream late = writer.create("/x", CreateOptions.DEFAULT);
      late.write(data(1000, 1));
      late.flush();
      BlockLocation xBlock = other.blockLocations("/x").get(0);
      write(other, "/filler", data(10, 3));
      byte[] y = reuseXsBlock(other, xBlock);
      EmberException e =
          assertThrows(
              EmberException.class,
              () -> {
                late.write(data(5000, 4));
                late.close();
              });
      assertEquals(ErrorCode.STALE_LOCATION, e.code(), e.getMessage());
      assertArrayEquals(y, readAll(other, "/y"), "the reused block holds /y's bytes only");
    }
  }

  @Test
  void aDataNodeKilledUnderAWriterFailsTheWriteWithoutAHang() throws Exception {
    cluster =
        TestTier.DRAM_RDMA
            .cluster(1, "64m")
            .blockSize("1m")
            .set(EmberKeys.RPC_TIMEOUT, "30s")
            .set(EmberKeys.CONNECT_TIMEOUT, "10s")
            .build();
    try (EmberClient writer = cluster.newClient()) {
      DramDataNode node = cluster.datanodes().get(0);
      byte[] chunk = data(BLOCK, 5);
      EmberOutputStream out = writer.create("/big", CreateOptions.DEFAULT);
      CompletableFuture<Void> writing =
          CompletableFuture.runAsync(
              () -> {
                try {
                  for (int i = 0; i < 4096; i++) { // 256 MiB: more than the node holds
                    out.write(chunk);
                  }
                  out.close();
                } catch (IOException ex) {
                  throw new java.io.UncheckedIOException(ex);
                }
              });
      // Wait until bytes are landing, then kill the node under the writer.
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      while (node.rdmaRegisteredSlots() < 2) {
        assertTrue(System.nanoTime() < deadline, "the writer never got going");
        assertTrue(!writing.isDone(), "the write ended before the node was killed");
        Thread.sleep(5);
      }
      node.kill();
      ExecutionException e =
          assertThrows(ExecutionException.class, () -> writing.get(5, TimeUnit.MINUTES));
      Throwable cause = e.getCause() instanceof java.io.UncheckedIOException u ? u.getCause() : e;
      assertTrue(cause instanceof EmberException, String.valueOf(cause));
      assertTrue(cause.getMessage().contains("data node"), cause.getMessage());
    }
  }

  @Test
  void writesToADataNodeThatFallsBehindTimeOutNamingItAndFlowAgainOnceItCatchesUp()
      throws Exception {
    cluster =
        TestTier.DRAM_RDMA
            .cluster(1, "32m")
            .blockSize("64k")
            .set(EmberKeys.RPC_TIMEOUT, "3s")
            .build();
    DramDataNode node = cluster.datanodes().get(0);
    try (EmberClient writer = cluster.newClient()) {
      write(writer, "/before", data(BLOCK, 1));
      node.pauseRdmaNotices(true);
      try {
        // More writes than the data node keeps receives posted for one connection: the ones
        // past them wait for a receive that does not come, and time out.
        EmberException e =
            assertThrows(
                EmberException.class, () -> write(writer, "/stalled", data(200 * BLOCK, 2)));
        assertEquals(ErrorCode.TIMEOUT, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains("data node"), e.getMessage());
      } finally {
        node.pauseRdmaNotices(false);
      }
      // The connection that timed out was ended; the same client writes again over a new one.
      byte[] after = data(100 * BLOCK + 7, 3);
      write(writer, "/after", after);
      assertArrayEquals(after, readAll(writer, "/after"));
    }
  }

  @Test
  void aKilledClientLeavesNoConnectionOnTheDataNode() throws Exception {
    cluster = TestTier.DRAM_RDMA.cluster(1, "16m").blockSize("1m").build();
    DramDataNode node = cluster.datanodes().get(0);
    byte[] bytes = data(3 << 20, 6);
    try (EmberClient c = cluster.newClient()) {
      write(c, "/f", bytes);
    }
    Process child =
        RdmaVm.startJvm(
            DramRdmaLoadClient.class, cluster.config().get(EmberKeys.NAMENODE_ADDRESS), "/f");
    try {
      StringBuilder seen = new StringBuilder();
      assertTrue(RdmaVm.awaitLine(child, "RUNNING", seen), "the client got going:\n" + seen);
      assertTrue(node.rdmaConnections() >= 1, "the client's connection shows");
    } finally {
      child.destroyForcibly(); // SIGKILL: no close, no disconnect from the client
      child.waitFor(1, TimeUnit.MINUTES);
    }
    // The kernel tears the dead process's connection down, and the data node frees its side.
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
    while (node.rdmaConnections() > 0) {
      assertTrue(System.nanoTime() < deadline, "the killed client's connection stayed");
      Thread.sleep(20);
    }
    // And it serves the next client.
    try (EmberClient c = cluster.newClient()) {
      assertArrayEquals(bytes, readAll(c, "/f"));
    }
  }

  @Test
  void aClientWhereRdmaCannotRunReadsTheSameBlocksOverTcp() throws Exception {
    cluster = TestTier.DRAM_RDMA.cluster(1, "16m").blockSize("1m").build();
    byte[] bytes = data((2 << 20) + 5, 7);
    try (EmberClient c = cluster.newClient()) {
      write(c, "/f", bytes);
    }
    // Without the JVM flag DiSNI needs, the client cannot use RDMA.
    Process child =
        new ProcessBuilder(
                ProcessHandle.current().info().command().orElse("java"),
                "-cp",
                System.getProperty("java.class.path"),
                DramRdmaLoadClient.class.getName(),
                cluster.config().get(EmberKeys.NAMENODE_ADDRESS),
                "/f",
                "once")
            .redirectErrorStream(true)
            .start();
    String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(child.waitFor(2, TimeUnit.MINUTES), out);
    assertEquals(0, child.exitValue(), out);
    assertTrue(
        out.contains("READ " + bytes.length + " " + Arrays.hashCode(bytes)), "the bytes:\n" + out);
    assertTrue(out.contains("RDMA cannot run here"), "it says why it used TCP:\n" + out);
    assertTrue(out.contains("--add-exports"), "and what to do about it:\n" + out);
  }

  @Test
  void aWriterThatDiesHasItsFileClosedAtWhatItsNoticesToldTheDataNode() throws Exception {
    cluster =
        TestTier.DRAM_RDMA
            .cluster(1, "4m")
            .blockSize("64k")
            .set(NameNodeKeys.LEASE_TIMEOUT, "6s")
            .build();
    byte[] written = data(2 * BLOCK + 100, 4);
    try (EmberClient reader = cluster.newClient()) {
      String path = LeaseTest.writeAndDieBeforeReporting(cluster, reader, written);
      LeaseTest.awaitClosed(reader, path);
      assertEquals(written.length, reader.lookup(path).length());
      assertArrayEquals(written, readAll(reader, path));
    }
  }
}
