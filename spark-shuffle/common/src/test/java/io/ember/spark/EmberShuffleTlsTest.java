package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.ember.client.EmberClient;
import io.ember.minicluster.DevCertificates;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

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
      Path sparkHome = SparkTestConf.prepareLocalClusters();
      try {
        SparkConf c = SparkTestConf.localCluster("ember-shuffle-tls-test", sparkHome, 2);
        SparkTestConf.withEmberShuffle(c, namenode);
        c.set(EmberShuffleConf.FALLBACK_POLICY, "never");
        tls(ca, "spark").forEach((k, v) -> c.set("spark.ember.conf." + k, v));
        List<Integer> data = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
          data.add(i);
        }
        try (JavaSparkContext sc = new JavaSparkContext(c)) {
          Map<Integer, Integer> counts =
              sc.parallelize(data, 4)
                  .mapToPair(i -> new Tuple2<>(i % 100, 1))
                  .reduceByKey(Integer::sum, 3)
                  .collectAsMap();
          assertEquals(100, counts.size());
          for (int k = 0; k < 100; k++) {
            assertEquals(200, counts.get(k), "count of key " + k);
          }
        }
      } finally {
        SparkTestConf.forgetLocalClusters();
      }
    }
  }
}
