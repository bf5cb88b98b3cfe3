package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * Jobs run twice, on Spark's own shuffle and on Ember's, in local mode against a mini cluster;
 * their results must be equal, the Ember run must have gone through Ember, and nothing of the
 * shuffle may stay in Ember afterwards.
 */
class EmberShuffleLocalTest {
  private static MiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().dramDatanodes(2).blockSize("1m").dramCapacity("256m").build();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static SparkConf conf(boolean ember, boolean kryo) {
    SparkConf c = SparkTestConf.local("ember-shuffle-test");
    if (kryo) {
      c.set("spark.serializer", "org.apache.spark.serializer.KryoSerializer");
    }
    if (ember) {
      SparkTestConf.withEmberShuffle(c, cluster.namenodeAddress().toString());
    }
    return c;
  }

  private static List<String> words(int n, long seed) {
    Random r = new Random(seed);
    List<String> w = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      // A skewed key: a third of all records share one key.
      w.add(i % 3 == 0 ? "hot" : "w" + r.nextInt(2000));
    }
    return w;
  }

  /** The jobs, each reduced to a string that is equal when the results are. */
  private static Map<String, Function<JavaSparkContext, String>> jobs() {
    Map<String, Function<JavaSparkContext, String>> jobs = new LinkedHashMap<>();
    jobs.put(
        "reduceByKey",
        sc ->
            sc.parallelize(words(30_000, 1), 6)
                .mapToPair(w -> new Tuple2<>(w, 1))
                .reduceByKey(Integer::sum, 8)
                .sortByKey()
                .collect()
                .toString());
    jobs.put(
        "groupByKey",
        sc ->
            sc.parallelize(words(20_000, 2), 5)
                .mapToPair(w -> new Tuple2<>(w.length(), w))
                .groupByKey(4)
                .mapValues(
                    vs -> {
                      int n = 0;
                      for (String ignored : vs) {
                        n++;
                      }
                      return n;
                    })
                .sortByKey()
                .collect()
                .toString());
    jobs.put(
        "sortByKey",
        sc -> {
          Random r = new Random(3);
          List<Integer> xs = new ArrayList<>();
          for (int i = 0; i < 25_000; i++) {
            xs.add(r.nextInt());
          }
          return sc.parallelize(xs, 7)
              .mapToPair(x -> new Tuple2<>(x, x % 7))
              .sortByKey(true, 9)
              .keys()
              .collect()
              .toString();
        });
    jobs.put(
        "join",
        sc -> {
          JavaPairRDD<String, Integer> a =
              sc.parallelize(words(8000, 4), 4)
                  .mapToPair(w -> new Tuple2<>(w, w.length()))
                  .reduceByKey(Integer::max);
          JavaPairRDD<String, String> b =
              sc.parallelize(words(6000, 5), 3)
                  .mapToPair(w -> new Tuple2<>(w, w.toUpperCase(java.util.Locale.ROOT)))
                  .distinct()
                  .mapToPair(t -> t);
          return a.join(b, 6).sortByKey().collect().toString();
        });
    jobs.put(
        "emptyPartitions",
        sc ->
            sc.parallelize(List.of("a", "b", "a"), 16)
                .mapToPair(w -> new Tuple2<>(w, 1))
                .reduceByKey(Integer::sum, 32)
                .sortByKey()
                .collect()
                .toString());
    jobs.put(
        "repartition300",
        sc -> {
          JavaRDD<String> w = sc.parallelize(words(10_000, 6), 4).repartition(300);
          return w.map(String::length).reduce(Integer::sum)
              + "/"
              + w.count()
              + "/"
              + w.glom().map(List::size).collect().stream().filter(s -> s > 0).count();
        });
    return jobs;
  }

  private static Map<String, String> run(SparkConf conf, EmberClient probe) throws Exception {
    Map<String, String> results = new LinkedHashMap<>();
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      for (Map.Entry<String, Function<JavaSparkContext, String>> job : jobs().entrySet()) {
        results.put(job.getKey(), job.getValue().apply(sc));
      }
      if (probe != null) {
        // The map output went to Ember: the application's directory holds shuffle files. The
        // context cleaner may remove the jobs' shuffles at any time, so one is held until the
        // probe has counted it.
        JavaPairRDD<Integer, Integer> held =
            sc.parallelize(List.of(1, 2, 3, 1), 2)
                .mapToPair(x -> new Tuple2<>(x, x))
                .groupByKey(2)
                .mapValues(vs -> vs.iterator().next());
        try {
          assertEquals(3L, held.count());
          List<io.ember.protocol.Messages.DirEntry> apps = probe.list("/spark-shuffle");
          assertEquals(1, apps.size(), "one application directory");
          String app = "/spark-shuffle/" + apps.get(0).name();
          long files = 0;
          for (io.ember.protocol.Messages.DirEntry shuffle : probe.list(app)) {
            files += SparkTestConf.listOrNone(probe, app + "/" + shuffle.name()).size();
          }
          assertTrue(files > 0, "no map output in Ember");
        } finally {
          Reference.reachabilityFence(held);
        }
      }
    }
    return results;
  }

  @Test
  void corruptMapOutputFailsTheFetchAndSparkRecomputesIt() throws Exception {
    // Flip one byte of partition data: same name, same length, other bytes.
    replacingAMapOutputFailsTheFetchAndSparkRecomputesIt(
        bytes -> {
          bytes[bytes.length / 2] ^= 0x5a;
          return bytes;
        });
  }

  @Test
  void truncatedMapOutputFailsTheFetchAndSparkRecomputesIt() throws Exception {
    // A file cut short: its last bytes, where the index's size should be, are partition data.
    replacingAMapOutputFailsTheFetchAndSparkRecomputesIt(
        bytes -> java.util.Arrays.copyOf(bytes, bytes.length / 2));
  }

  private void replacingAMapOutputFailsTheFetchAndSparkRecomputesIt(
      java.util.function.UnaryOperator<byte[]> damage) throws Exception {
    // Uncompressed shuffle: no codec checksum, so only Ember's own checks stand between damaged
    // bytes and the records.
    try (EmberClient probe = cluster.newClient();
        JavaSparkContext sc =
            new JavaSparkContext(conf(true, false).set("spark.shuffle.compress", "false"))) {
      JavaPairRDD<String, Integer> counts =
          sc.parallelize(words(20_000, 9), 4)
              .mapToPair(w -> new Tuple2<>(w, 1))
              .reduceByKey(Integer::sum, 5);
      String expected = counts.sortByKey().collect().toString();
      String shuffleDir =
          "/spark-shuffle/"
              + probe.list("/spark-shuffle").get(0).name()
              + "/"
              + SparkTestConf.shuffleId(counts);
      String victim = null;
      for (io.ember.protocol.Messages.DirEntry f : probe.list(shuffleDir)) {
        if (f.name().endsWith(".data") && f.status().length() > 1000) {
          victim = shuffleDir + "/" + f.name();
          break;
        }
      }
      byte[] bytes;
      try (java.io.InputStream in = probe.open(victim)) {
        bytes = in.readAllBytes();
      }
      probe.delete(victim, false);
      try (java.io.OutputStream out = probe.create(victim, io.ember.client.CreateOptions.DEFAULT)) {
        out.write(damage.apply(bytes));
      }
      int before = probe.list(shuffleDir).size();
      // The second action reuses the registered map output, reads the damaged file, fails
      // the fetch, and Spark re-runs the map task: the result is still right.
      assertEquals(expected, counts.sortByKey().collect().toString());
      assertTrue(probe.list(shuffleDir).size() > before, "no map task was re-run");
    }
  }

  @Test
  @org.junit.jupiter.api.Timeout(180)
  void dataNodeLostAfterTheMapStageFailsTheFetchAndSparkRecomputes() throws Exception {
    // A cluster of its own, with small blocks so every map output spans both data nodes.
    try (MiniCluster two =
            MiniCluster.builder().dramDatanodes(2).blockSize("4k").dramCapacity("64m").build();
        EmberClient probe = two.newClient();
        JavaSparkContext sc =
            new JavaSparkContext(
                conf(true, false)
                    .set(EmberShuffleConf.NAMENODE, two.namenodeAddress().toString()))) {
      JavaPairRDD<String, Integer> counts =
          sc.parallelize(words(40_000, 4), 6)
              .mapToPair(w -> new Tuple2<>(w, 1))
              .reduceByKey(Integer::sum, 5);
      String expected = counts.sortByKey().collect().toString();
      // Only the counts' own shuffle: the sorts' shuffles come and go with the context cleaner.
      int filesBefore = SparkTestConf.shuffleFiles(probe, counts).size();
      two.killDatanode(0);
      // Far longer than the loss takes even on a starved machine: the test waits for the event.
      long deadline = System.nanoTime() + 120_000_000_000L;
      while (probe.df().stream().noneMatch(u -> u.lostNodes() == 1)) {
        assertTrue(System.nanoTime() - deadline < 0, "data node not marked lost");
        Thread.sleep(50);
      }
      // The registered map output is half gone: the reduce stage's reads fail as fetch
      // failures, Spark re-runs the map tasks (now onto the survivor) and the result holds.
      assertEquals(expected, counts.sortByKey().collect().toString());
      int filesAfter = SparkTestConf.shuffleFiles(probe, counts).size();
      assertTrue(filesAfter > filesBefore, "no map task was re-run");
    }
  }

  /** A gauge of the metrics plugin, as Spark's JMX sink publishes it. */
  private static long pluginGauge(String name) throws Exception {
    MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
    List<ObjectName> found =
        jmx.queryNames(new ObjectName("metrics:*"), null).stream()
            .filter(
                n ->
                    n.getKeyProperty("name")
                        // In local mode without the application and executor ids in front.
                        .endsWith("plugin." + EmberMetricsPlugin.class.getName() + "." + name))
            .toList();
    assertEquals(
        1,
        found.size(),
        () -> "MBeans for " + name + ": " + found + " among " + jmx.queryNames(null, null));
    return ((Number) jmx.getAttribute(found.get(0), "Value")).longValue();
  }

  @Test
  void theMetricsPluginReportsEachExecutorsEmberTrafficToSparksSinks() throws Exception {
    SparkConf c =
        conf(true, false)
            .set("spark.plugins", EmberMetricsPlugin.class.getName())
            .set("spark.metrics.conf.*.sink.jmx.class", "org.apache.spark.metrics.sink.JmxSink");
    try (JavaSparkContext sc = new JavaSparkContext(c)) {
      AtomicLong sparkWrote = new AtomicLong();
      AtomicLong sparkRead = new AtomicLong();
      SparkTestConf.onTaskEnd(
          sc,
          m -> {
            sparkWrote.addAndGet(m.shuffleWriteMetrics().bytesWritten());
            sparkRead.addAndGet(m.shuffleReadMetrics().totalBytesRead());
          });
      // Connects the client, so the gauges count from here.
      sc.parallelize(List.of(1, 2), 2).mapToPair(i -> new Tuple2<>(i, i)).groupByKey().count();
      sc.sc().listenerBus().waitUntilEmpty();
      long wroteBefore = pluginGauge("bytesWritten");
      long readBefore = pluginGauge("bytesRead");
      long writesBefore = pluginGauge("blockWrites");
      sparkWrote.set(0);
      sparkRead.set(0);
      sc.parallelize(words(20_000, 6), 4)
          .mapToPair(w -> new Tuple2<>(w, 1))
          .reduceByKey(Integer::sum, 3)
          .count();
      sc.sc().listenerBus().waitUntilEmpty();
      long wrote = pluginGauge("bytesWritten") - wroteBefore;
      long read = pluginGauge("bytesRead") - readBefore;
      assertTrue(sparkWrote.get() > 0 && sparkRead.get() > 0, "the job shuffled nothing");
      // Every shuffle byte Spark counted went through Ember's client, and the gauges see it.
      assertTrue(wrote >= sparkWrote.get(), wrote + " bytes to Ember, Spark wrote " + sparkWrote);
      assertTrue(read >= sparkRead.get(), read + " bytes from Ember, Spark read " + sparkRead);
      assertTrue(pluginGauge("blockWrites") > writesBefore);
      // A gauge is the client's own counter, read when Spark samples it.
      assertEquals(
          EmberShuffleConf.current().metrics().bytesWritten(), pluginGauge("bytesWritten"));
      for (String gauge : EmberMetricsPlugin.GAUGES.keySet()) {
        assertTrue(pluginGauge(gauge) >= 0, gauge);
      }
    }
  }

  /**
   * The reader's fetch-ahead window at its edges: a window smaller than any run (one run in flight
   * at a time, each larger than the window) and reduce tasks of many more runs than may be in
   * flight at once (the run count, not the bytes, limits the window).
   */
  @Test
  void readsAtTheFetchWindowsEdgesGiveSparksResults() throws Exception {
    Function<JavaSparkContext, String> manyMapOutputs =
        sc ->
            sc.parallelize(words(40_000, 7), 150)
                .mapToPair(w -> new Tuple2<>(w, 1))
                .reduceByKey(Integer::sum, 3)
                .sortByKey()
                .collect()
                .toString();
    String expected;
    try (JavaSparkContext sc = new JavaSparkContext(conf(false, false))) {
      expected = manyMapOutputs.apply(sc);
    }
    for (String window : new String[] {"1k", "48m"}) {
      try (JavaSparkContext sc =
          new JavaSparkContext(conf(true, false).set("spark.reducer.maxSizeInFlight", window))) {
        AtomicLong mostBlocksRead = new AtomicLong();
        SparkTestConf.onTaskEnd(
            sc,
            m ->
                mostBlocksRead.accumulateAndGet(
                    m.shuffleReadMetrics().remoteBlocksFetched(), Math::max));
        assertEquals(expected, manyMapOutputs.apply(sc), "window " + window);
        sc.sc().listenerBus().waitUntilEmpty();
        assertTrue(
            mostBlocksRead.get() > 64,
            "a reduce task read only "
                + mostBlocksRead.get()
                + " map outputs, not more than may be in flight");
      }
    }
  }

  @Test
  void jobsGiveSparksOwnResultsAndLeaveNothingBehind() throws Exception {
    for (boolean kryo : new boolean[] {false, true}) {
      Map<String, String> expected = run(conf(false, kryo), null);
      try (EmberClient probe = cluster.newClient()) {
        Map<String, String> got = run(conf(true, kryo), probe);
        for (String job : expected.keySet()) {
          assertEquals(expected.get(job), got.get(job), job + (kryo ? " (kryo)" : ""));
        }
        assertFalse(expected.get("reduceByKey").isEmpty());
        assertEquals(
            List.of(),
            probe.list("/spark-shuffle"),
            "shuffle files left in Ember after the application");
      }
    }
  }
}
