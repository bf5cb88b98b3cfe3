package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.Messages.DirEntry;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.deploy.history.FsHistoryProvider;
import org.apache.spark.deploy.history.LoadedAppUI;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.status.api.v1.ApplicationInfo;
import org.apache.spark.util.LongAccumulator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * What Spark keeps in a file system besides shuffle, kept on {@code ember://} through Ember's
 * Hadoop file system: RDD checkpoints, event logs read back by Spark's history provider, and a
 * Structured Streaming query's checkpoint.
 */
class SparkStorageOnEmberTest {
  private static MiniCluster cluster;
  private static String ember;

  /** What the streaming query's batches saw, as "batch id: line"; only one query runs at once. */
  private static final ConcurrentLinkedQueue<String> STREAMED = new ConcurrentLinkedQueue<>();

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().dramDatanodes(1).dramCapacity("256m").build();
    ember = "ember://" + cluster.namenodeAddress();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static SparkConf conf(String name) {
    return SparkTestConf.local(name)
        // FileContext (streaming checkpoints) finds a scheme's file system by this key only.
        .set("spark.hadoop.fs.AbstractFileSystem.ember.impl", "io.ember.hadoop.EmberFs");
  }

  @Test
  void aCheckpointedRddIsReadFromEmberInsteadOfRecomputedAndByTheNextApplication()
      throws Exception {
    List<Long> expected = IntStream.range(0, 10_000).mapToObj(i -> (long) i * i).toList();
    String checkpointFile;
    try (JavaSparkContext sc = new JavaSparkContext(conf("checkpoint-writer"))) {
      sc.setCheckpointDir(ember + "/checkpoints");
      LongAccumulator computed = sc.sc().longAccumulator("computed");
      JavaRDD<Long> squares =
          sc.parallelize(IntStream.range(0, 10_000).boxed().toList(), 4)
              .map(
                  i -> {
                    computed.add(1);
                    return (long) i * i;
                  });
      squares.checkpoint();
      assertEquals(expected, squares.collect());
      assertTrue(squares.isCheckpointed(), "not checkpointed");
      checkpointFile = squares.getCheckpointFile().get();
      assertTrue(checkpointFile.startsWith(ember + "/checkpoints/"), checkpointFile);

      long computedBefore = computed.value();
      assertEquals(expected, squares.collect());
      assertEquals(computedBefore, computed.value(), "recomputed rather than read from Ember");
    }
    try (EmberClient probe = cluster.newClient()) {
      String path = checkpointFile.substring(ember.length());
      Set<String> parts =
          probe.list(path).stream()
              .map(DirEntry::name)
              .filter(n -> n.startsWith("part-"))
              .collect(Collectors.toCollection(TreeSet::new));
      assertEquals(Set.of("part-00000", "part-00001", "part-00002", "part-00003"), parts);
    }
    // Another application reads the checkpoint back: what a driver does after it restarts.
    try (JavaSparkContext sc = new JavaSparkContext(conf("checkpoint-reader"))) {
      JavaRDD<Long> recovered =
          JavaRDD.fromRDD(
              sc.sc()
                  .checkpointFile(
                      checkpointFile, scala.reflect.ClassTag$.MODULE$.apply(Long.class)),
              scala.reflect.ClassTag$.MODULE$.apply(Long.class));
      assertEquals(expected, recovered.collect());
    }
  }

  @Test
  void eventLogsOnEmberAreReadBackBySparksHistoryProvider() throws Exception {
    String logDir = ember + "/spark-events";
    try (EmberClient probe = cluster.newClient()) {
      probe.createDirectory("/spark-events", true);
    }
    String appId;
    try (JavaSparkContext sc =
        new JavaSparkContext(
            conf("event-logged")
                .set("spark.eventLog.enabled", "true")
                .set("spark.eventLog.dir", logDir))) {
      appId = sc.sc().applicationId();
      assertEquals(3, sc.parallelize(List.of(1, 2, 3, 2), 2).map(x -> x * 2).distinct().count());
    }
    FsHistoryProvider history =
        new FsHistoryProvider(new SparkConf().set("spark.history.fs.logDirectory", logDir));
    try {
      // The provider parses logs on threads of its own: ask again until it has, or the deadline.
      long deadline = System.nanoTime() + 120_000_000_000L;
      List<String> listed = new ArrayList<>();
      ApplicationInfo found = null;
      while (found == null && System.nanoTime() - deadline < 0) {
        history.checkForLogs();
        listed.clear();
        scala.collection.Iterator<ApplicationInfo> apps = history.getListing();
        while (apps.hasNext()) {
          ApplicationInfo app = apps.next();
          listed.add(app.id());
          if (app.id().equals(appId) && app.attempts().head().completed()) {
            found = app;
          }
        }
        if (found == null) {
          Thread.sleep(100);
        }
      }
      assertTrue(found != null, appId + ", finished, among " + listed);
      assertEquals("event-logged", found.name());
      Option<LoadedAppUI> ui = history.getAppUI(appId, Option.empty());
      assertTrue(ui.isDefined(), "no UI for " + appId);
      // The replayed log has the application's one job.
      assertEquals(1, ui.get().ui().store().jobsList(null).size());
    } finally {
      history.stop();
    }
  }

  @Test
  void aStreamingQueryRestartedFromItsCheckpointOnEmberResumesWhereItStopped() throws Exception {
    String input = ember + "/stream/in";
    String checkpoint = ember + "/stream/checkpoint";
    try (EmberClient probe = cluster.newClient()) {
      probe.createDirectory("/stream/in", true);
      writeLines(probe, "/stream/in/a.txt", "a1", "a2", "a3");
      writeLines(probe, "/stream/in/b.txt", "b1", "b2");
      STREAMED.clear();
      runToTheEnd(input, checkpoint);
      assertEquals(Set.of("a1", "a2", "a3", "b1", "b2"), lines(STREAMED));
      assertTrue(!batches(STREAMED).isEmpty(), "no batch ran");
      long firstRunLastBatch = batches(STREAMED).last();

      writeLines(probe, "/stream/in/c.txt", "c1", "c2");
      List<String> firstRun = new ArrayList<>(STREAMED);
      STREAMED.clear();
      runToTheEnd(input, checkpoint);
      // Only the new file, in batches numbered after the first run's: nothing read twice.
      assertEquals(Set.of("c1", "c2"), lines(STREAMED), "first run saw " + firstRun);
      assertTrue(
          batches(STREAMED).first() > firstRunLastBatch,
          "batches " + batches(STREAMED) + " after " + firstRun);

      STREAMED.clear();
      runToTheEnd(input, checkpoint);
      assertEquals(Set.of(), lines(STREAMED), "a third run found nothing new");
      assertTrue(
          probe.list("/stream/checkpoint").stream().anyMatch(e -> e.name().equals("offsets")),
          "no offsets in the checkpoint");
    }
  }

  /** Runs the query, as a new application, over every file there is, then stops it. */
  private static void runToTheEnd(String input, String checkpoint) throws Exception {
    SparkSession spark = SparkSession.builder().config(conf("streaming")).getOrCreate();
    try {
      StreamingQuery query =
          spark
              .readStream()
              .text(input)
              .writeStream()
              .option("checkpointLocation", checkpoint)
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, id) -> {
                        for (Row row : batch.collectAsList()) {
                          STREAMED.add(id + ": " + row.getString(0));
                        }
                      })
              .start();
      query.awaitTermination();
    } finally {
      spark.stop();
    }
  }

  private static Set<String> lines(ConcurrentLinkedQueue<String> streamed) {
    return streamed.stream()
        .map(s -> s.substring(s.indexOf(": ") + 2))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  private static java.util.SortedSet<Long> batches(ConcurrentLinkedQueue<String> streamed) {
    return streamed.stream()
        .map(s -> Long.parseLong(s.substring(0, s.indexOf(':'))))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  private static void writeLines(EmberClient client, String path, String... lines)
      throws Exception {
    try (OutputStream out = client.create(path, CreateOptions.DEFAULT)) {
      out.write((String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8));
    }
  }
}
