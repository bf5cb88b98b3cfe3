package io.ember.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TeraGen, TeraSort and TeraValidate on ember:// (in-process Ember cluster, Spark in local mode):
 * the sort through Ember's shuffle writes the same bytes as through Spark's, and TeraValidate
 * rejects output that is out of order, short or changed.
 */
class TeraSortTest {
  private static final long RECORDS = 30_000;
  @TempDir static Path work;
  private static BenchCluster cluster;
  private static Tera.Summary input;

  @BeforeAll
  static void start() throws Exception {
    cluster = new BenchCluster(null, "128m", "256m", work, 1, 1024, "local[2]");
    try (SparkSession spark = cluster.session("teragen", Shuffle.SPARK, true, "nvmf")) {
      input =
          Tera.generate(
              JavaSparkContext.fromSparkContext(spark.sparkContext()),
              cluster.uri("/in"),
              RECORDS,
              4,
              42);
    }
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  private static byte[] sortWith(Shuffle shuffle, String output) throws Exception {
    try (SparkSession spark = cluster.session("terasort", shuffle, true, "nvmf")) {
      JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      StageTimes stages = new StageTimes();
      sc.sc().addSparkListener(stages);
      Tera.sort(sc, cluster.uri("/in"), cluster.uri(output), 3);
      // TeraSort is one shuffle: a map stage that writes it and a reduce stage that reads it.
      Map<String, Double> seconds = stages.seconds(sc.sc());
      assertEquals(2, seconds.size(), seconds.toString());
      assertTrue(
          seconds.keySet().stream().anyMatch(k -> k.startsWith("map: ")), seconds.toString());
      assertTrue(
          seconds.keySet().stream().anyMatch(k -> k.startsWith("reduce: ")), seconds.toString());
      assertTrue(seconds.values().stream().allMatch(t -> t > 0), seconds.toString());
      Tera.Verdict v = Tera.validate(sc, cluster.uri(output), input);
      assertTrue(v.ok(), v.detail());
      return concat(sc, output);
    }
  }

  private static byte[] concat(JavaSparkContext sc, String dir) throws IOException {
    FileSystem fs = FileSystem.get(java.net.URI.create(cluster.uri("/")), sc.hadoopConfiguration());
    FileStatus[] parts =
        fs.listStatus(new org.apache.hadoop.fs.Path(dir), p -> p.getName().startsWith("part-"));
    Arrays.sort(parts);
    java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
    for (FileStatus part : parts) {
      try (InputStream in = fs.open(part.getPath())) {
        in.transferTo(all);
      }
    }
    return all.toByteArray();
  }

  @Test
  void emberShuffleSortsLikeSparksOwn() throws Exception {
    assertEquals(RECORDS, input.records());
    byte[] spark = sortWith(Shuffle.SPARK, "/out-spark");
    byte[] ember = sortWith(Shuffle.EMBER_DRAM, "/out-ember");
    assertEquals(RECORDS * TeraRecords.RECORD, ember.length);
    assertArrayEquals(spark, ember);
  }

  @Test
  void teraValidateRejectsBadOutput() throws Exception {
    try (SparkSession spark = cluster.session("teravalidate", Shuffle.SPARK, true, "dram")) {
      JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      Tera.sort(sc, cluster.uri("/in"), cluster.uri("/sorted"), 2);
      byte[] sorted = concat(sc, "/sorted");
      assertTrue(Tera.validate(sc, cluster.uri("/sorted"), input).ok());
      assertEquals(input, Tera.summarize(sc, cluster.uri("/in")));

      byte[] swapped = sorted.clone();
      System.arraycopy(sorted, 500 * 100, swapped, 501 * 100, 100);
      System.arraycopy(sorted, 501 * 100, swapped, 500 * 100, 100);
      Tera.Verdict v = validateBytes(sc, "/swapped", swapped, 1);
      assertFalse(v.ok());
      assertTrue(v.detail().contains("out of order"), v.detail());

      // Two files whose ranges overlap: each sorted, but not in order together.
      byte[] twoFiles = new byte[sorted.length];
      int half = (int) (RECORDS / 2) * 100;
      System.arraycopy(sorted, half, twoFiles, 0, sorted.length - half);
      System.arraycopy(sorted, 0, twoFiles, sorted.length - half, half);
      v = validateBytes(sc, "/rotated", twoFiles, 2);
      assertFalse(v.ok());
      assertTrue(v.detail().contains("starts below"), v.detail());

      v = validateBytes(sc, "/short", Arrays.copyOf(sorted, sorted.length - 100), 1);
      assertFalse(v.ok());
      assertTrue(v.detail().contains("records"), v.detail());

      byte[] changed = sorted.clone();
      changed[12_345 * 100 + 50] ^= 1; // a filler byte: the order stays right
      v = validateBytes(sc, "/changed", changed, 1);
      assertFalse(v.ok());
      assertTrue(v.detail().contains("checksum"), v.detail());
    }
  }

  private static Tera.Verdict validateBytes(JavaSparkContext sc, String dir, byte[] data, int files)
      throws IOException {
    FileSystem fs = FileSystem.get(java.net.URI.create(cluster.uri("/")), sc.hadoopConfiguration());
    int per = data.length / 100 / files * 100;
    for (int f = 0; f < files; f++) {
      int from = f * per;
      int to = f == files - 1 ? data.length : from + per;
      try (OutputStream out =
          fs.create(new org.apache.hadoop.fs.Path(dir, String.format("part-r-%05d", f)))) {
        out.write(data, from, to - from);
      }
    }
    return Tera.validate(sc, cluster.uri(dir), input);
  }
}
