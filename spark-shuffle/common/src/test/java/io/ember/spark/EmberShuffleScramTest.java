package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import io.ember.namenode.Credentials;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shuffle on a cluster of password users (SCRAM-SHA-256, no TLS): a job whose driver and
 * executors prove a password, and executors that hold no password and write with the token their
 * driver handed them. The fallback to Spark's own shuffle is off, so the work goes through Ember.
 */
class EmberShuffleScramTest {
  @TempDir static Path tmp;
  private static Path credentials;
  private static Path sparkPassword;

  @BeforeAll
  static void users() throws Exception {
    credentials = tmp.resolve("credentials");
    Credentials.addUser(credentials, "node", "node-secret");
    Credentials.addUser(credentials, "spark", "spark-secret");
    sparkPassword = tmp.resolve("spark.password");
    Files.writeString(sparkPassword, "spark-secret\n");
  }

  private static MiniCluster cluster() throws Exception {
    return MiniCluster.builder()
        .dramDatanodes(1)
        .dramCapacity("256m")
        .config(
            EmberConfig.defaults()
                .with(EmberKeys.SCRAM, "true")
                .with(EmberKeys.USER, "node")
                .with(EmberKeys.PASSWORD, "node-secret")
                .with(NameNodeKeys.CREDENTIALS, credentials.toString()))
        .build();
  }

  /** The spark user's settings as {@code spark.ember.conf.*}, its password in a file. */
  private static Map<String, String> sparkUser() {
    return Map.of(
        EmberKeys.SCRAM.name(), "true",
        EmberKeys.USER.name(), "spark",
        EmberKeys.PASSWORD_FILE.name(), sparkPassword.toString());
  }

  @Test
  void aJobShufflesThroughAPasswordCluster() throws Exception {
    try (MiniCluster cluster = cluster()) {
      String namenode = cluster.namenodeAddress().toString();
      // A client that proves no password is refused: what follows can only pass as a user.
      EmberException refused =
          assertThrows(
              EmberException.class,
              () ->
                  EmberClient.connect(
                          EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode))
                      .lookup("/"));
      assertEquals(ErrorCode.UNAUTHENTICATED, refused.code(), refused.getMessage());
      SparkTestConf.countThroughEmberOnly("ember-shuffle-scram-test", namenode, sparkUser());
    }
  }

  @Test
  void executorsWithoutAPasswordWriteWithTheDriversToken() throws Exception {
    try (MiniCluster cluster = cluster()) {
      String namenode = cluster.namenodeAddress().toString();
      SparkConf driverConf =
          new SparkConf(false)
              .set(EmberShuffleConf.NAMENODE, namenode)
              .set(EmberShuffleConf.FALLBACK_POLICY, "never")
              .set("spark.app.id", "scram-token-test");
      sparkUser().forEach((k, v) -> driverConf.set("spark.ember.conf." + k, v));
      // The executor knows the cluster takes passwords, and has none.
      SparkConf executorConf =
          new SparkConf(false)
              .set(EmberShuffleConf.NAMENODE, namenode)
              .set("spark.ember.conf." + EmberKeys.SCRAM.name(), "true");
      var driver = new EmberShuffleDataIO(driverConf).driver();
      Map<String, String> handed = driver.initializeApplication();
      String token = handed.get(EmberShuffleDataIO.TOKEN_KEY);
      assertTrue(token != null && !token.isEmpty(), "the driver hands its executors a token");
      assertFalse(handed.toString().contains("spark-secret"), "the password is not handed on");
      driver.registerShuffle(0);
      try {
        SparkTestConf.writeOneMapOutput(executorConf, "scram-token-test", handed);
        EmberConfig asSpark =
            EmberConfig.defaults()
                .with(EmberKeys.SCRAM, "true")
                .with(EmberKeys.USER, "spark")
                .with(EmberKeys.PASSWORD, "spark-secret");
        try (EmberClient spark = cluster.newClient(asSpark)) {
          String dir = handed.get(EmberShuffleDataIO.ROOT_KEY) + "/0";
          var written = spark.list(dir);
          assertEquals(1, written.size(), written.toString());
          assertEquals("spark", written.get(0).status().owner(), "written as the driver's user");
        }
        // The application ends: the driver cancels the token, and a process holding it is out.
        EmberConfig withToken =
            EmberConfig.defaults()
                .with(EmberKeys.SCRAM, "true")
                .with(EmberKeys.USER, "")
                .with(EmberKeys.PASSWORD, "")
                .with(EmberKeys.DELEGATION_TOKEN, token);
        // Until then the token is good.
        String root = handed.get(EmberShuffleDataIO.ROOT_KEY);
        try (EmberClient holder = cluster.newClient(withToken)) {
          assertEquals("spark", holder.lookup(root).owner());
        }
        driver.cleanupApplication();
        EmberException cancelled =
            assertThrows(EmberException.class, () -> cluster.newClient(withToken).lookup("/"));
        assertEquals(ErrorCode.UNAUTHENTICATED, cancelled.code(), cancelled.getMessage());
        assertTrue(cancelled.getMessage().contains("cancelled"), cancelled.getMessage());
      } finally {
        EmberShuffleConf.useDelegationToken(null);
        EmberShuffleConf.closeClient();
      }
    }
  }
}
