package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.data;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.DataNode;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.ClassUsage;
import java.io.InputStream;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Data nodes that die, stall, restart, and a name node that restarts, through the {@link DataNode}
 * interface every tier implements: bound to each tier by a subclass ({@link
 * DramDataNodeFailureTest}, {@link NvmfEmbeddedDataNodeFailureTest}, {@link
 * NvmfKernelDataNodeFailureTest}). Waits are for conditions, with a deadline far past what a loaded
 * machine needs.
 */
abstract class DataNodeFailureTest {
  private static final Duration PATIENCE = Duration.ofSeconds(90);

  private MiniCluster cluster;

  /** The tier this binding runs on. */
  abstract TestTier tier();

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
  }

  /**
   * A cluster of {@code nodes} data nodes (one for the kernel binding) whose RPC timeout is longer
   * than any wait here, so a failure that should come at once and waits instead is not mistaken for
   * a pass; heartbeats missed for 5 s mark a node lost.
   */
  private MiniCluster start(int nodes) throws EmberException {
    cluster =
        tier()
            .cluster(nodes, "8m")
            .blockSize("64k")
            .set(NameNodeKeys.DATANODE_TIMEOUT, "5s")
            .set(EmberKeys.RPC_TIMEOUT, "2m")
            .set(EmberKeys.CONNECT_TIMEOUT, "20s")
            .build();
    return cluster;
  }

  private void write(EmberClient c, String path, byte[] data) throws Exception {
    try (EmberOutputStream out = c.create(path, tier().options())) {
      out.write(data);
    }
  }

  private static byte[] read(EmberClient c, String path) throws Exception {
    try (InputStream in = c.open(path)) {
      return in.readAllBytes();
    }
  }

  private void await(Predicate<ClassUsage> ok, String what) throws EmberException {
    cluster.awaitUsage(tier().options().storageClass(), ok, what, PATIENCE);
  }

  @Test
  void aKilledDataNodesBlocksReadAsLostNamingFileBlockAndNode() throws Exception {
    start(2);
    EmberClient c = cluster.newClient();
    byte[] bytes = data(5 * 65536, 1);
    write(c, "/f", bytes);
    DataNode victim = cluster.allDatanodes().get(0);
    List<BlockLocation> blocks = c.blockLocations("/f");
    BlockLocation onVictim =
        blocks.stream()
            .filter(b -> b.datanodeId() == victim.datanodeId())
            .findFirst()
            .orElseThrow();
    victim.kill();
    await(u -> u.lostNodes() == 1, "the killed node to be marked lost");
    EmberClient fresh = cluster.newClient();
    EmberException e = assertThrows(EmberException.class, () -> read(fresh, "/f"));
    assertEquals(ErrorCode.DATANODE_LOST, e.code(), e.getMessage());
    assertTrue(e.getMessage().contains("block " + onVictim.index() + " of /f"), e.getMessage());
    assertTrue(e.getMessage().contains("data node " + victim.datanodeId()), e.getMessage());
    if (cluster.allDatanodes().size() > 1) {
      // New files go to the nodes that are left, and read back.
      byte[] after = data(3 * 65536, 2);
      write(c, "/after", after);
      assertArrayEquals(after, read(fresh, "/after"));
    }
  }

  @Test
  void aStalledDataNodeIsMarkedLostAndGetsItsBlocksBackWhenItAnswersAgain() throws Exception {
    start(1);
    EmberClient c = cluster.newClient();
    byte[] bytes = data(3 * 65536 + 17, 3);
    write(c, "/f", bytes);
    DataNode node = cluster.allDatanodes().get(0);
    int id = node.datanodeId();
    node.suspend();
    await(u -> u.lostNodes() == 1, "the stalled node to be marked lost");
    EmberException e = assertThrows(EmberException.class, () -> read(cluster.newClient(), "/f"));
    assertEquals(ErrorCode.DATANODE_LOST, e.code(), e.getMessage());
    node.resume();
    // Its contents survived the stall: it is the same node, with the same blocks. (A health probe
    // that times out on a loaded machine makes the node register again, under the same id.)
    await(
        u -> u.lostNodes() == 0 && u.liveNodes() == 1 && node.datanodeId() == id,
        "the node to come back as data node " + id);
    assertArrayEquals(bytes, read(cluster.newClient(), "/f"));
  }

  @Test
  void aRestartedDataNodeRefusesLocationsCachedFromBeforeUnlessItsStorageKeptThem()
      throws Exception {
    start(1);
    EmberClient reader = cluster.newClient();
    EmberClient writer = cluster.newClient();
    byte[] before = data(100_000, 4);
    write(writer, "/before", before);
    try (EmberInputStream open = reader.open("/before")) {
      DataNode old = cluster.allDatanodes().get(0);
      long oldIncarnation = old.incarnation();
      DataNode fresh = cluster.restart(old);
      byte[] got = new byte[50_000];
      if (tier() == TestTier.NVMF_KERNEL) {
        // The kernel's target outlives the data node with its contents and their stamp: the new
        // process takes the node's place, and what a reader cached is still true.
        await(
            u -> u.liveNodes() == 1 && u.lostNodes() == 0,
            "the restarted node to take its place back");
        assertEquals(oldIncarnation, fresh.incarnation());
        open.readFully(0, got, 0, got.length);
        assertArrayEquals(java.util.Arrays.copyOf(before, got.length), got);
        return;
      }
      // The storage started empty: the old node stays lost, and the new one holds none of it.
      await(u -> u.liveNodes() == 1 && u.lostNodes() == 1, "the restarted node to register");
      assertNotEquals(oldIncarnation, fresh.incarnation());
      byte[] now = data(100_000, 5);
      write(writer, "/now", now);
      EmberException e =
          assertThrows(EmberException.class, () -> open.readFully(0, got, 0, got.length));
      assertTrue(e.getMessage().contains("/before"), e.getMessage());
      assertArrayEquals(now, read(reader, "/now"));
    }
  }

  @Test
  void aNameNodeThatLostItsDirectoryGetsItsDataNodesBackAndClientsReconnect() throws Exception {
    start(1);
    EmberClient c = cluster.newClient();
    write(c, "/before", data(1000, 6));
    cluster.restartNamenodeEmpty();
    await(u -> u.liveNodes() == 1, "the data node to register with the new name node");
    // A name node that lost its directory starts empty, and the data node's storage is new.
    assertEquals(
        ErrorCode.NOT_FOUND, assertThrows(EmberException.class, () -> c.lookup("/before")).code());
    byte[] after = data(200_000, 7);
    write(c, "/after", after);
    assertArrayEquals(after, read(cluster.newClient(), "/after"));
  }
}
