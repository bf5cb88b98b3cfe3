package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.ClientKeys;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberOutputStream;
import io.ember.namenode.Credentials;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.BlockToken;
import io.ember.protocol.DelegationToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Futures;
import io.ember.protocol.Greeting;
import io.ember.protocol.HostPort;
import io.ember.protocol.Message;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.ResponseDecoder;
import io.ember.protocol.RpcClient;
import io.ember.protocol.RpcClients;
import io.ember.protocol.RpcServer;
import io.ember.protocol.RpcService;
import io.ember.protocol.Wire;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Password users (SCRAM-SHA-256) on a cluster without TLS, on real loopback sockets: each user gets
 * what its permissions allow, data nodes serve only blocks the name node granted, and a wrong
 * password, an unknown user, a replayed exchange, a client without a password and a server that
 * cannot prove it holds the verifiers are each refused with a line that says why.
 */
class ScramClusterTest {
  @TempDir static Path tmp;
  private static Path credentials;

  @BeforeAll
  static void users() throws Exception {
    credentials = tmp.resolve("credentials");
    Credentials.addUser(credentials, "node", "node-secret");
    Credentials.addUser(credentials, "alice", "alice-secret");
    Credentials.addUser(credentials, "bob", "bob-secret");
  }

  /** Settings of a process that authenticates as {@code user} with {@code password}. */
  private static EmberConfig as(String user, String password) {
    return EmberConfig.defaults()
        .with(EmberKeys.SCRAM, "true")
        .with(EmberKeys.USER, user)
        .with(EmberKeys.PASSWORD, password);
  }

  private static MiniCluster cluster() throws Exception {
    return MiniCluster.builder()
        .dramDatanodes(1)
        .config(as("node", "node-secret").with(NameNodeKeys.CREDENTIALS, credentials.toString()))
        .build();
  }

  private static byte[] random(int size, long seed) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void passwordUsersAreToldApartAndGetWhatTheirPermissionsAllow(boolean directCalls)
      throws Exception {
    byte[] data = random(1024 * 1024 + 17, 1);
    EmberConfig direct = EmberConfig.defaults().with(ClientKeys.DIRECT_CALLS, "" + directCalls);
    try (MiniCluster cluster = cluster();
        EmberClient alice = cluster.newClient(as("alice", "alice-secret").withAll(direct));
        EmberClient bob = cluster.newClient(as("bob", "bob-secret").withAll(direct))) {
      alice.createDirectory("/alice", CreateOptions.DEFAULT.withPermission(0700));
      try (EmberOutputStream out =
          alice.create("/alice/secret.bin", CreateOptions.DEFAULT.withPermission(0600))) {
        out.write(data);
      }
      assertEquals("alice", alice.lookup("/alice/secret.bin").owner());
      assertArrayEquals(data, TestFiles.readAll(alice, "/alice/secret.bin"));
      String why =
          TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> bob.lookup("/alice/secret.bin"));
      assertTrue(why.contains("bob may not pass through"), why);
      TlsUsers.refused(
          ErrorCode.PERMISSION_DENIED, () -> TestFiles.readAll(bob, "/alice/secret.bin"));
      TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> bob.delete("/alice", true));
      assertArrayEquals(data, TestFiles.readAll(alice, "/alice/secret.bin"), "nothing lost");
    }
  }

  /** One call to {@code server} on a connection that shows nothing; the answer's bytes. */
  private static byte[] call(RpcClients raw, HostPort server, MessageType type, Message body)
      throws io.ember.protocol.EmberException {
    return Futures.await(
        raw.get(server, "data node").thenCompose(c -> c.call(type, body, ByteBufUtil::getBytes)));
  }

  /** One call to data node {@code dn} that it must refuse as not permitted; says why. */
  private static String refusedByDataNode(
      RpcClients raw, HostPort dn, MessageType type, Message body) {
    return TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> call(raw, dn, type, body));
  }

  @Test
  void aDataNodeServesOnlyWhatTheNameNodeGranted() throws Exception {
    byte[] data = random(300_000, 2);
    try (MiniCluster cluster = cluster();
        EmberClient alice = cluster.newClient(as("alice", "alice-secret"));
        RpcClients raw = new RpcClients(EmberConfig.defaults(), "raw")) {
      try (EmberOutputStream out =
          alice.create("/secret.bin", CreateOptions.DEFAULT.withPermission(0600))) {
        out.write(data);
      }
      BlockLocation mine = alice.blockLocations("/secret.bin").get(0);
      assertFalse(mine.token().isNone(), "password clusters hand out block tokens");
      HostPort dn = HostPort.parse(mine.endpoint(), 0);
      // The data connection is not authenticated: the token is what the data node checks.
      assertArrayEquals(
          java.util.Arrays.copyOf(data, 1000),
          call(raw, dn, MessageType.BLOCK_READ, Messages.BlockReadRequest.of(mine, 0, 1000)),
          "the path works with a token");
      String why =
          refusedByDataNode(
              raw,
              dn,
              MessageType.BLOCK_READ,
              Messages.BlockReadRequest.of(mine.withToken(BlockToken.NONE), 0, 1000));
      assertTrue(why.contains("without a block token"), why);
      why =
          refusedByDataNode(
              raw,
              dn,
              MessageType.BLOCK_WRITE,
              Messages.BlockWriteRequest.of(
                  mine, 0, io.netty.buffer.Unpooled.wrappedBuffer(new byte[3])));
      assertTrue(why.contains("grants reading only"), why);
      // A token for another block, or one with a bit changed, grants nothing.
      try (EmberOutputStream out = alice.create("/other.bin", CreateOptions.DEFAULT)) {
        out.write(new byte[1000]);
      }
      BlockLocation other = alice.blockLocations("/other.bin").get(0);
      refusedByDataNode(
          raw,
          dn,
          MessageType.BLOCK_READ,
          Messages.BlockReadRequest.of(mine.withToken(other.token()), 0, 1000));
      byte[] flipped = mine.token().mac();
      flipped[0] ^= 1;
      BlockToken altered =
          new BlockToken(
              mine.token().keyId(), mine.token().expiresMillis(), mine.token().modes(), flipped);
      refusedByDataNode(
          raw,
          dn,
          MessageType.BLOCK_READ,
          Messages.BlockReadRequest.of(mine.withToken(altered), 0, 1000));
      assertArrayEquals(data, TestFiles.readAll(alice, "/secret.bin"), "nothing changed");
    }
  }

  @Test
  void onlyTheNameNodeLearnsWhatASlotHolds() throws Exception {
    byte[] written = random(2 * 65536 + 100, 5);
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .blockSize("64k")
                .config(
                    as("node", "node-secret")
                        .with(NameNodeKeys.CREDENTIALS, credentials.toString())
                        .with(NameNodeKeys.LEASE_TIMEOUT, "6s"))
                .build();
        EmberClient reader = cluster.newClient(as("alice", "alice-secret"));
        RpcClients raw = new RpcClients(EmberConfig.defaults(), "raw")) {
      // Lease recovery asks the data node with a token only the name node signs.
      String path = LeaseTest.writeAndDieBeforeReporting(cluster, reader, written);
      LeaseTest.awaitClosed(reader, path);
      assertEquals(written.length, reader.lookup(path).length());
      assertArrayEquals(written, TestFiles.readAll(reader, path));
      // Anyone else asks in vain: with no token, an altered one, or a reader's good one.
      BlockLocation b = reader.blockLocations(path).get(0);
      HostPort dn = HostPort.parse(b.endpoint(), 0);
      for (BlockToken shown : List.of(BlockToken.NONE, flipped(b.token()), b.token())) {
        refusedByDataNode(
            raw, dn, MessageType.BLOCK_LENGTH, Messages.BlockLengthRequest.of(b.withToken(shown)));
      }
      String why =
          refusedByDataNode(raw, dn, MessageType.BLOCK_LENGTH, Messages.BlockLengthRequest.of(b));
      assertTrue(why.contains("tells only the name node how much"), why);
    }
  }

  private static BlockToken flipped(BlockToken t) {
    byte[] mac = t.mac();
    mac[0] ^= 1;
    return new BlockToken(t.keyId(), t.expiresMillis(), t.modes(), mac);
  }

  @Test
  void overTlsAClientWithoutACertificateProvesAPassword() throws Exception {
    TlsUsers tls = TlsUsers.issue(tmp.resolve("ca"));
    EmberConfig server =
        tls.as("node")
            .with(EmberKeys.SCRAM, "true")
            .with(NameNodeKeys.CREDENTIALS, credentials.toString());
    // Encrypted, the servers proven by certificate, the client by its password.
    java.util.function.BiFunction<String, String, EmberConfig> passwordOverTls =
        (user, password) ->
            as(user, password)
                .with(EmberKeys.TLS, "true")
                .with(EmberKeys.TLS_CA, tls.as("node").get(EmberKeys.TLS_CA))
                .with(EmberKeys.TLS_CERTIFICATE, "")
                .with(EmberKeys.TLS_KEY, "");
    byte[] data = random(300_000, 6);
    try (MiniCluster cluster = MiniCluster.builder().dramDatanodes(1).config(server).build();
        EmberClient alice = cluster.newClient(passwordOverTls.apply("alice", "alice-secret"))) {
      try (EmberOutputStream out =
          alice.create("/mine", CreateOptions.DEFAULT.withPermission(0600))) {
        out.write(data);
      }
      assertEquals("alice", alice.lookup("/mine").owner());
      assertArrayEquals(data, TestFiles.readAll(alice, "/mine"));
      String why =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED,
              () -> cluster.newClient(passwordOverTls.apply("alice", "wrong")).lookup("/"));
      assertTrue(why.contains("unknown user or wrong password"), why);
      TlsUsers.refused(
          ErrorCode.PERMISSION_DENIED,
          () ->
              TestFiles.readAll(
                  cluster.newClient(passwordOverTls.apply("bob", "bob-secret")), "/mine"));
    }
  }

  @Test
  void wrongPasswordsUnknownUsersAndClientsWithoutOneAreRefused() throws Exception {
    try (MiniCluster cluster = cluster()) {
      String wrong =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED,
              () -> cluster.newClient(as("alice", "not-her-secret")).lookup("/"));
      assertTrue(
          wrong.contains("authentication as alice failed: unknown user or wrong password"), wrong);
      assertFalse(wrong.contains("not-her-secret"), "the password shows nowhere");
      String unknown =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED, () -> cluster.newClient(as("mallory", "x")).lookup("/"));
      assertTrue(
          unknown.contains("authentication as mallory failed: unknown user or wrong password"),
          unknown);
      // No password at all, and no SCRAM at all: told what to set.
      EmberConfig anonymous = as("", "");
      String none =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED, () -> cluster.newClient(anonymous).lookup("/"));
      assertTrue(none.contains("has not authenticated"), none);
      assertTrue(none.contains("ember.security.user"), none);
      EmberConfig plain = anonymous.with(EmberKeys.SCRAM, "false");
      TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> cluster.newClient(plain).list("/"));
      // The name node is unharmed.
      assertEquals(
          io.ember.protocol.NodeType.DIRECTORY,
          cluster.newClient(as("bob", "bob-secret")).lookup("/").type());
    }
  }

  @Test
  void onlyDataNodeUsersActAsDataNodes() throws Exception {
    try (MiniCluster cluster = cluster();
        RpcClients rpc = new RpcClients(EmberConfig.defaults(), "test")) {
      rpc.greet(cluster.namenodeAddress(), Greeting.scram("alice", "alice-secret"));
      String why =
          TlsUsers.refused(
              ErrorCode.PERMISSION_DENIED,
              () ->
                  Futures.await(
                      rpc.get(cluster.namenodeAddress(), "name node")
                          .thenCompose(
                              c ->
                                  c.call(
                                      MessageType.HEARTBEAT,
                                      Message.EMPTY,
                                      ResponseDecoder.EMPTY))));
      assertTrue(why.contains("alice may not act as a data node"), why);
    }
  }

  @Test
  void blockKeysCrossAPlainConnectionMaskedWithTheDataNodesPassword() throws Exception {
    try (MiniCluster cluster = cluster();
        EmberClient alice = cluster.newClient(as("alice", "alice-secret"));
        RpcClients rpc = new RpcClients(EmberConfig.defaults(), "test");
        // Something at the address the registration names, for the name node's reachability check.
        RpcServer endpoint =
            new RpcServer("endpoint", EmberConfig.defaults(), (ch, type, in) -> Message.EMPTY)) {
      int endpointPort = endpoint.start("127.0.0.1", 0).getPort();
      try (EmberOutputStream out = alice.create("/f", CreateOptions.DEFAULT)) {
        out.write(random(1000, 4));
      }
      BlockLocation granted = alice.blockLocations("/f").get(0);
      BlockToken token = granted.token();
      // A data node user registers, as a data node does, and reads the keys off the plain wire.
      Greeting.Password node = Greeting.scram("node", "node-secret");
      rpc.greet(cluster.namenodeAddress(), node);
      Messages.RegisterResponse registered =
          Futures.await(
              rpc.get(cluster.namenodeAddress(), "name node")
                  .thenCompose(
                      c ->
                          c.call(
                              MessageType.REGISTER_DATANODE,
                              new Messages.RegisterRequest(
                                  io.ember.protocol.StorageClass.DRAM,
                                  "dram",
                                  "127.0.0.1:" + endpointPort,
                                  64L << 20,
                                  false),
                              Messages.RegisterResponse::decode)));
      io.ember.protocol.BlockKey onWire =
          registered.blockKeys().stream()
              .filter(k -> k.id() == token.keyId())
              .findFirst()
              .orElseThrow(() -> new AssertionError("no key " + token.keyId() + " handed out"));
      // What an eavesdropper reads signs nothing; unmasked with the password's key it signs.
      assertFalse(
          token.signs(
              onWire.secret(),
              granted.blockId(),
              granted.generation(),
              granted.incarnation(),
              granted.address(),
              ""),
          "a key read off the wire signs alice's token");
      assertTrue(
          token.signs(
              onWire.masked(node.blockKeyWrap()).secret(),
              granted.blockId(),
              granted.generation(),
              granted.incarnation(),
              granted.address(),
              ""),
          "the data node's unmasked key signs alice's token");
      // And the real data node unmasks its own: alice reads through it.
      assertEquals(1000, TestFiles.readAll(alice, "/f").length);
    }
  }

  /** Runs an exchange as {@code greeting} does, keeping the client's two messages. */
  private static List<String> recordExchange(RpcClient c, String user, String password)
      throws Exception {
    List<String> sent = new ArrayList<>();
    Greeting real = Greeting.scram(user, password);
    Futures.await(
        real.greet(
            new Greeting.Exchange() {
              @Override
              public <T> CompletableFuture<T> call(
                  MessageType type, Message body, ResponseDecoder<T> decoder) {
                ByteBuf b = io.netty.buffer.Unpooled.buffer();
                body.encode(b);
                try {
                  sent.add(Wire.readString(b, "message", 4096));
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                } finally {
                  b.release();
                }
                return c.call(type, body, decoder);
              }
            }));
    return sent;
  }

  private static String say(RpcClient c, MessageType type, String text) throws Exception {
    return Futures.await(
        c.call(
            type, out -> Wire.writeString(out, text), in -> Wire.readString(in, "answer", 4096)));
  }

  @Test
  void aReplayedExchangeGetsNothingServed() throws Exception {
    try (MiniCluster cluster = cluster();
        RpcClients rpc = new RpcClients(EmberConfig.defaults(), "test")) {
      HostPort nn = cluster.namenodeAddress();
      RpcClient first = Futures.await(rpc.open(nn, "name node"));
      List<String> recorded = recordExchange(first, "alice", "alice-secret");
      assertEquals(2, recorded.size());
      first.close();

      // Both messages again on a new connection: the name node's nonce is new.
      RpcClient replay = Futures.await(rpc.open(nn, "name node"));
      say(replay, MessageType.SCRAM_FIRST, recorded.get(0));
      String why =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED,
              () -> say(replay, MessageType.SCRAM_LAST, recorded.get(1)));
      assertTrue(why.contains("does not answer this exchange's nonce"), why);
      TlsUsers.refused(
          ErrorCode.UNAUTHENTICATED,
          () ->
              Futures.await(
                  replay.call(
                      MessageType.LOOKUP, new Messages.PathRequest("/"), ResponseDecoder.EMPTY)));
      // One exchange per connection: a guesser must connect again for each try.
      why =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED,
              () -> say(replay, MessageType.SCRAM_FIRST, recorded.get(0)));
      assertTrue(why.contains("one password exchange per connection"), why);
      // Cut short: a last message with no first, and a first that is not SCRAM's.
      RpcClient cut = Futures.await(rpc.open(nn, "name node"));
      TlsUsers.refused(
          ErrorCode.UNAUTHENTICATED, () -> say(cut, MessageType.SCRAM_LAST, recorded.get(1)));
      RpcClient garbled = Futures.await(rpc.open(nn, "name node"));
      TlsUsers.refused(
          ErrorCode.UNAUTHENTICATED,
          () -> say(garbled, MessageType.SCRAM_FIRST, recorded.get(0).substring(0, 8)));
      replay.close();
      cut.close();
      garbled.close();
    }
  }

  @Test
  void nothingElseIsServedInTheMiddleOfAnExchange() throws Exception {
    try (MiniCluster cluster = cluster();
        EmberClient alice = cluster.newClient(as("alice", "alice-secret"));
        RpcClients rpc = new RpcClients(EmberConfig.defaults(), "test")) {
      DelegationToken token = alice.getDelegationToken("");
      HostPort nn = cluster.namenodeAddress();
      RpcClient c = Futures.await(rpc.open(nn, "name node"));
      say(c, MessageType.SCRAM_FIRST, "n,,n=alice,r=abcdefghijklmnop");
      // Begun but not finished: no request is served, and a token does not finish it either.
      TlsUsers.refused(
          ErrorCode.UNAUTHENTICATED,
          () ->
              Futures.await(
                  c.call(
                      MessageType.LOOKUP, new Messages.PathRequest("/"), ResponseDecoder.EMPTY)));
      String why =
          TlsUsers.refused(
              ErrorCode.INVALID_ARGUMENT,
              () ->
                  Futures.await(
                      c.call(
                          MessageType.AUTHENTICATE,
                          new Messages.TokenMessage(token.encode()),
                          ResponseDecoder.EMPTY)));
      assertTrue(why.contains("began a password exchange"), why);
      TlsUsers.refused(
          ErrorCode.UNAUTHENTICATED,
          () ->
              Futures.await(
                  c.call(
                      MessageType.LOOKUP, new Messages.PathRequest("/"), ResponseDecoder.EMPTY)));
      c.close();
      // A connection a token authenticated takes no password exchange.
      RpcClient byToken = Futures.await(rpc.open(nn, "name node"));
      Futures.await(Greeting.token(token).greet(byToken));
      why =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED,
              () -> say(byToken, MessageType.SCRAM_FIRST, "n,,n=bob,r=abcdefghijklmnop"));
      assertTrue(why.contains("one password exchange per connection"), why);
      byToken.close();
    }
  }

  /**
   * Plays a name node that does not hold the users' verifiers: it answers the first message as a
   * real one would, and then claims success.
   */
  private static final class Impostor implements RpcService {
    @Override
    public Message handle(Channel ch, MessageType type, ByteBuf in)
        throws io.ember.protocol.EmberException {
      String text = Wire.readString(in, "message", 4096);
      String answer =
          type == MessageType.SCRAM_FIRST
              ? "r=" + text.substring(text.indexOf(",r=") + 3) + "impostor,s=c2FsdHNhbHQ=,i=4096"
              : "v=" + java.util.Base64.getEncoder().encodeToString(new byte[32]);
      return out -> Wire.writeString(out, answer);
    }
  }

  @Test
  void aServerThatCannotProveItHoldsTheVerifiersIsRefused() throws Exception {
    try (RpcServer impostor = new RpcServer("impostor", EmberConfig.defaults(), new Impostor())) {
      int port = impostor.start("127.0.0.1", 0).getPort();
      String why =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED,
              () ->
                  EmberClient.connect(
                      as("alice", "alice-secret")
                          .with(ClientKeys.DIRECT_CALLS, "false")
                          .with(EmberKeys.NAMENODE_ADDRESS, "127.0.0.1:" + port)));
      assertTrue(why.contains("could not prove that it holds alice's verifier"), why);
    }
  }

  @Test
  void aDelegationTokenAndAChangedPasswordWorkWithoutARestart() throws Exception {
    Path file = tmp.resolve("changing");
    Files.copy(credentials, file);
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .config(as("node", "node-secret").with(NameNodeKeys.CREDENTIALS, file.toString()))
                .build();
        EmberClient alice = cluster.newClient(as("alice", "alice-secret"))) {
      alice.createDirectory("/alice", CreateOptions.DEFAULT.withPermission(0700));
      DelegationToken token = alice.getDelegationToken("");
      EmberConfig executor = as("", "").with(EmberKeys.DELEGATION_TOKEN, token.encodeToString());
      EmberClient holder = cluster.newClient(executor);
      byte[] data = random(200_000, 3);
      try (EmberOutputStream out = holder.create("/alice/part-0", CreateOptions.DEFAULT)) {
        out.write(data);
      }
      assertEquals("alice", holder.lookup("/alice/part-0").owner());
      assertArrayEquals(data, TestFiles.readAll(holder, "/alice/part-0"));

      // A new password takes effect for new connections; the old one is refused.
      assertFalse(Credentials.addUser(file, "alice", "alice-new"), "alice was there already");
      assertEquals("alice", cluster.newClient(as("alice", "alice-new")).lookup("/alice").owner());
      TlsUsers.refused(
          ErrorCode.UNAUTHENTICATED,
          () -> cluster.newClient(as("alice", "alice-secret")).lookup("/"));
      // A file that no longer reads keeps the users it had.
      Files.writeString(file, "garbage\n");
      assertEquals("alice", cluster.newClient(as("alice", "alice-new")).lookup("/alice").owner());
    }
  }
}
