package io.ember.minicluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.NodeStatus;
import io.ember.protocol.Permissions;
import java.nio.file.Path;
import java.util.List;
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
  private static DevCertificates ca;

  @BeforeAll
  static void certificates() throws Exception {
    ca = DevCertificates.openOrCreate(tmp.resolve("ca"));
    ca.issue("node", List.of("localhost", "127.0.0.1"));
    for (String user : List.of("alice", "bob", "admin")) {
      ca.issue(user, List.of());
    }
  }

  private static EmberConfig as(String name) {
    return EmberConfig.defaults()
        .with(EmberKeys.TLS, "true")
        .with(EmberKeys.TLS_CERTIFICATE, ca.certificateFile(name).toString())
        .with(EmberKeys.TLS_KEY, ca.keyFile(name).toString())
        .with(EmberKeys.TLS_CA, ca.caFile().toString());
  }

  private static String denied(Executable op) {
    EmberException e = assertThrows(EmberException.class, op);
    assertEquals(ErrorCode.PERMISSION_DENIED, e.code(), e.getMessage());
    return e.getMessage();
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
