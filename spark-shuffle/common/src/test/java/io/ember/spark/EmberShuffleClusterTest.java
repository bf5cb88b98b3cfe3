package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.ErrorCode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import scala.Tuple2;

/**
 * Spark in local-cluster mode (two executor JVMs) on Ember's shuffle: an executor killed while the
 * reduce stage runs takes nothing with it, so the job finishes without re-running any map task,
 * with the same result as Spark's own shuffle.
 */
class EmberShuffleClusterTest {
  private static MiniCluster cluster;
  private static Path sparkHome;

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().dramDatanodes(1).dramCapacity("256m").build();
    sparkHome = SparkTestConf.prepareLocalClusters();
  }

  @AfterAll
  static void stop() {
    SparkTestConf.forgetLocalClusters();
    cluster.close();
  }

  private static SparkConf conf(boolean ember) {
    SparkConf c = SparkTestConf.localCluster("ember-shuffle-cluster-test", sparkHome, 2);
    if (ember) {
      SparkTestConf.withEmberShuffle(c, cluster.namenodeAddress().toString());
    }
    return c;
  }

  /** What one run did: its result, and how often each stage was attempted. */
  private record Run(String result, int mapStageAttempts, int reduceTasksStarted) {}

  /**
   * Blocks a task until {@code path} exists in Ember (a marker the driver creates), or until {@link
   * SparkTestConf#PATIENCE_NANOS} passed, after which the test's own checks fail it. Runs in an
   * executor: tasks there cannot see the driver's memory, but reach the same name node.
   */
  private static void awaitMarker(String namenode, String path) throws Exception {
    long deadline = System.nanoTime() + SparkTestConf.PATIENCE_NANOS;
    try (EmberClient c =
        EmberClient.connect(EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode))) {
      while (System.nanoTime() - deadline < 0) {
        try {
          c.lookup(path);
          return;
        } catch (EmberException e) {
          if (e.code() != ErrorCode.NOT_FOUND) {
            throw e;
          }
        }
        Thread.sleep(50);
      }
    }
  }

  /**
   * Runs a reduceByKey and kills one executor as soon as a reduce task has started. Every reduce
   * task waits until the driver has seen that executor go, so the reduce stage is still running
   * when Spark learns of the loss, however slow the machine.
   */
  private static Run runKillingAnExecutor(boolean ember) throws Exception {
    List<Integer> data = new ArrayList<>();
    for (int i = 0; i < 40_000; i++) {
      data.add(i);
    }
    String namenode = cluster.namenodeAddress().toString();
    String marker = "/executor-gone-" + ember + "-" + System.nanoTime();
    try (JavaSparkContext sc = new JavaSparkContext(conf(ember));
        EmberClient driver = cluster.newClient()) {
      // Both executors, so map output lands on both.
      SparkTestConf.awaitExecutors(sc, 2);
      Map<Integer, AtomicInteger> attempts = new ConcurrentHashMap<>();
      AtomicInteger reduceStarts = new AtomicInteger();
      java.util.concurrent.atomic.AtomicBoolean killed =
          new java.util.concurrent.atomic.AtomicBoolean();
      AtomicReference<String> victim = new AtomicReference<>();
      AtomicReference<Exception> markerFailure = new AtomicReference<>();
      int[] mapStage = {-1};
      sc.sc()
          .addSparkListener(
              new SparkListener() {
                @Override
                public void onStageSubmitted(
                    org.apache.spark.scheduler.SparkListenerStageSubmitted e) {
                  attempts
                      .computeIfAbsent(e.stageInfo().stageId(), k -> new AtomicInteger())
                      .incrementAndGet();
                  if (mapStage[0] < 0) {
                    mapStage[0] = e.stageInfo().stageId();
                  }
                }

                @Override
                public void onTaskStart(org.apache.spark.scheduler.SparkListenerTaskStart e) {
                  if (e.stageId() != mapStage[0]) {
                    reduceStarts.incrementAndGet();
                    if (killed.compareAndSet(false, true)) {
                      String id = e.taskInfo().executorId();
                      victim.set(id);
                      new Thread(() -> sc.sc().killExecutor(id)).start();
                    }
                  }
                }

                @Override
                public void onExecutorRemoved(
                    org.apache.spark.scheduler.SparkListenerExecutorRemoved e) {
                  if (e.executorId().equals(victim.get())) {
                    try {
                      driver.create(marker, CreateOptions.DEFAULT).close();
                    } catch (Exception failure) {
                      markerFailure.set(failure);
                    }
                  }
                }
              });
      String result =
          sc.parallelize(data, 8)
              .mapToPair(x -> new Tuple2<>(x % 997, 1L))
              .reduceByKey(Long::sum, 6)
              .mapPartitionsWithIndex(
                  (index, it) -> {
                    awaitMarker(namenode, marker);
                    return it;
                  },
                  true)
              .collect()
              .toString();
      assertTrue(killed.get(), "no executor was killed");
      assertNull(markerFailure.get(), "the driver could not mark the executor gone");
      driver.lookup(marker); // NOT_FOUND: the driver never saw the killed executor go
      return new Run(result, attempts.get(mapStage[0]).get(), reduceStarts.get());
    }
  }

  /** Passes on {@code limit} elements, then fails the task. */
  private static final class FailingAfter<T> implements java.util.Iterator<T> {
    private final java.util.Iterator<T> in;
    private final int limit;
    private int n;

    FailingAfter(java.util.Iterator<T> in, int limit) {
      this.in = in;
      this.limit = limit;
    }

    @Override
    public boolean hasNext() {
      return in.hasNext();
    }

    @Override
    public T next() {
      if (++n > limit) {
        throw new IllegalStateException("injected map task failure");
      }
      return in.next();
    }
  }

  /**
   * With map-side combine, Spark's sort writer makes the map output writer after consuming its
   * input, so the failure never reaches Ember. Without, the bypass-merge writer makes it first,
   * Ember creates the file at once, and the failure must abort (delete) it.
   */
  @ParameterizedTest(name = "map-side combine: {0}")
  @ValueSource(booleans = {true, false})
  void retriedMapTaskLeavesOnlyTheCommittedAttemptsOutput(boolean combine) throws Exception {
    // (Speculative copies cannot be tested here: Spark never runs one on the original's host,
    // and local-cluster executors share one host. Attempts have distinct ids either way.)
    SparkConf c = conf(true).set("spark.task.maxFailures", "4");
    List<Integer> data = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      data.add(i);
    }
    try (JavaSparkContext sc = new JavaSparkContext(c);
        io.ember.client.EmberClient probe = cluster.newClient()) {
      org.apache.spark.api.java.JavaPairRDD<Integer, Long> pairs =
          sc.parallelize(data, 4)
              .mapPartitionsWithIndex(
                  (index, it) -> {
                    List<Integer> all = new ArrayList<>();
                    it.forEachRemaining(all::add);
                    return all.iterator();
                  },
                  true)
              .mapToPair(x -> new Tuple2<>(x % 101, 1L))
              .mapPartitionsWithIndex(
                  (index, it) -> {
                    // The first attempt of map task 0 fails part way through its input.
                    if (index == 0 && org.apache.spark.TaskContext.get().attemptNumber() == 0) {
                      return new FailingAfter<>(it, 1000);
                    }
                    return it;
                  },
                  true)
              .mapToPair(t -> t);
      org.apache.spark.api.java.JavaPairRDD<Integer, Long> counts =
          combine
              ? pairs.reduceByKey(Long::sum, 4)
              : pairs
                  .groupByKey(4)
                  .mapValues(
                      ones -> {
                        long n = 0;
                        for (long one : ones) {
                          n += one;
                        }
                        return n;
                      });
      java.util.Map<Integer, Long> expected = new java.util.TreeMap<>();
      for (int x : data) {
        expected.merge(x % 101, 1L, Long::sum);
      }
      assertEquals(expected, new java.util.TreeMap<>(counts.collectAsMap()));
      // Four map tasks, four outputs: only committed attempts leave output.
      assertEquals(
          4,
          SparkTestConf.shuffleFiles(probe, counts).stream()
              .filter(e -> e.name().endsWith(".data"))
              .count());
    }
  }

  @Test
  void dynamicAllocationReleasesIdleExecutorsAndTheirMapOutputStaysReadable() throws Exception {
    // No external shuffle service and no shuffle tracking: Spark allows dynamic allocation only
    // because Ember's ShuffleDataIO says its storage is reliable.
    SparkConf c =
        conf(true)
            .set("spark.dynamicAllocation.enabled", "true")
            .set("spark.dynamicAllocation.shuffleTracking.enabled", "false")
            .set("spark.shuffle.service.enabled", "false")
            .set("spark.dynamicAllocation.minExecutors", "0")
            .set("spark.dynamicAllocation.initialExecutors", "2")
            .set("spark.dynamicAllocation.maxExecutors", "2")
            .set("spark.dynamicAllocation.executorIdleTimeout", "1s");
    List<Integer> data = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) {
      data.add(i);
    }
    try (JavaSparkContext sc = new JavaSparkContext(c)) {
      Map<Integer, AtomicInteger> attempts = new ConcurrentHashMap<>();
      AtomicInteger removed = new AtomicInteger();
      sc.sc()
          .addSparkListener(
              new SparkListener() {
                @Override
                public void onStageSubmitted(
                    org.apache.spark.scheduler.SparkListenerStageSubmitted e) {
                  attempts
                      .computeIfAbsent(e.stageInfo().stageId(), k -> new AtomicInteger())
                      .incrementAndGet();
                }

                @Override
                public void onExecutorRemoved(
                    org.apache.spark.scheduler.SparkListenerExecutorRemoved e) {
                  removed.incrementAndGet();
                }
              });
      org.apache.spark.api.java.JavaPairRDD<Integer, Long> counts =
          sc.parallelize(data, 6)
              .mapToPair(x -> new Tuple2<>(x % 101, 1L))
              .reduceByKey(Long::sum, 4);
      String first = counts.sortByKey().collect().toString();
      // Idle executors go away; their map output stays in Ember.
      SparkTestConf.await(
          () -> removed.get() >= 2, () -> "idle executors were not released: " + removed.get());
      int stagesBefore = attempts.size();
      String second = counts.sortByKey().collect().toString();
      assertEquals(first, second);
      // The second job started new executors and skipped the map stage: every stage it ran was
      // new, and none was an attempt again of an earlier one.
      assertTrue(
          attempts.entrySet().stream().allMatch(e -> e.getValue().get() == 1),
          "a stage ran again: " + attempts);
      assertTrue(attempts.size() > stagesBefore);
    }
  }

  @Test
  void executorLostDuringReduceDoesNotRerunTheMapStage() throws Exception {
    Run spark = runKillingAnExecutor(false);
    Run ember = runKillingAnExecutor(true);
    assertEquals(spark.result(), ember.result());
    // Spark's own shuffle lost the map output on the killed executor and ran the map stage
    // again; Ember's shuffle kept it.
    assertTrue(spark.mapStageAttempts() > 1, "Spark's own shuffle re-ran no map stage: " + spark);
    assertEquals(1, ember.mapStageAttempts(), "Ember's shuffle re-ran the map stage: " + ember);
  }
}
