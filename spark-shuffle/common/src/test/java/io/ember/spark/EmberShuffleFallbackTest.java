package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.Messages.DirEntry;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * Shuffles Ember should not take go to Spark's own shuffle: by their number of partitions, by
 * policy, or because the name node cannot be reached; the results stay right, and Ember holds
 * nothing of them.
 */
class EmberShuffleFallbackTest {
  private static MiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().dramDatanodes(1).dramCapacity("128m").build();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static SparkConf conf(String namenode) {
    return SparkTestConf.withEmberShuffle(
        SparkTestConf.local("ember-shuffle-fallback-test"), namenode);
  }

  private static List<String> words() {
    List<String> w = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      w.add("w" + (i * 7919 % 500));
    }
    return w;
  }

  /** The word counts, as Java computes them: what every run must return. */
  private static Map<String, Integer> expectedCounts() {
    return words().stream().collect(Collectors.toMap(w -> w, w -> 1, Integer::sum, TreeMap::new));
  }

  private static JavaPairRDD<String, Integer> counts(JavaSparkContext sc, int partitions) {
    return sc.parallelize(words(), 4)
        .mapToPair(w -> new Tuple2<>(w, 1))
        .reduceByKey(Integer::sum, partitions);
  }

  private static int shuffleId(JavaPairRDD<?, ?> shuffled) {
    return ((ShuffleDependency<?, ?, ?>) shuffled.rdd().dependencies().head()).shuffleId();
  }

  /** Blocks that reduce tasks read from executors' local disks: only Spark's own reader does. */
  private static LongAdder countLocalBlockReads(JavaSparkContext sc) {
    LongAdder local = new LongAdder();
    sc.sc()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onTaskEnd(SparkListenerTaskEnd end) {
                if (end.taskMetrics() != null) {
                  local.add(end.taskMetrics().shuffleReadMetrics().localBlocksFetched());
                }
              }
            });
    return local;
  }

  /** {@code reads} once Spark's listeners heard of every task that has ended (they hear late). */
  private static long settled(JavaSparkContext sc, LongAdder reads) throws Exception {
    sc.sc().listenerBus().waitUntilEmpty(120_000);
    return reads.sum();
  }

  /** The applications' shuffle directories in Ember; none before any application used Ember. */
  private static List<DirEntry> applicationDirs(EmberClient probe) throws Exception {
    try {
      return probe.list("/spark-shuffle");
    } catch (io.ember.protocol.EmberException e) {
      if (e.code() != io.ember.protocol.ErrorCode.NOT_FOUND) {
        throw e;
      }
      return List.of();
    }
  }

  /** The names of the shuffle directories Ember holds for the one running application. */
  private static Set<String> shuffleDirsOnEmber(EmberClient probe) throws Exception {
    List<DirEntry> apps = probe.list("/spark-shuffle");
    assertEquals(1, apps.size(), "one application directory: " + apps);
    return probe.list("/spark-shuffle/" + apps.get(0).name()).stream()
        .map(DirEntry::name)
        .collect(Collectors.toSet());
  }

  @Test
  void aShuffleWithMorePartitionsThanTheLimitGoesToSparksOwnShuffle() throws Exception {
    try (EmberClient probe = cluster.newClient();
        JavaSparkContext sc =
            new JavaSparkContext(
                conf(cluster.namenodeAddress().toString())
                    .set(EmberShuffleConf.FALLBACK_MAX_PARTITIONS, "4"))) {
      LongAdder localBlockReads = countLocalBlockReads(sc);
      JavaPairRDD<String, Integer> wide = counts(sc, 8);
      JavaPairRDD<String, Integer> narrow = counts(sc, 3);
      assertEquals(expectedCounts(), new TreeMap<>(wide.collectAsMap()));
      long readLocallyByTheWideShuffle = settled(sc, localBlockReads);
      assertEquals(expectedCounts(), new TreeMap<>(narrow.collectAsMap()));

      assertTrue(
          readLocallyByTheWideShuffle > 0, "the wide shuffle was not read by Spark's reader");
      assertEquals(
          readLocallyByTheWideShuffle,
          settled(sc, localBlockReads),
          "the narrow shuffle was read from local disks, not from Ember");
      assertEquals(Set.of(Integer.toString(shuffleId(narrow))), shuffleDirsOnEmber(probe));
      String dir =
          "/spark-shuffle/" + probe.list("/spark-shuffle").get(0).name() + "/" + shuffleId(narrow);
      assertEquals(4, probe.list(dir).size(), "one map output per map task: " + probe.list(dir));
    }
  }

  @Test
  void policyAlwaysKeepsEveryShuffleOffEmber() throws Exception {
    try (EmberClient probe = cluster.newClient();
        JavaSparkContext sc =
            new JavaSparkContext(
                conf(cluster.namenodeAddress().toString())
                    .set(EmberShuffleConf.FALLBACK_POLICY, "always"))) {
      LongAdder localBlockReads = countLocalBlockReads(sc);
      assertEquals(expectedCounts(), new TreeMap<>(counts(sc, 3).collectAsMap()));
      assertTrue(settled(sc, localBlockReads) > 0, "the shuffle was not read by Spark's reader");
      assertTrue(applicationDirs(probe).isEmpty(), "Ember was used: " + applicationDirs(probe));
    }
  }

  @Test
  void anUnreachableNameNodeSendsShufflesToSparksOwnShuffle() throws Exception {
    try (JavaSparkContext sc = new JavaSparkContext(conf("127.0.0.1:" + closedPort()))) {
      LongAdder localBlockReads = countLocalBlockReads(sc);
      assertEquals(expectedCounts(), new TreeMap<>(counts(sc, 3).collectAsMap()));
      assertTrue(settled(sc, localBlockReads) > 0, "the shuffle was not read by Spark's reader");
    }
  }

  @Test
  void policyNeverStopsTheApplicationWhenTheNameNodeCannotBeReached() throws Exception {
    String namenode = "127.0.0.1:" + closedPort();
    Exception e =
        assertThrows(
            Exception.class,
            () ->
                new JavaSparkContext(conf(namenode).set(EmberShuffleConf.FALLBACK_POLICY, "never"))
                    .close());
    assertTrue(
        String.valueOf(e.getMessage()).startsWith("Ember shuffle: cannot create /spark-shuffle/"),
        e.toString());
  }

  @Test
  void aPolicyOfAnotherNameStopsTheApplicationAndSaysWhichAreKnown() {
    Exception e =
        assertThrows(
            Exception.class,
            () ->
                new JavaSparkContext(
                        conf(cluster.namenodeAddress().toString())
                            .set(EmberShuffleConf.FALLBACK_POLICY, "sometimes"))
                    .close());
    assertEquals(
        "spark.ember.shuffle.fallback.policy is 'sometimes': use auto, never or always",
        e.getMessage());
  }

  /**
   * A loopback port nothing listens on: it was free a moment ago, and only a bind to port 0 in this
   * JVM could have taken it since (the OS hands out ports in turn, rarely the same twice).
   */
  private static int closedPort() throws Exception {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }
}
