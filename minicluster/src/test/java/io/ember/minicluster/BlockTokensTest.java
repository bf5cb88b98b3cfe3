package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.BlockToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.ResponseDecoder;
import io.ember.protocol.RpcClients;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Block access tokens on a TLS cluster over loopback: a DRAM data node serves a block only to the
 * caller the name node granted it to, for the access granted, until the token expires; every
 * forged, borrowed, altered or missing token is refused with a line that says why.
 */
class BlockTokensTest {
  private static final Duration DEADLINE = Duration.ofSeconds(60);
  @TempDir static Path tmp;
  private static TlsUsers users;

  @BeforeAll
  static void certificates() throws Exception {
    users = TlsUsers.issue(tmp.resolve("ca"), "alice", "bob");
  }

  private static EmberConfig as(String name) {
    return users.as(name);
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static void write(EmberClient client, String path, byte[] data, int mode)
      throws Exception {
    try (EmberOutputStream out =
        client.create(path, CreateOptions.DEFAULT.withCreateParents(true).withPermission(mode))) {
      out.write(data);
    }
  }

  /**
   * A data node connection that presents {@code user}'s certificate, as a client that went past the
   * client library would.
   */
  private static final class Raw implements AutoCloseable {
    private final RpcClients clients;

    Raw(String user) {
      clients = new RpcClients(as(user), "raw " + user);
    }

    <T> T call(HostPort server, MessageType type, Message body, ResponseDecoder<T> decoder)
        throws EmberException {
      return Futures.await(
          clients.get(server, "server").thenCompose(c -> c.call(type, body, decoder)));
    }

    byte[] read(BlockLocation block, int length) throws EmberException {
      return call(
          HostPort.parse(block.endpoint(), 0),
          MessageType.BLOCK_READ,
          Messages.BlockReadRequest.of(block, 0, length),
          ByteBufUtil::getBytes);
    }

    void write(BlockLocation block, byte[] data) throws EmberException {
      call(
          HostPort.parse(block.endpoint(), 0),
          MessageType.BLOCK_WRITE,
          Messages.BlockWriteRequest.of(block, 0, Unpooled.wrappedBuffer(data)),
          ResponseDecoder.EMPTY);
    }

    @Override
    public void close() {
      clients.close();
    }
  }

  private static String refused(ErrorCode code, Executable op) {
    return TlsUsers.refused(code, op);
  }

  private static BlockLocation withMac(BlockLocation b, byte[] mac) {
    BlockToken t = b.token();
    return b.withToken(new BlockToken(t.keyId(), t.expiresMillis(), t.modes(), mac));
  }

  @Test
  void aDataNodeServesABlockOnlyWithTheTokenGrantedForIt() throws Exception {
    byte[] secret = random(300_000, 1);
    byte[] other = random(200_000, 2);
    try (MiniCluster cluster = MiniCluster.builder().dramDatanodes(1).config(as("node")).build();
        EmberClient alice = cluster.newClient(as("alice"));
        EmberClient bob = cluster.newClient(as("bob"))) {
      write(alice, "/alice/secret.bin", secret, 0600);
      write(bob, "/bob/own.bin", other, 0644);
      BlockLocation mine = alice.blockLocations("/alice/secret.bin").get(0);
      BlockLocation bobs = bob.blockLocations("/bob/own.bin").get(0);
      assertFalse(mine.token().isNone(), "TLS clusters hand out tokens");
      assertEquals(BlockToken.READ, mine.token().modes(), "a reader's locations grant reading");

      try (Raw asAlice = new Raw("alice");
          Raw asBob = new Raw("bob")) {
        // The path these refusals go through works with a good token.
        assertArrayEquals(
            java.util.Arrays.copyOf(secret, 1000), asAlice.read(mine, 1000), "alice's own");

        String why = refused(ErrorCode.PERMISSION_DENIED, () -> asBob.read(mine, 1000));
        assertTrue(why.contains("its block token was not granted to bob"), why);
        why =
            refused(
                ErrorCode.PERMISSION_DENIED,
                () -> asBob.read(mine.withToken(BlockToken.NONE), 1000));
        assertTrue(why.contains("without a block token"), why);
        // Bob's own token, for his own block, moved to alice's block.
        refused(ErrorCode.PERMISSION_DENIED, () -> asBob.read(mine.withToken(bobs.token()), 1000));
        byte[] altered = mine.token().mac();
        altered[5] ^= 1;
        refused(ErrorCode.PERMISSION_DENIED, () -> asAlice.read(withMac(mine, altered), 1000));
        // A read token does not write, even for the caller it was granted to.
        why = refused(ErrorCode.PERMISSION_DENIED, () -> asAlice.write(mine, new byte[] {1, 2, 3}));
        assertTrue(why.contains("grants reading only"), why);
        // A key the data node never heard of: the client asks the name node again.
        BlockToken t = mine.token();
        refused(
            ErrorCode.STALE_LOCATION,
            () ->
                asAlice.read(
                    mine.withToken(
                        new BlockToken(t.keyId() + 7, t.expiresMillis(), t.modes(), t.mac())),
                    1000));
      }
      // Nothing was changed by any of it.
      try (EmberInputStream in = alice.open("/alice/secret.bin")) {
        assertArrayEquals(secret, in.readAllBytes());
      }
      // Only data nodes learn the keys: a user cannot register one, nor heartbeat as one.
      try (Raw asAlice = new Raw("alice")) {
        Messages.RegisterRequest fake =
            new Messages.RegisterRequest(
                io.ember.protocol.StorageClass.DRAM,
                "dram",
                "127.0.0.1:1",
                1 << 20,
                false,
                5L,
                false);
        String why =
            refused(
                ErrorCode.PERMISSION_DENIED,
                () ->
                    asAlice.call(
                        cluster.namenodeAddress(),
                        MessageType.REGISTER_DATANODE,
                        fake,
                        Messages.RegisterResponse::decode));
        assertTrue(why.contains("alice may not act as a data node"), why);
        refused(
            ErrorCode.PERMISSION_DENIED,
            () ->
                asAlice.call(
                    cluster.namenodeAddress(),
                    MessageType.HEARTBEAT,
                    new Messages.HeartbeatRequest(mine.datanodeId()),
                    Messages.HeartbeatResponse::decode));
      }
    }
  }

  @Test
  void anExpiredTokenIsRefusedAndTheClientAsksAgain() throws Exception {
    byte[] data = random(250_000, 3);
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .config(as("node").with(NameNodeKeys.BLOCK_TOKEN_LIFETIME, "10s"))
                .build();
        EmberClient alice = cluster.newClient(as("alice"))) {
      write(alice, "/f.bin", data, 0644);
      try (EmberInputStream in = alice.open("/f.bin");
          Raw raw = new Raw("alice")) {
        BlockLocation old = alice.blockLocations("/f.bin").get(0);
        long end = System.nanoTime() + DEADLINE.toNanos();
        while (System.currentTimeMillis() <= old.token().expiresMillis()) {
          assertTrue(System.nanoTime() < end, "the token's expiry never came");
          Thread.sleep(20);
        }
        String why = refused(ErrorCode.STALE_LOCATION, () -> raw.read(old, 100));
        assertTrue(why.contains("expired") || why.contains("does not hold"), why);
        // The stream opened before the expiry holds the old locations, and reads through.
        assertArrayEquals(data, in.readAllBytes());
      }
    }
  }

  /**
   * Writes {@code path} a little at a time, each piece flushed to its data node, until three
   * lifetimes of {@code lifetime} have passed since the file was created, all of it in the file's
   * first block: its writer has to renew its block token twice to get there. Returns the bytes.
   */
  static byte[] writeOneBlockPastTokenLifetimes(EmberClient client, String path, Duration lifetime)
      throws Exception {
    java.io.ByteArrayOutputStream written = new java.io.ByteArrayOutputStream();
    long until = System.currentTimeMillis() + 3 * lifetime.toMillis();
    Random random = new Random(11);
    int pieces = 0;
    long callsBefore = client.metrics().metadataCalls();
    long started = System.currentTimeMillis();
    try (EmberOutputStream out = client.create(path, CreateOptions.DEFAULT)) {
      while (System.currentTimeMillis() <= until) {
        byte[] piece = new byte[1000];
        random.nextBytes(piece);
        out.write(piece);
        out.flush();
        written.write(piece);
        pieces++;
        Thread.sleep(100); // a slow producer: the write rate, not a wait for anything
      }
    }
    long calls = client.metrics().metadataCalls() - callsBefore;
    long seconds = (System.currentTimeMillis() - started) / 1000;
    // Renewing asks the name node about twice a lifetime (8 calls in all, here), not once a write.
    assertTrue(
        calls <= 4 + 2 * seconds,
        calls + " name node calls in " + seconds + " s, for " + pieces + " flushed writes");
    return written.toByteArray();
  }

  @Test
  void aClosedFilesWriteTokenLapsesAfterTheWriteLifetime() throws Exception {
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .config(as("node").with(NameNodeKeys.BLOCK_TOKEN_WRITE_LIFETIME, "3s"))
                .build();
        EmberClient alice = cluster.newClient(as("alice"));
        Raw raw = new Raw("alice")) {
      // A writer's first block, asked for as the client library asks, and written by hand.
      long asked = System.currentTimeMillis();
      Messages.CreateResponse created =
          raw.call(
              cluster.namenodeAddress(),
              MessageType.CREATE,
              new Messages.CreateRequest(
                  "/closed.bin",
                  io.ember.protocol.NodeType.FILE,
                  io.ember.protocol.StorageClass.DRAM,
                  false,
                  "raw-writer",
                  true,
                  false,
                  0644),
              Messages.CreateResponse::decode);
      BlockLocation block = created.firstBlock();
      assertEquals(BlockToken.READ | BlockToken.WRITE, block.token().modes());
      assertTrue(
          block.token().expiresMillis() <= System.currentTimeMillis() + 3_000
              && block.token().expiresMillis() >= asked + 3_000,
          "a write token holds for the write lifetime, not the 10h lifetime");
      byte[] first = random(1000, 7);
      raw.write(block, first);
      raw.call(
          cluster.namenodeAddress(),
          MessageType.CLOSE_FILE,
          new Messages.CloseFileRequest(created.status().id(), first.length),
          io.ember.protocol.NodeStatus::decode);
      // Once its write lifetime is over, the closed file's former writer changes nothing.
      long end = System.nanoTime() + DEADLINE.toNanos();
      while (System.currentTimeMillis() <= block.token().expiresMillis()) {
        assertTrue(System.nanoTime() < end, "the token's expiry never came");
        Thread.sleep(20);
      }
      String why = refused(ErrorCode.STALE_LOCATION, () -> raw.write(block, random(1000, 8)));
      assertTrue(why.contains("expired"), why);
      try (EmberInputStream in = alice.open("/closed.bin")) {
        assertArrayEquals(first, in.readAllBytes(), "the closed file kept its bytes");
      }
      // Read tokens keep the full lifetime.
      assertTrue(
          alice.blockLocations("/closed.bin").get(0).token().expiresMillis()
              > System.currentTimeMillis() + 3_600_000);
    }
  }

  @Test
  void aWriterThatHoldsABlockLongerThanATokensLifetimeKeepsWriting() throws Exception {
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .config(as("node").with(NameNodeKeys.BLOCK_TOKEN_LIFETIME, "3s"))
                .build();
        EmberClient alice = cluster.newClient(as("alice"))) {
      byte[] written = writeOneBlockPastTokenLifetimes(alice, "/slow.bin", Duration.ofSeconds(3));
      assertEquals(1, alice.blockLocations("/slow.bin").size(), "one block, held throughout");
      try (EmberInputStream in = alice.open("/slow.bin")) {
        assertArrayEquals(written, in.readAllBytes());
      }
    }
  }
}
