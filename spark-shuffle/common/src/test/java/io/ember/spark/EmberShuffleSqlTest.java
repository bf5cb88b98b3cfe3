package io.ember.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ember.minicluster.MiniCluster;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A DataFrame join and aggregation with adaptive query execution on, tuned so AQE coalesces small
 * partitions (it needs real partition sizes from the map output) and splits a skewed partition
 * (reducers then read ranges of map indexes). Results must equal Spark's own shuffle.
 */
class EmberShuffleSqlTest {
  private static MiniCluster cluster;

  @BeforeAll
  static void start() throws Exception {
    cluster = MiniCluster.builder().dramDatanodes(1).dramCapacity("256m").build();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  /** The final adaptive plan of the last query, for checking what AQE did. */
  private static String lastPlan;

  private static List<Row> query(boolean ember) {
    SparkConf c =
        SparkTestConf.local("ember-sql-test")
            .set("spark.sql.adaptive.enabled", "true")
            .set("spark.sql.autoBroadcastJoinThreshold", "-1")
            .set("spark.sql.shuffle.partitions", "40")
            .set("spark.sql.adaptive.coalescePartitions.enabled", "true")
            .set("spark.sql.adaptive.advisoryPartitionSizeInBytes", "4k")
            .set("spark.sql.adaptive.skewJoin.enabled", "true")
            .set("spark.sql.adaptive.skewJoin.skewedPartitionFactor", "2")
            .set("spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes", "8k");
    if (ember) {
      SparkTestConf.withEmberShuffle(c, cluster.namenodeAddress().toString());
    }
    SparkSession spark = SparkSession.builder().config(c).getOrCreate();
    try {
      // 60% of the fact rows share key 0: a skewed join partition.
      spark
          .range(0, 60_000, 1, 6)
          .selectExpr(
              "id", "CASE WHEN id % 5 < 3 THEN 0 ELSE id % 500 END AS k", "id * 7 % 1000 AS v")
          .createOrReplaceTempView("facts");
      spark
          .range(0, 500, 1, 3)
          .selectExpr("id AS k", "concat('name-', id) AS name")
          .createOrReplaceTempView("dims");
      org.apache.spark.sql.Dataset<Row> df =
          spark.sql(
              "SELECT d.name, count(*) AS n, "
                  + "sum(f.v) AS s FROM facts f JOIN dims d ON f.k = d.k GROUP BY d.name ORDER BY d.name");
      List<Row> rows = df.collectAsList();
      lastPlan = df.queryExecution().executedPlan().toString();
      return rows;
    } finally {
      spark.stop();
    }
  }

  @Test
  void adaptiveQueryGivesSparksOwnResult() throws Exception {
    List<Row> expected = query(false);
    List<Row> got = query(true);
    assertEquals(201, expected.size()); // key 0 and the 200 keys with id % 5 >= 3
    assertEquals(expected.toString(), got.toString());
    // AQE used the map output's partition sizes: it coalesced partitions and split the skewed one.
    assertTrue(lastPlan.contains("AQEShuffleRead"), lastPlan);
    assertTrue(lastPlan.contains("coalesced"), lastPlan);
    assertTrue(lastPlan.contains("skewed"), lastPlan);
    try (io.ember.client.EmberClient probe = cluster.newClient()) {
      assertTrue(probe.list("/spark-shuffle").isEmpty(), "shuffle files left in Ember");
    }
  }
}
