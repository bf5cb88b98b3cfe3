package io.ember.benchmarks.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.trino.tpcds.Table;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TPC-DS runner: the 103 query files come from Spark's test jar in order, the generator's rows
 * fit their schema, and a few shuffle-heavy queries give the same results on Ember's shuffle as on
 * Spark's own, on data generated into ember://.
 */
class TpcdsTest {
  @TempDir Path work;

  private static List<Row> rows(java.util.Iterator<Row> it) {
    List<Row> all = new ArrayList<>();
    it.forEachRemaining(all::add);
    return all;
  }

  @Test
  void loadsTheQueriesFromSparksTestJar() throws Exception {
    List<Tpcds.Query> queries = Tpcds.queries();
    assertEquals(103, queries.size());
    assertEquals("q1", queries.get(0).name());
    assertEquals("q14a", queries.get(13).name());
    assertEquals("q14b", queries.get(14).name());
    assertEquals("q99", queries.get(102).name());
    assertTrue(queries.get(0).sql().contains("store_returns"));
  }

  @Test
  void generatedRowsFitTheSchema() {
    assertEquals(24, Tpcds.tables().size());
    List<Row> rows = rows(Tpcds.generateChunk(Table.STORE_SALES, 0.01, 1, 1));
    assertTrue(rows.size() > 1000, "store_sales has " + rows.size() + " rows");
    assertEquals(Table.STORE_SALES.getColumns().length, rows.get(0).length());
    var schema = Tpcds.schema(Table.STORE_SALES);
    assertEquals(DataTypes.IntegerType, schema.apply("ss_item_sk").dataType());
    assertEquals(DataTypes.createDecimalType(7, 2), schema.apply("ss_sales_price").dataType());
    assertEquals(
        java.math.BigDecimal.class,
        rows.get(0).get(schema.fieldIndex("ss_sales_price")).getClass());
    // Spark's names, which its queries use, where the generator spells them otherwise.
    assertTrue(List.of(Tpcds.schema(Table.CUSTOMER).fieldNames()).contains("c_last_review_date"));
    assertTrue(List.of(Tpcds.schema(Table.STORE).fieldNames()).contains("s_tax_precentage"));
    assertTrue(List.of(Tpcds.schema(Table.PROMOTION).fieldNames()).contains("p_response_target"));
    List<Row> dates = rows(Tpcds.generateChunk(Table.DATE_DIM, 0.01, 1, 1));
    assertEquals(java.sql.Date.valueOf("1900-01-02"), dates.get(0).get(2));
  }

  @Test
  void chunksTogetherHoldEveryRowOnce() {
    for (Table table : List.of(Table.INVENTORY, Table.STORE_SALES, Table.STORE_RETURNS)) {
      List<Row> whole = rows(Tpcds.generateChunk(table, 0.01, 1, 1));
      List<Row> chunked = new ArrayList<>();
      for (int chunk = 1; chunk <= 3; chunk++) {
        chunked.addAll(rows(Tpcds.generateChunk(table, 0.01, 3, chunk)));
      }
      assertEquals(whole.size(), chunked.size(), table.getName());
      assertEquals(
          new java.util.HashSet<>(whole), new java.util.HashSet<>(chunked), table.getName());
    }
  }

  @Test
  void digestIgnoresRowOrderAndFloatingPointNoise() {
    List<Row> a = List.of(RowFactory.create("x", 0.1 + 0.2), RowFactory.create("y", 1.0));
    List<Row> b = List.of(RowFactory.create("y", 1.0), RowFactory.create("x", 0.3));
    assertEquals(Tpcds.digest(a), Tpcds.digest(b));
    List<Row> c = List.of(RowFactory.create("y", 1.0), RowFactory.create("x", 0.31));
    assertTrue(!Tpcds.digest(a).equals(Tpcds.digest(c)));
  }

  @Test
  void aQueryRunsAtLeastOnce() {
    Tpcds.Query q = new Tpcds.Query("q1", "select 1");
    assertThrows(IllegalArgumentException.class, () -> Tpcds.run(null, q, 0));
  }

  @Test
  void repeatedRunsCountTheMedianAndMustAgree() {
    Tpcds.Outcome fast = new Tpcds.Outcome("q1", 1.0, 5, "aa", null);
    Tpcds.Outcome mid = new Tpcds.Outcome("q1", 2.0, 5, "aa", null);
    Tpcds.Outcome slow = new Tpcds.Outcome("q1", 9.0, 5, "aa", null);
    assertEquals(mid, Tpcds.median(List.of(slow, fast, mid)));
    assertEquals(fast, Tpcds.median(List.of(fast)));
    Tpcds.Outcome other = new Tpcds.Outcome("q1", 1.5, 5, "bb", null);
    String error = Tpcds.median(List.of(fast, other, mid)).error();
    assertEquals("run 2 gave bb, run 1 gave aa", error);
    Tpcds.Outcome failed = new Tpcds.Outcome("q1", 0.1, -1, null, "boom");
    assertEquals(failed, Tpcds.median(List.of(fast, failed)));
  }

  @Test
  void queriesGiveTheSameResultsOnEmbersShuffle() throws Exception {
    List<Tpcds.Query> some = new ArrayList<>();
    for (Tpcds.Query q : Tpcds.queries()) {
      if (List.of("q3", "q7", "q19", "q42", "q55", "q65").contains(q.name())) {
        some.add(q);
      }
    }
    try (BenchCluster cluster = new BenchCluster(null, "256m", "512m", work, 1, 1024, "local[2]")) {
      String root = cluster.uri("/tpcds");
      try (SparkSession spark = cluster.session("gen", Shuffle.SPARK, true, "nvmf")) {
        Tpcds.generate(spark, root, 0.01, line -> {});
      }
      List<String> spark = run(cluster, root, Shuffle.SPARK, some, 1);
      // Twice each: repeated runs must agree with each other as well as with Spark's shuffle.
      List<String> ember = run(cluster, root, Shuffle.EMBER_DRAM, some, 2);
      assertEquals(spark, ember);
    }
  }

  private static List<String> run(
      BenchCluster cluster, String root, Shuffle shuffle, List<Tpcds.Query> queries, int times)
      throws Exception {
    List<String> digests = new ArrayList<>();
    try (SparkSession spark = cluster.session("tpcds", shuffle, false, "nvmf")) {
      Tpcds.register(spark, root);
      for (Tpcds.Query q : queries) {
        Tpcds.Outcome o = Tpcds.run(spark, q, times);
        assertNull(o.error(), q.name());
        assertTrue(o.rows() > 0, q.name() + " returned nothing");
        digests.add(q.name() + " " + o.digest());
      }
    }
    return digests;
  }
}
