package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.DelegationToken;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Delegation tokens on a TLS cluster over loopback: a client with a certificate gets a token, and a
 * process with only the token (and the cluster's CA) acts as the token's owner, at the name node
 * and at the DRAM data nodes, until the token is cancelled or expires.
 */
class DelegationTokenTest {
  @TempDir static Path tmp;
  private static TlsUsers users;

  @BeforeAll
  static void certificates() throws Exception {
    users = TlsUsers.issue(tmp.resolve("ca"), "alice", "bob", "admin");
  }

  /** Settings of a process that trusts the cluster's CA and shows no certificate. */
  private static EmberConfig withoutCertificate() {
    return users.as("alice").with(EmberKeys.TLS_CERTIFICATE, "").with(EmberKeys.TLS_KEY, "");
  }

  private static EmberConfig holding(DelegationToken token) {
    return withoutCertificate().with(EmberKeys.DELEGATION_TOKEN, token.encodeToString());
  }

  private static MiniCluster.Builder cluster() {
    return MiniCluster.builder()
        .dramDatanodes(1)
        .config(users.as("node").with(NameNodeKeys.SUPERUSERS, "admin"));
  }

  @Test
  void aProcessWithOnlyATokenActsAsItsOwner() throws Exception {
    byte[] data = new byte[1024 * 1024 + 17];
    new Random(5).nextBytes(data);
    try (MiniCluster cluster = cluster().build();
        EmberClient alice = cluster.newClient(users.as("alice"));
        EmberClient bob = cluster.newClient(users.as("bob"))) {
      alice.createDirectory("/alice", CreateOptions.DEFAULT.withPermission(0700));
      bob.createDirectory("/bob", CreateOptions.DEFAULT.withPermission(0700));
      DelegationToken token = alice.getDelegationToken("");
      assertEquals("alice", token.identifier().owner());
      assertTrue(!token.toString().contains(token.encodeToString()), token.toString());

      EmberClient executor = cluster.newClient(holding(token));
      // Writes and reads go through the DRAM data node, which sees no certificate either: the
      // block tokens the name node hands this connection hold for whoever presents them.
      try (EmberOutputStream out = executor.create("/alice/part-0", CreateOptions.DEFAULT)) {
        out.write(data);
      }
      assertEquals("alice", executor.lookup("/alice/part-0").owner());
      try (EmberInputStream in = executor.open("/alice/part-0")) {
        assertArrayEquals(data, in.readAllBytes());
      }
      try (EmberInputStream in = alice.open("/alice/part-0")) {
        assertArrayEquals(data, in.readAllBytes());
      }
      // Only what alice may do.
      String why = TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> executor.list("/bob"));
      assertTrue(why.contains("alice"), why);
      // A token gets no further token: one leaked token cannot outlive its own expiry.
      why = TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> executor.getDelegationToken(""));
      assertTrue(why.contains("gets no further token"), why);

      // A process with neither a certificate nor a token gets nothing.
      why =
          TlsUsers.refused(
              ErrorCode.UNAUTHENTICATED, () -> cluster.newClient(withoutCertificate()).lookup("/"));
      assertTrue(why.contains("showed no certificate signed by"), why);
      assertTrue(why.contains(EmberKeys.DELEGATION_TOKEN.name()), why);
    }
  }

  @Test
  void alteredForeignAndCancelledTokensAreRefusedAndOnlyTheRenewerRenews() throws Exception {
    try (MiniCluster cluster = cluster().build();
        MiniCluster other = cluster().build();
        EmberClient alice = cluster.newClient(users.as("alice"));
        EmberClient bob = cluster.newClient(users.as("bob"));
        EmberClient admin = cluster.newClient(users.as("admin"))) {
      DelegationToken token = alice.getDelegationToken("bob");

      // A flipped bit in the password, or an identifier rewritten to name another owner.
      byte[] password = token.password();
      password[3] ^= 1;
      DelegationToken altered = new DelegationToken(token.identifier(), password);
      String why = refusedAtConnect(cluster, altered);
      assertTrue(why.contains("password does not match"), why);
      DelegationToken.Identifier id = token.identifier();
      DelegationToken asAdmin =
          new DelegationToken(
              new DelegationToken.Identifier(
                  "admin",
                  id.renewer(),
                  id.issueMillis(),
                  id.maxMillis(),
                  id.sequence(),
                  id.keyId()),
              token.password());
      why = refusedAtConnect(cluster, asAdmin);
      assertTrue(why.contains("password does not match"), why);
      // Another cluster's token, for a name node that never issued it.
      DelegationToken foreign = other.newClient(users.as("alice")).getDelegationToken("");
      why = refusedAtConnect(cluster, foreign);
      assertTrue(why.contains("refused"), why);

      // Renewing is for the renewer named (bob), not the owner; cancelling for either.
      why = TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> alice.renewDelegationToken(token));
      assertTrue(why.contains("only bob may"), why);
      long until = bob.renewDelegationToken(token);
      assertTrue(until > System.currentTimeMillis(), "renewed until " + until);
      // A process holding the token renews nothing, not even its own token: a stolen token
      // cannot keep itself alive.
      EmberClient holder = cluster.newClient(holding(token));
      why = TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> holder.renewDelegationToken(token));
      assertTrue(why.contains("renews no token"), why);
      // Renewed, it still authenticates.
      assertTrue(
          cluster.newClient(holding(token)).lookup("/").type()
              == io.ember.protocol.NodeType.DIRECTORY);
      DelegationToken another = alice.getDelegationToken("");
      why = TlsUsers.refused(ErrorCode.PERMISSION_DENIED, () -> bob.cancelDelegationToken(another));
      assertTrue(why.contains("only its owner or renewer"), why);
      bob.cancelDelegationToken(token);
      why = refusedAtConnect(cluster, token);
      assertTrue(why.contains("cancelled"), why);
      // A connection the token authenticated before stops too.
      why = TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> holder.lookup("/"));
      assertTrue(why.contains("cancelled"), why);
      TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> bob.renewDelegationToken(token));
      // The super-user cancels anyone's.
      admin.cancelDelegationToken(another);
      refusedAtConnect(cluster, another);
    }
  }

  @Test
  void aTokenNotRenewedInTimeExpiresAndTokensSurviveANameNodeRestart() throws Exception {
    try (MiniCluster cluster =
            cluster()
                .config(
                    users
                        .as("node")
                        .with(NameNodeKeys.SUPERUSERS, "admin")
                        .with(NameNodeKeys.DELEGATION_TOKEN_RENEW_INTERVAL, "2s")
                        .with(NameNodeKeys.CHECKPOINT_RECORDS, "3"))
                .build();
        EmberClient alice = cluster.newClient(users.as("alice"))) {
      DelegationToken shortLived = alice.getDelegationToken("");
      long until = alice.renewDelegationToken(shortLived);
      // Past its expiry by the clock the name node reads too.
      long deadline = System.currentTimeMillis() + 120_000;
      while (System.currentTimeMillis() <= until + 50) {
        assertTrue(System.currentTimeMillis() < deadline, "the clock did not pass " + until);
        Thread.sleep(50);
      }
      String why = refusedAtConnect(cluster, shortLived);
      assertTrue(why.contains("expired"), why);
      TlsUsers.refused(ErrorCode.UNAUTHENTICATED, () -> alice.renewDelegationToken(shortLived));

      // Live and cancelled tokens, through several checkpoints and the journal after them.
      DelegationToken kept = alice.getDelegationToken("");
      DelegationToken dropped = alice.getDelegationToken("");
      for (int i = 0; i < 5; i++) {
        alice.createDirectory("/d" + i, CreateOptions.DEFAULT);
      }
      alice.cancelDelegationToken(dropped);
      cluster.restartNamenode();
      alice.renewDelegationToken(kept);
      assertEquals("alice", cluster.newClient(holding(kept)).lookup("/d4").owner());
      why = refusedAtConnect(cluster, dropped);
      assertTrue(why.contains("cancelled"), why);
      DelegationToken fresh = alice.getDelegationToken("");
      assertNotEquals(kept.identifier().sequence(), fresh.identifier().sequence());
    }
  }

  @Test
  void aTokenCannotActAsADataNodeAndAnAnonymousClientLearnsNothingFromADataNode() throws Exception {
    try (MiniCluster cluster = cluster().build();
        EmberClient admin = cluster.newClient(users.as("admin"))) {
      // Even a super-user's token: data nodes learn the block token keys.
      DelegationToken superuser = admin.getDelegationToken("");
      try (io.ember.protocol.RpcClients rpc =
          new io.ember.protocol.RpcClients(holding(superuser), "test")) {
        rpc.greet(cluster.namenodeAddress(), io.ember.protocol.Greeting.token(superuser));
        String why =
            TlsUsers.refused(
                ErrorCode.PERMISSION_DENIED,
                () ->
                    io.ember.protocol.Futures.await(
                        rpc.get(cluster.namenodeAddress(), "name node")
                            .thenCompose(
                                c ->
                                    c.call(
                                        io.ember.protocol.MessageType.HEARTBEAT,
                                        io.ember.protocol.Message.EMPTY,
                                        io.ember.protocol.ResponseDecoder.EMPTY))));
        assertTrue(why.contains("may not act as a data node"), why);
      }
      // A data node tells a client without a certificate nothing of what its slots hold.
      try (io.ember.protocol.RpcClients rpc =
          new io.ember.protocol.RpcClients(withoutCertificate(), "test")) {
        io.ember.protocol.HostPort dn =
            io.ember.protocol.HostPort.parse(cluster.datanodes().get(0).endpoint(), 0);
        String why =
            TlsUsers.refused(
                ErrorCode.PERMISSION_DENIED,
                () ->
                    io.ember.protocol.Futures.await(
                        rpc.get(dn, "data node")
                            .thenCompose(
                                c ->
                                    c.call(
                                        io.ember.protocol.MessageType.BLOCK_LENGTH,
                                        new io.ember.protocol.Messages.BlockLengthRequest(
                                            1, 1, 0, 0, io.ember.protocol.BlockToken.NONE),
                                        io.ember.protocol.ResponseDecoder.EMPTY))));
        assertTrue(why.contains("only to callers with a certificate"), why);
      }
    }
  }

  /** Connects with {@code token} and no certificate, which must be refused; returns why. */
  private static String refusedAtConnect(MiniCluster cluster, DelegationToken token) {
    return TlsUsers.refused(
        ErrorCode.UNAUTHENTICATED, () -> cluster.newClient(holding(token)).lookup("/"));
  }
}
