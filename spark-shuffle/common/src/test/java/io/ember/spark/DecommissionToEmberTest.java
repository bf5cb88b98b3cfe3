package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.EmberException;
import io.ember.protocol.ErrorCode;
import io.ember.protocol.Messages.DirEntry;
import io.ember.protocol.NodeType;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.MapOutputTrackerMaster;
import org.apache.spark.ShuffleStatus;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.ExecutorDecommissionInfo;
import org.apache.spark.scheduler.cluster.CoarseGrainedSchedulerBackend;
import org.apache.spark.util.LongAccumulator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import scala.Option;
import scala.Tuple2;

/**
 * Spark's executor decommissioning with its fallback storage on {@code ember://}: a decommissioned
 * executor copies its shuffle files to Ember, and once every executor is gone, the executors Spark
 * starts next read that map output from Ember instead of running the map stage again.
 *
 * <p>Spark's fallback storage holds shuffle files only: cached RDD blocks migrate to live peer
 * executors, never to the fallback path (Spark 3.5 and 4.1 alike). Data that must outlive every
 * executor belongs in a checkpoint, which {@link SparkStorageOnEmberTest} keeps on Ember.
 */
class DecommissionToEmberTest {
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

  /**
   * {@code spark}: Spark's own shuffle manager. {@code ember-fallback}: Ember's manager with every
   * shuffle handed to Spark's own shuffle, whose files it must still let Spark migrate.
   */
  @ParameterizedTest(name = "shuffle: {0}")
  @ValueSource(strings = {"spark", "ember-fallback"})
  void aDecommissionedExecutorsShuffleFilesAreReadFromEmberOnceItIsGone(String shuffle)
      throws Exception {
    String ember = "ember://" + cluster.namenodeAddress();
    SparkConf conf =
        SparkTestConf.localCluster("decommission-" + shuffle, sparkHome, 2)
            .set("spark.dynamicAllocation.enabled", "true")
            .set("spark.dynamicAllocation.shuffleTracking.enabled", "true")
            .set("spark.dynamicAllocation.initialExecutors", "2")
            .set("spark.dynamicAllocation.minExecutors", "0")
            .set("spark.dynamicAllocation.maxExecutors", "2")
            .set("spark.decommission.enabled", "true")
            .set("spark.storage.decommission.enabled", "true")
            .set("spark.storage.decommission.shuffleBlocks.enabled", "true")
            // Peers refuse migrated shuffle files, so every file goes to the fallback storage even
            // while the other executor has not yet been told to decommission.
            .set("spark.storage.decommission.shuffleBlocks.maxDiskSize", "0")
            .set("spark.storage.decommission.fallbackStorage.path", ember + "/fallback/")
            // Spark deletes the application's copies when it stops: they would outlive it.
            .set("spark.storage.decommission.fallbackStorage.cleanUp", "true");
    if (shuffle.equals("ember-fallback")) {
      SparkTestConf.withEmberShuffle(conf, cluster.namenodeAddress().toString())
          .set(EmberShuffleConf.FALLBACK_POLICY, "always");
    }
    List<Integer> data = new ArrayList<>();
    Map<Integer, Long> expected = new TreeMap<>();
    for (int i = 0; i < 20_000; i++) {
      data.add(i);
      expected.merge(i % 101, 1L, Long::sum);
    }
    String appDir;
    try (JavaSparkContext sc = new JavaSparkContext(conf);
        EmberClient probe = cluster.newClient()) {
      SparkTestConf.awaitExecutors(sc, 2);
      LongAccumulator mapped = sc.sc().longAccumulator("mapped");
      JavaPairRDD<Integer, Long> counts =
          sc.parallelize(data, 4)
              .mapToPair(
                  x -> {
                    mapped.add(1);
                    return new Tuple2<>(x % 101, 1L);
                  })
              .reduceByKey(Long::sum, 3);
      assertEquals(expected, new TreeMap<>(counts.collectAsMap()));
      assertEquals(data.size(), mapped.value().longValue());

      CoarseGrainedSchedulerBackend backend =
          (CoarseGrainedSchedulerBackend) sc.sc().schedulerBackend();
      List<String> executors = executorIds(sc);
      for (String id : executors) {
        backend.decommissionExecutor(
            id, new ExecutorDecommissionInfo("test", Option.empty()), false, false);
      }
      // Four map tasks: each leaves an index and a data file, below <path>/<app id>/<shuffle id>.
      String migrated = "/fallback/" + sc.sc().applicationId() + "/0";
      SparkTestConf.await(
          () -> {
            List<String> files = files(probe, migrated);
            return count(files, ".index") == 4 && count(files, ".data") == 4;
          },
          () -> "shuffle files in Ember at " + migrated + ": " + files(probe, migrated));
      // A file is listed once made, before it is written; Spark moves a map output's location
      // to the fallback storage once both its files are copied.
      SparkTestConf.await(
          () -> mapOutputsInFallbackStorage(0) == 4,
          () ->
              "map outputs the driver places in the fallback storage: "
                  + mapOutputsInFallbackStorage(0));

      for (String id : executors) {
        backend.killExecutor(id);
      }
      SparkTestConf.await(
          () -> sc.sc().getExecutorIds().isEmpty(), () -> "executors gone: " + executorIds(sc));

      // Dynamic allocation starts new executors, which have none of the map output locally.
      assertEquals(expected, new TreeMap<>(counts.collectAsMap()));
      assertEquals(
          data.size(),
          mapped.value().longValue(),
          "the map stage ran again instead of reading Ember's copy");
      appDir = "/fallback/" + sc.sc().applicationId();
    }
    try (EmberClient probe = cluster.newClient()) {
      assertEquals(List.of(), files(probe, appDir), "copies left in Ember after the application");
    }
  }

  /** How many of a shuffle's map outputs the driver locates in Spark's fallback storage. */
  private static long mapOutputsInFallbackStorage(int shuffleId) {
    MapOutputTrackerMaster tracker = (MapOutputTrackerMaster) SparkEnv.get().mapOutputTracker();
    Option<ShuffleStatus> status = tracker.shuffleStatuses().get(shuffleId);
    if (status.isEmpty()) {
      return 0;
    }
    return Arrays.stream(status.get().mapStatuses())
        .filter(m -> m != null && m.location().executorId().equals("fallback"))
        .count();
  }

  private static List<String> executorIds(JavaSparkContext sc) {
    List<String> ids = new ArrayList<>();
    scala.collection.Iterator<String> it = sc.sc().getExecutorIds().iterator();
    while (it.hasNext()) {
      ids.add(it.next());
    }
    return ids;
  }

  private static long count(List<String> names, String suffix) {
    return names.stream().filter(n -> n.endsWith(suffix)).count();
  }

  /** The files below {@code dir}, at any depth (Spark spreads them over hashed folders). */
  private static List<String> files(EmberClient probe, String dir) {
    List<String> found = new ArrayList<>();
    try {
      for (DirEntry entry : probe.list(dir)) {
        if (entry.status().type() == NodeType.DIRECTORY) {
          found.addAll(files(probe, dir + "/" + entry.name()));
        } else {
          found.add(entry.name());
        }
      }
    } catch (EmberException e) {
      if (e.code() != ErrorCode.NOT_FOUND) {
        throw new UncheckedIOException(e);
      }
    }
    return found;
  }
}
