package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.minicluster.DevCertificates;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shuffle on a cluster whose every connection runs mutual TLS: the driver and its executors
 * (JVMs of their own) present a user's certificate through {@code spark.ember.conf.*}, and the
 * fallback to Spark's own shuffle is off, so the job succeeds only through Ember.
 */
class EmberShuffleTlsTest {
  @TempDir static Path tmp;

  private static Map<String, String> tls(DevCertificates ca, String name) {
    return Map.of(
        EmberKeys.TLS.name(), "true",
        EmberKeys.TLS_CERTIFICATE.name(), ca.certificateFile(name).toString(),
        EmberKeys.TLS_KEY.name(), ca.keyFile(name).toString(),
        EmberKeys.TLS_CA.name(), ca.caFile().toString());
  }

  @Test
  void aJobShufflesThroughASecuredCluster() throws Exception {
    DevCertificates ca = DevCertificates.openOrCreate(tmp.resolve("tls"));
    ca.issue("node", List.of("localhost", "127.0.0.1"));
    ca.issue("spark", List.of());
    try (MiniCluster cluster =
        MiniCluster.builder()
            .dramDatanodes(1)
            .dramCapacity("256m")
            .config(EmberConfig.of(tls(ca, "node")))
            .build()) {
      String namenode = cluster.namenodeAddress().toString();
      // A client without a certificate is refused: what follows can only pass over TLS.
      EmberException refused =
          assertThrows(
              EmberException.class,
              () ->
                  EmberClient.connect(
                          EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode))
                      .close());
      assertEquals(ErrorCode.UNAUTHENTICATED, refused.code(), refused.getMessage());
      SparkTestConf.countThroughEmberOnly("ember-shuffle-tls-test", namenode, tls(ca, "spark"));
    }
  }

  @Test
  void executorsWithoutACertificateWriteWithTheDriversRenewedToken() throws Exception {
    DevCertificates ca = DevCertificates.openOrCreate(tmp.resolve("tls"));
    ca.issue("node", List.of("localhost", "127.0.0.1"));
    ca.issue("spark", List.of());
    try (MiniCluster cluster =
        MiniCluster.builder()
            .dramDatanodes(1)
            .config(
                EmberConfig.of(tls(ca, "node"))
                    .with(io.ember.namenode.NameNodeKeys.DELEGATION_TOKEN_RENEW_INTERVAL, "6s"))
            .build()) {
      String namenode = cluster.namenodeAddress().toString();
      SparkConf driverConf =
          new SparkConf(false)
              .set(EmberShuffleConf.NAMENODE, namenode)
              .set(EmberShuffleConf.FALLBACK_POLICY, "never")
              .set("spark.app.id", "token-test");
      tls(ca, "spark").forEach((k, v) -> driverConf.set("spark.ember.conf." + k, v));
      // The executor trusts the cluster's CA, and has no certificate.
      SparkConf executorConf =
          new SparkConf(false)
              .set(EmberShuffleConf.NAMENODE, namenode)
              .set("spark.ember.conf." + EmberKeys.TLS.name(), "true")
              .set("spark.ember.conf." + EmberKeys.TLS_CA.name(), ca.caFile().toString());
      var driver = new EmberShuffleDataIO(driverConf).driver();
      long issuedBy = System.currentTimeMillis();
      Map<String, String> handed = driver.initializeApplication();
      String token = handed.get(EmberShuffleDataIO.TOKEN_KEY);
      assertTrue(token != null && !token.isEmpty(), "the driver hands its executors a token");
      driver.registerShuffle(0);
      try {
        SparkTestConf.writeOneMapOutput(executorConf, "token-test", handed);
        try (EmberClient spark = cluster.newClient(EmberConfig.of(tls(ca, "spark")))) {
          String dir = handed.get(EmberShuffleDataIO.ROOT_KEY) + "/0";
          var written = spark.list(dir);
          assertEquals(1, written.size(), written.toString());
          assertEquals("spark", written.get(0).status().owner(), "written as the driver's user");
        }
        // Unrenewed, the token would expire 6 s after it was issued; the driver renews it while
        // the application runs. Waits on the clock (deadline 120 s), asserting no duration.
        EmberConfig withToken =
            EmberConfig.defaults()
                .with(EmberKeys.TLS, "true")
                .with(EmberKeys.TLS_CA, ca.caFile().toString())
                .with(EmberKeys.TLS_CERTIFICATE, "")
                .with(EmberKeys.TLS_KEY, "")
                .with(EmberKeys.DELEGATION_TOKEN, token);
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < issuedBy + 3 * 6_000) {
          assertTrue(System.currentTimeMillis() < deadline, "the clock stood still");
          Thread.sleep(200);
        }
        String root = handed.get(EmberShuffleDataIO.ROOT_KEY);
        assertEquals("spark", cluster.newClient(withToken).lookup(root).owner());
        // The application ends: the driver cancels the token.
        driver.cleanupApplication();
        EmberException cancelled =
            assertThrows(EmberException.class, () -> cluster.newClient(withToken));
        assertEquals(ErrorCode.UNAUTHENTICATED, cancelled.code(), cancelled.getMessage());
        assertTrue(cancelled.getMessage().contains("cancelled"), cancelled.getMessage());
      } finally {
        EmberShuffleConf.useDelegationToken(null);
        EmberShuffleConf.closeClient();
      }
    }
  }
}
