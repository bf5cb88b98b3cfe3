package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.EmberClient;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.DirEntry;
import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.spark.Dependency;
import org.apache.spark.ShuffleDependency;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDDLike;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.rdd.RDD;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

/** The Spark settings every test here starts from, and what the tests wait with. */
final class SparkTestConf {
  /**
   * How long a test waits for Spark to do something (start or release executors, notice one died,
   * migrate blocks): far longer than it takes on a starved machine. Tests wait for the event.
   */
  static final long PATIENCE_NANOS = 150_000_000_000L;

  private SparkTestConf() {}

  /** Waits until {@code condition} holds, or fails saying {@code what} after the patience. */
  static void await(BooleanSupplier condition, Supplier<String> what) throws InterruptedException {
    long deadline = System.nanoTime() + PATIENCE_NANOS;
    while (!condition.getAsBoolean() && System.nanoTime() - deadline < 0) {
      Thread.sleep(50);
    }
    assertTrue(condition.getAsBoolean(), what);
  }

  /** Waits until {@code sc} has {@code n} executors. */
  static void awaitExecutors(JavaSparkContext sc, int n) throws InterruptedException {
    await(
        () -> sc.sc().getExecutorIds().size() == n,
        () -> "executors up: " + sc.sc().getExecutorIds().size() + " of " + n);
  }

  /** Hands each finished task's metrics to {@code onMetrics}, on Spark's listener thread. */
  static void onTaskEnd(JavaSparkContext sc, Consumer<TaskMetrics> onMetrics) {
    sc.sc()
        .addSparkListener(
            new SparkListener() {
              @Override
              public void onTaskEnd(SparkListenerTaskEnd end) {
                if (end.taskMetrics() != null) {
                  onMetrics.accept(end.taskMetrics());
                }
              }
            });
  }

  /**
   * Makes a Spark home that local-cluster mode accepts and points Spark's workers at it. Spark's
   * launcher learns the Scala version from launcher/target/scala-X.Y and adds jars/ (empty here);
   * executors get this JVM's class path through {@link #localCluster}. Undo with {@link
   * #forgetLocalClusters}.
   */
  static Path prepareLocalClusters() throws IOException {
    Path sparkHome = Files.createTempDirectory("spark-home");
    Files.createDirectories(sparkHome.resolve("launcher/target/scala-" + BuiltFor.SCALA));
    Files.createDirectories(sparkHome.resolve("jars"));
    // Spark's workers read their home from these JVM properties, as in Spark's own tests.
    System.setProperty("spark.testing", "true");
    System.setProperty("spark.test.home", sparkHome.toString());
    return sparkHome;
  }

  static void forgetLocalClusters() {
    System.clearProperty("spark.testing");
    System.clearProperty("spark.test.home");
  }

  /**
   * Spark in local-cluster mode: {@code executors} executor JVMs of one core each, started from
   * {@code sparkHome} (made by {@link #prepareLocalClusters}) with this JVM's class path.
   */
  static SparkConf localCluster(String appName, Path sparkHome, int executors) {
    String cp = System.getProperty("java.class.path");
    return local(appName)
        .setMaster("local-cluster[" + executors + ",1,1024]")
        .set("spark.home", sparkHome.toString())
        .set("spark.test.home", sparkHome.toString())
        .set("spark.executor.extraClassPath", cp)
        .set("spark.driver.extraClassPath", cp)
        .set(
            "spark.executor.extraJavaOptions",
            System.getProperty("ember.test.sparkModuleOptions", ""));
  }

  /** Spark on two local threads, bound to loopback, without its web UI. */
  static SparkConf local(String appName) {
    return new SparkConf()
        .setMaster("local[2]")
        .setAppName(appName)
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1");
  }

  /**
   * The entries of {@code dir}, or none once it is gone: Spark's context cleaner unregisters a
   * shuffle whose RDD was collected at any time, and the plugin then removes its directory.
   */
  static List<DirEntry> listOrNone(EmberClient probe, String dir) throws IOException {
    try {
      return probe.list(dir);
    } catch (EmberException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw e;
      }
      return List.of();
    }
  }

  /**
   * The id of the shuffle {@code rdd} reads, nearest first along its lineage: the name of that
   * shuffle's directory in Ember.
   */
  static int shuffleId(JavaRDDLike<?, ?> rdd) {
    RDD<?> at = rdd.rdd();
    while (true) {
      Dependency<?> d = at.dependencies().head();
      if (d instanceof ShuffleDependency<?, ?, ?> shuffle) {
        return shuffle.shuffleId();
      }
      at = d.rdd();
    }
  }

  /**
   * The files Ember holds for the shuffle {@code rdd} reads, in the one application directory
   * there. {@code rdd} stays reachable until they are listed: the context cleaner removes the
   * shuffles of collected RDDs.
   */
  static List<DirEntry> shuffleFiles(EmberClient probe, JavaRDDLike<?, ?> rdd) throws IOException {
    try {
      List<DirEntry> apps = probe.list("/spark-shuffle");
      assertEquals(1, apps.size(), "one application directory: " + apps);
      return probe.list("/spark-shuffle/" + apps.get(0).name() + "/" + shuffleId(rdd));
    } finally {
      Reference.reachabilityFence(rdd);
    }
  }

  /** {@code conf} with Ember's shuffle, against the name node at {@code namenode}. */
  static SparkConf withEmberShuffle(SparkConf conf, String namenode) {
    return conf.set("spark.shuffle.manager", EmberShuffleManager.class.getName())
        .set(EmberShuffleManager.PLUGIN_KEY, EmberShuffleDataIO.class.getName())
        .set(EmberShuffleConf.NAMENODE, namenode);
  }

  /**
   * Runs a job on two executor JVMs of a local cluster that shuffles 20,000 numbers through Ember
   * at {@code namenode}, with {@code emberSettings} as {@code spark.ember.conf.*} and no fallback
   * to Spark's own shuffle, and checks every count.
   */
  static void countThroughEmberOnly(
      String appName, String namenode, java.util.Map<String, String> emberSettings)
      throws IOException {
    Path sparkHome = prepareLocalClusters();
    try {
      SparkConf c = withEmberShuffle(localCluster(appName, sparkHome, 2), namenode);
      c.set(EmberShuffleConf.FALLBACK_POLICY, "never");
      emberSettings.forEach((k, v) -> c.set("spark.ember.conf." + k, v));
      java.util.List<Integer> data = new java.util.ArrayList<>();
      for (int i = 0; i < 20_000; i++) {
        data.add(i);
      }
      try (org.apache.spark.api.java.JavaSparkContext sc =
          new org.apache.spark.api.java.JavaSparkContext(c)) {
        java.util.Map<Integer, Integer> counts =
            sc.parallelize(data, 4)
                .mapToPair(i -> new scala.Tuple2<>(i % 100, 1))
                .reduceByKey(Integer::sum, 3)
                .collectAsMap();
        org.junit.jupiter.api.Assertions.assertEquals(100, counts.size());
        for (int k = 0; k < 100; k++) {
          org.junit.jupiter.api.Assertions.assertEquals(200, counts.get(k), "count of key " + k);
        }
      }
    } finally {
      forgetLocalClusters();
    }
  }

  /**
   * Starts an executor of {@code executorConf} with what the driver {@code handed} it, and writes
   * map 7 of shuffle 0 (two partitions of 1000 and 1001 bytes) through it, as a task would.
   */
  static void writeOneMapOutput(
      SparkConf executorConf, String appId, java.util.Map<String, String> handed)
      throws IOException {
    var executor = new EmberShuffleDataIO(executorConf).executor();
    executor.initializeExecutor(appId, "1", handed);
    var writer = executor.createMapOutputWriter(0, 7L, 2);
    for (int p = 0; p < 2; p++) {
      try (java.io.OutputStream out = writer.getPartitionWriter(p).openStream()) {
        out.write(new byte[1000 + p]);
      }
    }
    writer.commitAllPartitions(new long[0]);
  }
}
