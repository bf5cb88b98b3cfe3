package io.ember.minicluster;

import static io.ember.minicluster.TestFiles.readAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.BlockToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.RpcClients;
import io.ember.tier.dram.RdmaProbe;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an RDMA grant's key lets its holder do on a secured cluster, tried with one-sided reads and
 * writes posted past the client library: a read grant's key reads the block and cannot write it,
 * and a key stops working once the block tokens it was granted under have expired, while a writer
 * that renews its token keeps its key. Run inside the kernel-nvmet VM by {@link DramRdmaInVmTest};
 * skipped, saying so, elsewhere.
 */
@RequiresRdmaAddress
class DramRdmaGrantTest {
  private static final int BLOCK = 64 * 1024;
  @TempDir static Path tmp;
  private static TlsUsers users;

  @BeforeAll
  static void certificates() throws Exception {
    // The data nodes listen on the RDMA device's address, so their certificate names it.
    users =
        TlsUsers.issue(
            tmp.resolve("ca"), List.of(System.getenv(TestTier.RDMA_ADDRESS_ENV)), "alice", "bob");
  }

  @BeforeEach
  void needsRdma() {
    TestTier.assumeRdmaRuns();
  }

  private static EmberConfig as(String name) {
    return users.as(name);
  }

  private static MiniCluster cluster(String tokenLifetime) throws EmberException {
    return MiniCluster.builder()
        .dramDatanodes(1)
        .dramCapacity("1m")
        .blockSize("64k")
        .config(as("node"))
        .set(DramDataNodeKeys.TRANSPORT, "rdma")
        .set(DramDataNodeKeys.BIND_HOST, System.getenv(TestTier.RDMA_ADDRESS_ENV))
        .set(NameNodeKeys.BLOCK_TOKEN_LIFETIME, tokenLifetime)
        .build();
  }

  /** Alice's file, which bob may read. */
  private static byte[] alicesFile(EmberClient alice) throws Exception {
    byte[] bytes = new byte[BLOCK];
    new Random(7).nextBytes(bytes);
    try (EmberOutputStream out =
        alice.create("/shared.bin", CreateOptions.DEFAULT.withPermission(0644))) {
      out.write(bytes);
    }
    return bytes;
  }

  /** A grant for {@code block}, asked for over TCP with the caller's certificate. */
  private static Messages.BlockGrantResponse grant(
      RpcClients as, BlockLocation block, boolean forWrite) throws EmberException {
    return Futures.await(
        as.get(HostPort.parse(block.endpoint(), 0), "data node")
            .thenCompose(
                c ->
                    c.call(
                        MessageType.BLOCK_GRANT,
                        Messages.BlockGrantRequest.of(block, forWrite),
                        Messages.BlockGrantResponse::decode)));
  }

  private static InetSocketAddress rdmaAt(BlockLocation block, Messages.BlockGrantResponse g) {
    return new InetSocketAddress(HostPort.parse(block.endpoint(), 0).host(), g.rdmaPort());
  }

  private static long[] notice(BlockLocation b) {
    return new long[] {b.incarnation(), b.blockId(), b.generation(), b.address()};
  }

  @Test
  void aReadGrantsKeyReadsTheBlockAndCannotWriteIt() throws Exception {
    try (MiniCluster cluster = cluster("10h");
        EmberClient alice = cluster.newClient(as("alice"));
        EmberClient bob = cluster.newClient(as("bob"));
        RpcClients asBob = new RpcClients(as("bob"), "raw bob")) {
      byte[] original = alicesFile(alice);
      BlockLocation block = bob.blockLocations("/shared.bin").get(0);
      assertEquals(BlockToken.READ, block.token().modes(), "bob may only read alice's file");

      String why = TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> grant(asBob, block, true));
      assertTrue(why.contains("grants reading only"), why);

      Messages.BlockGrantResponse g = grant(asBob, block, false);
      InetSocketAddress at = rdmaAt(block, g);
      // The key works for what it was granted: the probe reaches the block.
      assertArrayEquals(
          Arrays.copyOf(original, 4096), RdmaProbe.read(at, g.remoteAddress(), g.rkey(), 4096));
      byte[] junk = new byte[4096];
      Arrays.fill(junk, (byte) 0x5a);
      EmberException refused =
          org.junit.jupiter.api.Assertions.assertThrows(
              EmberException.class,
              () -> RdmaProbe.write(at, g.remoteAddress(), g.rkey(), junk, notice(block)));
      assertEquals(ErrorCode.STALE_LOCATION, refused.code(), refused.getMessage());
      assertArrayEquals(original, readAll(alice, "/shared.bin"), "the block was not written");
      assertArrayEquals(original, readAll(bob, "/shared.bin"));
    }
  }

  @Test
  void aKeyStopsWorkingOnceTheTokensItWasGrantedUnderHaveExpired() throws Exception {
    try (MiniCluster cluster = cluster("4s");
        EmberClient alice = cluster.newClient(as("alice"));
        EmberClient bob = cluster.newClient(as("bob"));
        RpcClients asBob = new RpcClients(as("bob"), "raw bob")) {
      byte[] original = alicesFile(alice);
      BlockLocation block = bob.blockLocations("/shared.bin").get(0);
      long expires = block.token().expiresMillis();
      Messages.BlockGrantResponse g = grant(asBob, block, false);
      InetSocketAddress at = rdmaAt(block, g);
      long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
      EmberException refused = null;
      while (refused == null) {
        assertTrue(System.nanoTime() < deadline, "the key still reads long after its token");
        try {
          byte[] got = RdmaProbe.read(at, g.remoteAddress(), g.rkey(), 4096);
          assertArrayEquals(Arrays.copyOf(original, 4096), got);
          Thread.sleep(200);
        } catch (EmberException e) {
          refused = e;
          assertTrue(
              System.currentTimeMillis() >= expires,
              "the key was dropped before its token expired");
        }
      }
      assertEquals(ErrorCode.STALE_LOCATION, refused.code(), refused.getMessage());
      // The client library asks for a new token and a new grant, and reads on.
      assertArrayEquals(original, readAll(bob, "/shared.bin"));
      assertFalse(bob.blockLocations("/shared.bin").get(0).token().isNone());
    }
  }

  @Test
  void aWriterOverRdmaKeepsWritingPastItsFirstTokensExpiry() throws Exception {
    try (MiniCluster cluster = cluster("4s");
        EmberClient alice = cluster.newClient(as("alice"))) {
      byte[] written =
          BlockTokensTest.writeOneBlockPastTokenLifetimes(
              alice, "/slow.bin", java.time.Duration.ofSeconds(4));
      assertArrayEquals(written, readAll(alice, "/slow.bin"));
    }
  }
}
