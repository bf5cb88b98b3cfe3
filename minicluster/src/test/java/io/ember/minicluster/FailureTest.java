package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.ClientKeys;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.ClassUsage;
import io.ember.protocol.StorageClass;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Data nodes that die, a full tier, a name node that restarts or goes away, dying clients. */
class FailureTest {
  /**
   * How long a test waits for something the cluster does by itself (a loss noticed, nodes back
   * after a restart): far longer than it takes on a starved machine, so only a real failure reaches
   * it. Tests wait for the event, never for a fixed time.
   */
  private static final Duration PATIENCE = Duration.ofSeconds(90);

  private MiniCluster cluster;

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * A cluster whose RPC timeout is longer than any test waits: a failure that should come at once
   * (a closed connection, a node the name node says is lost) and instead waited for a timeout ends
   * in {@link ErrorCode#TIMEOUT}, which the tests reject, rather than in a race against a
   * wall-clock bound. Connections on loopback are refused or made at once, so the connect timeout
   * only needs to be generous. The data node timeout is long enough that a node starved of CPU for
   * a few seconds is not taken for dead.
   */
  private MiniCluster start(int nodes, String capacity) throws EmberException {
    cluster =
        MiniCluster.builder()
            .dramDatanodes(nodes)
            .blockSize("64k")
            .dramCapacity(capacity)
            .set(NameNodeKeys.DATANODE_TIMEOUT, "5s")
            .set(EmberKeys.RPC_TIMEOUT, "2m")
            .set(EmberKeys.CONNECT_TIMEOUT, "20s")
            .build();
    return cluster;
  }

  /** Fails unless {@code e} came at once: from a closed or refused connection, not a timeout. */
  private static void assertNotATimeout(EmberException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof EmberException ee) {
        assertNotEquals(ErrorCode.TIMEOUT, ee.code(), e.toString());
      }
    }
  }

  private static void write(EmberClient c, String path, byte[] data) throws Exception {
    try (EmberOutputStream out = c.create(path, CreateOptions.DEFAULT)) {
      out.write(data);
    }
  }

  private static byte[] read(EmberClient c, String path) throws Exception {
    try (InputStream in = c.open(path)) {
      return in.readAllBytes();
    }
  }

  private void awaitLost(EmberClient c, int lost) throws Exception {
    long deadline = System.nanoTime() + PATIENCE.toNanos();
    List<ClassUsage> usage;
    do {
      usage = c.df();
      for (ClassUsage u : usage) {
        if (u.storageClass().equals(StorageClass.DRAM) && u.lostNodes() == lost) {
          return;
        }
      }
      Thread.sleep(20);
    } while (System.nanoTime() - deadline < 0);
    throw new AssertionError(
        "expected " + lost + " lost DRAM data node(s) within " + PATIENCE + "; have " + usage);
  }

  @Test
  void readOfABlockOnAKilledDataNodeNamesFileBlockAndNodeAndOthersStayReadable() throws Exception {
    start(2, "8m");
    EmberClient writer = cluster.newClient();
    List<byte[]> contents = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      contents.add(data(40_000, i));
      write(writer, "/f" + i, contents.get(i));
    }
    DramDataNode victim = cluster.datanodes().get(0);
    int victimId = victim.datanodeId();
    cluster.killDatanode(0);

    EmberClient reader = cluster.newClient();
    // Before the name node notices: the connection fails, and the error names block and node.
    for (int i = 0; i < 6; i++) {
      BlockLocation b = reader.blockLocations("/f" + i).get(0);
      if (b.datanodeId() == victimId) {
        String path = "/f" + i;
        EmberException e = assertThrows(EmberException.class, () -> read(reader, path));
        assertTrue(e.getMessage().contains("block 0 of " + path), e.getMessage());
        assertTrue(e.getMessage().contains("data node " + victimId), e.getMessage());
      }
    }
    awaitLost(reader, 1);
    int lostFiles = 0;
    for (int i = 0; i < 6; i++) {
      String path = "/f" + i;
      BlockLocation b = reader.blockLocations(path).get(0);
      if (b.datanodeId() == victimId) {
        lostFiles++;
        assertTrue(b.lost());
        EmberException e = assertThrows(EmberException.class, () -> read(reader, path));
        assertEquals(ErrorCode.DATANODE_LOST, e.code());
        // Exactly this message, with no "reading block ... failed" around it: the read failed on
        // the name node's word that the node is lost, without trying the node.
        assertEquals(
            "data node "
                + victimId
                + " ("
                + victim.endpoint()
                + ") lost: block 0 of "
                + path
                + " unavailable",
            e.getMessage());
      } else {
        assertArrayEquals(contents.get(i), read(reader, path), path);
      }
    }
    assertTrue(lostFiles > 0 && lostFiles < 6, "files spread over both nodes: " + lostFiles);
    // New files go to the survivor and read back.
    byte[] after = data(200_000, 99);
    write(reader, "/after", after);
    assertArrayEquals(after, read(reader, "/after"));
  }

  @Test
  void dataNodeDyingMidReadOfWholeBlocksFailsTheReadNamingBlockAndNode() throws Exception {
    start(1, "8m");
    byte[] content = data(10 * 65536, 5);
    EmberClient writer = cluster.newClient();
    write(writer, "/big", content);
    int victimId = cluster.datanodes().get(0).datanodeId();
    // No read-ahead, so the blocks after the first are fetched only once the node is gone.
    EmberClient reader = cluster.newClient(EmberConfig.defaults().with(ClientKeys.READ_AHEAD, "0"));
    try (EmberInputStream in = reader.open("/big")) {
      byte[] block = new byte[65536];
      assertEquals(65536, in.read(block, 0, block.length));
      assertArrayEquals(Arrays.copyOf(content, 65536), block);
      cluster.killDatanode(0);
      EmberException e = assertThrows(EmberException.class, () -> in.read(block, 0, block.length));
      assertTrue(e.getMessage().contains("block 1 of /big"), e.getMessage());
      assertTrue(e.getMessage().contains("data node " + victimId), e.getMessage());
      assertNotATimeout(e);
      assertArrayEquals(Arrays.copyOf(content, 65536), block, "a failed read wrote the array");
    }
  }

  @Test
  void dataNodeDyingMidWriteFailsTheWriterClearlyAndGivesTheFileUp() throws Exception {
    start(1, "8m");
    EmberClient c = cluster.newClient();
    byte[] other = data(100_000, 1);
    write(c, "/other", other);
    EmberOutputStream out = c.create("/victim", CreateOptions.DEFAULT);
    out.write(data(150_000, 2));
    out.flush();
    cluster.killDatanode(0);
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> {
              for (int i = 0; i < 50; i++) {
                out.write(data(65_536, 3 + i));
              }
              out.close();
            });
    assertTrue(e.getMessage().startsWith("writing /victim at byte "), e.getMessage());
    assertTrue(e.getMessage().contains("data node"), e.getMessage());
    assertThrows(EmberException.class, out::close); // still failed, still idempotent
    // The writer gave its file up: nothing is left half-written.
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(EmberException.class, () -> c.lookup("/victim")).code());
    // A replacement node takes new writes; the old node's files say what happened.
    cluster.addDramDatanode();
    cluster.awaitLiveDatanodes(StorageClass.DRAM, 1, PATIENCE);
    byte[] fresh = data(100_000, 7);
    write(c, "/fresh", fresh);
    assertArrayEquals(fresh, read(c, "/fresh"));
    awaitLost(c, 1);
    assertEquals(
        ErrorCode.DATANODE_LOST,
        assertThrows(EmberException.class, () -> read(c, "/other")).code());
  }

  @Test
  void fullTierFailsTheWriteNamingClassAndSizeAndDeleteMakesRoom() throws Exception {
    start(1, "512k"); // 8 blocks of 64 KiB
    EmberClient c = cluster.newClient();
    // try-with-resources: the failure surfaces from write or close, as an EmberException (an
    // exception that suppressed itself once turned this into IllegalArgumentException).
    EmberException e =
        assertThrows(
            EmberException.class,
            () -> {
              try (EmberOutputStream out = c.create("/full", CreateOptions.DEFAULT)) {
                out.write(new byte[9 * 65536]);
              }
            });
    assertEquals(ErrorCode.NO_CAPACITY, e.code());
    assertTrue(
        e.getMessage().contains("no DRAM or NVMf capacity left for 64 KiB (block 8 of /full)"),
        e.getMessage());
    // The failed writer gave its file and its eight blocks back.
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(EmberException.class, () -> c.lookup("/full")).code());
    assertEquals(8, c.df().get(0).freeBlocks());
    byte[] fits = data(8 * 65536, 5);
    write(c, "/fits", fits);
    assertArrayEquals(fits, read(c, "/fits"));
  }

  @Test
  void firstBlockAskedAtCreateIsFreedByAnEmptyCloseAndAskedAgainAfterAFullTier() throws Exception {
    start(1, "512k"); // 8 blocks of 64 KiB
    EmberClient c = cluster.newClient();
    c.create("/empty", CreateOptions.DEFAULT).close();
    assertEquals(0, c.lookup("/empty").length());
    assertEquals(8, c.df().get(0).freeBlocks());
    write(c, "/fill", data(8 * 65536, 1));
    // Its first block is refused: the tier is full when the stream is made.
    EmberOutputStream late = c.createBufferedAsync("/late", CreateOptions.DEFAULT).get();
    c.delete("/fill", false);
    byte[] bytes = data(1000, 2);
    late.write(bytes);
    late.close();
    assertArrayEquals(bytes, read(c, "/late"));
    assertEquals(7, c.df().get(0).freeBlocks());
  }

  @Test
  void aNameNodeThatLostItsDirectoryGetsItsDataNodesBackAndClientsReconnect() throws Exception {
    start(2, "4m");
    EmberClient c = cluster.newClient();
    write(c, "/before", data(1000, 1));
    long beforeId = c.lookup("/before").id();
    assertArrayEquals(data(1000, 1), read(c, "/before"));
    write(c, "/open", data(300_000, 3));
    EmberInputStream open = c.open("/open");
    byte[] head = new byte[10];
    open.readFully(0, head, 0, head.length);
    cluster.restartNamenodeEmpty();
    cluster.awaitLiveDatanodes(StorageClass.DRAM, 2, PATIENCE);
    // A name node that lost its directory starts with an empty namespace.
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(EmberException.class, () -> c.lookup("/before")).code());
    byte[] after = data(300_000, 2);
    EmberClient other = cluster.newClient();
    write(other, "/after", after);
    // c cached /before's block locations by file id; a new file must not reuse that id.
    assertNotEquals(beforeId, c.lookup("/after").id());
    assertArrayEquals(after, read(c, "/after"));
    // A stream opened before the restart holds locations the data nodes no longer vouch for
    // (they registered anew, and /after may sit at the same addresses): it fails, naming why,
    // rather than read what is there now.
    byte[] rest = new byte[200_000];
    EmberException gone =
        assertThrows(EmberException.class, () -> open.readFully(100_000, rest, 0, rest.length));
    assertTrue(gone.getMessage().contains("/open"), gone.getMessage());
    open.close();
  }

  @Test
  void dataNodeRestartedAtItsAddressRefusesLocationsAClientCachedFromBefore() throws Exception {
    start(1, "1m");
    EmberClient reader = cluster.newClient();
    EmberClient writer = cluster.newClient();
    write(writer, "/before", data(100_000, 1));
    assertArrayEquals(data(100_000, 1), read(reader, "/before")); // the reader caches its blocks
    BlockLocation old = writer.blockLocations("/before").get(0);
    cluster.restartDatanode(0);
    awaitLost(writer, 1); // at once: a new node registered at its address
    byte[] after = data(100_000, 2);
    write(writer, "/after", after);
    BlockLocation reused = writer.blockLocations("/after").get(0);
    assertEquals(old.endpoint(), reused.endpoint());
    assertEquals(old.address(), reused.address(), "the new node hands out the same addresses");
    // Through its cache the reader would get /after's bytes; the data node refuses the old
    // registration's location, and the name node says the block is lost.
    EmberException e = assertThrows(EmberException.class, () -> read(reader, "/before"));
    assertEquals(ErrorCode.DATANODE_LOST, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("block 0 of /before unavailable"), e.getMessage());
    assertArrayEquals(after, read(reader, "/after"));
    // A writer holding a location of the old registration is refused too, not written through.
    EmberOutputStream late = writer.create("/late", CreateOptions.DEFAULT);
    late.write(data(1000, 3));
    late.flush();
    cluster.restartDatanode(0);
    awaitLost(writer, 2);
    EmberException refused =
        assertThrows(
            EmberException.class,
            () -> {
              late.write(data(1000, 4));
              late.close();
            });
    assertTrue(refused.getMessage().contains("ask the name node again"), refused.getMessage());
  }

  @Test
  void nameNodeThatGoesAwayFailsCallsQuickly() throws Exception {
    start(1, "4m");
    EmberClient c = cluster.newClient();
    cluster.namenode().close();
    EmberException e = assertThrows(EmberException.class, () -> c.lookup("/"));
    // Not TIMEOUT: the call failed when the connection closed, not when its timeout ran out.
    assertTrue(
        e.code() == ErrorCode.UNREACHABLE || e.code() == ErrorCode.CONNECTION_CLOSED, e.toString());
    assertTrue(e.getMessage().contains("name node"), e.getMessage());
    assertNotATimeout(e);
  }

  @Test
  void connectingToNoNameNodeFailsWithItsAddress() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    EmberException e =
        assertThrows(
            EmberException.class,
            () ->
                EmberClient.connect(
                    EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, "127.0.0.1:" + port)));
    assertEquals(ErrorCode.UNREACHABLE, e.code());
    assertTrue(e.getMessage().contains("name node at 127.0.0.1:" + port), e.getMessage());
  }

  @Test
  void clientDyingMidWriteAffectsNobodyElse() throws Exception {
    start(1, "16m");
    EmberClient doomed = cluster.newClient();
    EmberClient bystander = cluster.newClient();
    EmberOutputStream out = doomed.create("/doomed", CreateOptions.DEFAULT);
    out.write(data(300_000, 1));
    doomed.close(); // connections drop with writes in flight
    assertThrows(EmberException.class, out::close);
    byte[] mine = data(500_000, 2);
    write(bystander, "/bystander", mine);
    assertArrayEquals(mine, read(bystander, "/bystander"));
    assertTrue(bystander.lookup("/doomed").open());
  }
}
