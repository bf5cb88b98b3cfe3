package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.Messages.DirEntry;
import java.io.IOException;
import java.lang.ref.Reference;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
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

  /** Blocks that reduce tasks read from executors' local disks: only Spark's own reader does. */
  private static LongAdder countLocalBlockReads(JavaSparkContext sc) {
    LongAdder local = new LongAdder();
    SparkTestConf.onTaskEnd(sc, m -> local.add(m.shuffleReadMetrics().localBlocksFetched()));
    return local;
  }

  /** {@code reads} once Spark's listeners heard of every task that has ended (they hear late). */
  private static long settled(JavaSparkContext sc, LongAdder reads) throws Exception {
    sc.sc().listenerBus().waitUntilEmpty(120_000);
    return reads.sum();
  }

  /** The applications' shuffle directories in Ember; none before any application used Ember. */
  private static List<DirEntry> applicationDirs(EmberClient probe) throws Exception {
    return SparkTestConf.listOrNone(probe, "/spark-shuffle");
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
      try {
        assertEquals(
            Set.of(Integer.toString(SparkTestConf.shuffleId(narrow))), shuffleDirsOnEmber(probe));
        List<DirEntry> outputs = SparkTestConf.shuffleFiles(probe, narrow);
        assertEquals(4, outputs.size(), "one map output per map task: " + outputs);
      } finally {
        Reference.reachabilityFence(narrow);
      }
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
      assertEquals(List.of(), applicationDirs(probe), "Ember was used");
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

  /**
   * A name node that takes connections and never answers; counts the connections. Each ask is one
   * connection, because a client whose first call fails closes itself and the next ask connects
   * anew.
   */
  private static final class SilentNameNode implements AutoCloseable {
    private final ServerSocket server =
        new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
    private final AtomicInteger accepted = new AtomicInteger();
    private final List<Socket> held = new CopyOnWriteArrayList<>();

    SilentNameNode() throws IOException {
      Thread acceptor =
          new Thread(
              () -> {
                try {
                  while (true) {
                    held.add(server.accept());
                    accepted.incrementAndGet();
                  }
                } catch (IOException closed) {
                  // close() ends the test's use of it.
                }
              },
              "silent-namenode");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    String address() {
      return "127.0.0.1:" + server.getLocalPort();
    }

    /** Waits until at least {@code n} connections came, and returns how many did. */
    int awaitAccepted(int n) throws InterruptedException {
      SparkTestConf.await(() -> accepted.get() >= n, () -> accepted.get() + " connections");
      return accepted.get();
    }

    @Override
    public void close() throws IOException {
      server.close();
      for (Socket s : held) {
        s.close();
      }
    }
  }

  private static SparkConf silentConf(SilentNameNode namenode, String retryInterval) {
    return conf(namenode.address())
        .set(EmberShuffleConf.CONF_PREFIX + "ember.rpc.timeout", "1s")
        .set(EmberShuffleConf.FALLBACK_RETRY_INTERVAL, retryInterval);
  }

  @Test
  void afterEmberFailedShufflesSkipItForTheRetryIntervalInsteadOfWaitingForItEachTime()
      throws Exception {
    try (SilentNameNode namenode = new SilentNameNode()) {
      try (JavaSparkContext sc = new JavaSparkContext(silentConf(namenode, "1h"))) {
        // The application's start asked the name node once, and gave up at the timeout.
        assertEquals(1, namenode.awaitAccepted(1));
        assertEquals(expectedCounts(), new TreeMap<>(counts(sc, 3).collectAsMap()));
        assertEquals(expectedCounts(), new TreeMap<>(counts(sc, 2).collectAsMap()));
        String why = EmberShuffleDataIO.place(1_000, 2);
        assertTrue(why != null && why.startsWith("Ember could not take a shuffle "), why);
        assertTrue(why.contains(EmberShuffleConf.FALLBACK_RETRY_INTERVAL), why);
        assertEquals(1, namenode.accepted.get(), "a shuffle asked the silent name node again");
      }
      // Nothing was made in Ember, so the stop had nothing to delete there and did not ask.
      assertEquals(1, namenode.accepted.get(), "the stop asked the silent name node");
    }
  }

  @Test
  @SuppressWarnings("try") // the running context is what place() asks; the test needs no more
  void ofShufflesRegisteredTogetherAfterTheIntervalOnlyOneAsksEmber() throws Exception {
    try (SilentNameNode namenode = new SilentNameNode();
        JavaSparkContext sc =
            new JavaSparkContext(
                silentConf(namenode, "3s").set(EmberShuffleConf.FALLBACK_MAX_PARTITIONS, "4"))) {
      assertEquals(1, namenode.awaitAccepted(1));
      // The interval is a time, so waiting it out is the condition itself.
      Thread.sleep(3_500);
      // A shuffle that falls back for its size does not use up the ask.
      String wide = EmberShuffleDataIO.place(1_999, 8);
      assertTrue(wide.startsWith("its 8 reduce partitions are more than"), wide);
      int shuffles = 4;
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      List<java.util.concurrent.Future<String>> whys = new ArrayList<>();
      java.util.concurrent.ExecutorService pool =
          java.util.concurrent.Executors.newFixedThreadPool(shuffles);
      try {
        for (int i = 0; i < shuffles; i++) {
          int shuffleId = 2_000 + i;
          whys.add(
              pool.submit(
                  () -> {
                    go.await();
                    return EmberShuffleDataIO.place(shuffleId, 2);
                  }));
        }
        go.countDown();
        List<String> asked = new ArrayList<>();
        for (java.util.concurrent.Future<String> why : whys) {
          String w = why.get();
          if (w.startsWith("Ember cannot take it: ")) {
            asked.add(w);
          } else {
            assertTrue(w.startsWith("Ember could not take a shuffle "), w);
          }
        }
        assertEquals(1, asked.size(), "shuffles that waited for the silent name node: " + asked);
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void withNoRetryIntervalEveryShuffleAsksEmberAgain() throws Exception {
    try (SilentNameNode namenode = new SilentNameNode();
        JavaSparkContext sc = new JavaSparkContext(silentConf(namenode, "0"))) {
      assertEquals(expectedCounts(), new TreeMap<>(counts(sc, 3).collectAsMap()));
      assertEquals(expectedCounts(), new TreeMap<>(counts(sc, 2).collectAsMap()));
      // The start and each of the two shuffles.
      assertEquals(3, namenode.awaitAccepted(3));
    }
  }

  @Test
  void aNameNodeThatComesBackTakesTheNextShuffle() throws Exception {
    int port = closedPort();
    try (JavaSparkContext sc =
        new JavaSparkContext(
            conf("127.0.0.1:" + port).set(EmberShuffleConf.FALLBACK_RETRY_INTERVAL, "0"))) {
      String down = EmberShuffleDataIO.place(3_000, 2);
      assertTrue(down != null && down.startsWith("Ember cannot take it: "), down);
      try (MiniCluster back =
              MiniCluster.builder()
                  .namenodePort(port)
                  .dramDatanodes(1)
                  .dramCapacity("64m")
                  .build();
          EmberClient probe = back.newClient()) {
        assertNull(EmberShuffleDataIO.place(3_001, 2), "the name node is back");
        LongAdder localBlockReads = countLocalBlockReads(sc);
        JavaPairRDD<String, Integer> onEmber = counts(sc, 3);
        assertEquals(expectedCounts(), new TreeMap<>(onEmber.collectAsMap()));
        assertEquals(0, settled(sc, localBlockReads), "read from local disks, not from Ember");
        assertTrue(
            shuffleDirsOnEmber(probe).contains(Integer.toString(SparkTestConf.shuffleId(onEmber))),
            "not on Ember: " + shuffleDirsOnEmber(probe));
      }
    }
  }

  /** Why a Spark application with {@code conf} failed to start. */
  private static Exception startFailure(SparkConf conf) {
    return assertThrows(Exception.class, () -> new JavaSparkContext(conf).close());
  }

  @Test
  void aRetryIntervalThatIsNoDurationStopsTheApplicationAndSaysSo() {
    Exception e =
        startFailure(
            conf(cluster.namenodeAddress().toString())
                .set(EmberShuffleConf.FALLBACK_RETRY_INTERVAL, "soon"));
    assertEquals(
        "spark.ember.shuffle.fallback.retryInterval is 'soon': give a duration such as 30s, or 0",
        e.getMessage());
  }

  @Test
  void policyNeverStopsTheApplicationWhenTheNameNodeCannotBeReached() throws Exception {
    Exception e =
        startFailure(
            conf("127.0.0.1:" + closedPort()).set(EmberShuffleConf.FALLBACK_POLICY, "never"));
    assertTrue(
        String.valueOf(e.getMessage()).startsWith("Ember shuffle: cannot create /spark-shuffle/"),
        e.toString());
  }

  @Test
  void aPolicyOfAnotherNameStopsTheApplicationAndSaysWhichAreKnown() {
    Exception e =
        startFailure(
            conf(cluster.namenodeAddress().toString())
                .set(EmberShuffleConf.FALLBACK_POLICY, "sometimes"));
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
