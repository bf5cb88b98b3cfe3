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
import io.ember.protocol.EmberConfig;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.Permissions;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Owners and modes on a TLS cluster over loopback: each client is the user its certificate names,
 * and the name node checks what it may do as HDFS would.
 */
class PermissionsOverTlsTest {
  @TempDir static Path tmp;
  private static TlsUsers users;

  @BeforeAll
  static void certificates() throws Exception {
    users = TlsUsers.issue(tmp.resolve("ca"), "alice", "bob", "admin");
  }

  private static EmberConfig as(String name) {
    return users.as(name);
  }

  private static String denied(Executable op) {
    return TlsUsers.refused(ErrorCode.PERMISSION_DENIED, op);
  }

  /**
   * The status code and body of a GET of the name node's status pages, over HTTPS as TLS makes
   * them, by a client that trusts the cluster's CA and shows no certificate (a browser).
   */
  private static java.net.http.HttpResponse<String> browse(
      MiniCluster cluster, TlsUsers users, String path) throws Exception {
    java.net.InetSocketAddress at = cluster.namenode().httpAddress();
    java.net.URI uri =
        java.net.URI.create(
            "https://localhost:" + at.getPort() + "/browse?path=" + path.replace("/", "%2F"));
    return users
        .httpsClient()
        .send(
            java.net.http.HttpRequest.newBuilder(uri)
                .timeout(java.time.Duration.ofSeconds(60))
                .build(),
            java.net.http.HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void eachUserReachesOnlyWhatItsModesAllow() throws Exception {
    byte[] secret = new byte[1024 * 1024 + 5];
    new Random(11).nextBytes(secret);
    try (MiniCluster cluster =
            MiniCluster.builder()
                .dramDatanodes(1)
                .config(as("node").with(NameNodeKeys.SUPERUSERS, "admin"))
                .build();
        EmberClient alice = cluster.newClient(as("alice"));
        EmberClient bob = cluster.newClient(as("bob"));
        EmberClient admin = cluster.newClient(as("admin"))) {
      alice.createDirectory("/alice", CreateOptions.DEFAULT.withPermission(0700));
      try (EmberOutputStream out =
          alice.create("/alice/secret.bin", CreateOptions.DEFAULT.withPermission(0600))) {
        out.write(secret);
      }
      NodeStatus st = bob.lookup("/alice");
      assertEquals("alice", st.owner());
      assertEquals(0700, st.permission());

      String why = denied(() -> bob.open("/alice/secret.bin"));
      assertTrue(why.contains("bob may not pass through (x) /alice (alice:supergroup"), why);
      denied(() -> bob.list("/alice"));
      denied(() -> bob.create("/alice/planted", CreateOptions.DEFAULT));
      why = denied(() -> bob.delete("/alice", true));
      assertTrue(why.contains("/ is sticky"), why);
      denied(() -> bob.rename("/alice", "/mine"));
      denied(() -> bob.setAttributes("/alice", "", "", 0777));
      denied(() -> alice.setAttributes("/alice", "bob", "", Permissions.DEFAULT));
      // Nobody signs in to the status pages: their browser sees only what is open to all.
      // The pages are served over HTTPS with the node's certificate.
      var page = browse(cluster, users, "/alice");
      assertEquals(404, page.statusCode(), page.body());
      assertFalse(page.body().contains("secret.bin"), page.body());
      assertEquals(200, browse(cluster, users, "/").statusCode());
      assertTrue(cluster.namenode().httpUrl().startsWith("https://"), cluster.namenode().httpUrl());
      // A plain HTTP request gets a readable refusal, not a page.
      var plain =
          java.net.http.HttpClient.newHttpClient()
              .send(
                  java.net.http.HttpRequest.newBuilder(
                          java.net.URI.create(
                              "http://127.0.0.1:"
                                  + cluster.namenode().httpAddress().getPort()
                                  + "/"))
                      .timeout(java.time.Duration.ofSeconds(60))
                      .build(),
                  java.net.http.HttpResponse.BodyHandlers.ofString());
      assertEquals(400, plain.statusCode(), plain.body());
      assertTrue(plain.body().contains("served over HTTPS"), plain.body());

      // The owner opens it up; bob reads every byte.
      alice.setAttributes("/alice", "", "", 0755);
      alice.setAttributes("/alice/secret.bin", "", "", 0644);
      try (EmberInputStream in = bob.open("/alice/secret.bin")) {
        assertArrayEquals(secret, in.readAllBytes());
      }
      denied(() -> bob.delete("/alice/secret.bin", false)); // /alice is alice's to write

      // The super-user changes owners and passes every check.
      admin.setAttributes("/alice/secret.bin", "bob", "bob", 0600);
      denied(() -> alice.open("/alice/secret.bin"));
      try (EmberInputStream in = bob.open("/alice/secret.bin")) {
        assertArrayEquals(secret, in.readAllBytes());
      }
      admin.delete("/alice", true);
      assertEquals(0, admin.list("/").size());
    }
  }
}
