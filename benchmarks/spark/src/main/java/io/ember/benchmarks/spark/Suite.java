package io.ember.benchmarks.spark;

import io.ember.benchmarks.report.Charts;
import io.ember.benchmarks.report.HtmlReport;
import io.ember.protocol.ConfigKey;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The suite: TeraSort and the TPC-DS queries with each shuffle, a TeraSort pair that loses an
 * executor early in the reduce stage, and a table of times and ratios against Spark's own shuffle
 * measured in the same run.
 */
@Command(
    name = "suite",
    mixinStandardHelpOptions = true,
    description = "TeraSort and TPC-DS with Spark's shuffle and Ember's; prints a table.")
final class Suite implements Callable<Integer> {
  @Mixin SparkBench.ClusterOptions cluster;

  @Option(names = "--terasort-size", description = "TeraSort input (default 5g; 0: skip TeraSort)")
  String terasortSize = "5g";

  @Option(names = "--tpcds-scale", description = "TPC-DS scale factor (default 1; 0: skip TPC-DS)")
  double tpcdsScale = 1;

  @Option(
      names = "--shuffles",
      split = ",",
      description = "shuffles to compare (default spark,ember-dram,ember-nvmf)")
  List<String> shuffles = List.of("spark", "ember-dram", "ember-nvmf");

  @Option(
      names = "--broadcast",
      description = "TPC-DS broadcast joins: on, off or both (default both)")
  String broadcast = "both";

  @Option(names = "--queries", description = "a regex of TPC-DS query names (default: all)")
  String queries = ".*";

  @Option(
      names = "--tpcds-warmup",
      description =
          "TPC-DS queries run untimed first, so the "
              + "driver's query planning is compiled before the first measured run (default 20)")
  int tpcdsWarmup = 20;

  @Option(
      names = "--tpcds-repeat",
      description =
          "runs of each TPC-DS query per shuffle; the " + "median time counts (default 1)")
  int tpcdsRepeat = 1;

  @Option(
      names = "--tpcds-passes",
      description =
          "passes over the TPC-DS queries per shuffle, "
              + "taken in turns (Spark, Ember, Ember, Spark, ...) so that a machine whose speed drifts "
              + "weighs on every shuffle alike; a query's time is the median of all its runs (default 1)")
  int tpcdsPasses = 1;

  @Option(names = "--no-kill", description = "skip the TeraSort pair that loses an executor")
  boolean noKill;

  @Option(
      names = "--report",
      paramLabel = "DIR",
      description =
          "where to write the report with charts, DIR/index.html (default: report/ in the work"
              + " dir)")
  Path reportDir;

  private final PrintStream out = System.out;

  /** The tables as Markdown, for results.md and the console. */
  private final List<String> report = new ArrayList<>();

  /** The same tables with charts, as one HTML page. */
  private final HtmlReport page = new HtmlReport("Spark suite: Spark's shuffle and Ember's");

  static int partitionsFor(long records) {
    return (int) Math.max(2, records * TeraRecords.RECORD / (128L << 20));
  }

  static String tpcdsDir(double scale) {
    return "/bench/tpcds/sf"
        + (scale == Math.rint(scale) ? String.valueOf((long) scale) : String.valueOf(scale));
  }

  @Override
  public Integer call() throws Exception {
    List<Shuffle> modes = shuffles.stream().map(Shuffle::parse).toList();
    if (modes.isEmpty() || modes.get(0) != Shuffle.SPARK) {
      throw new IllegalArgumentException(
          "--shuffles must start with spark: the ratios are " + "against Spark's own shuffle");
    }
    if (tpcdsRepeat < 1 || tpcdsPasses < 1) {
      throw new IllegalArgumentException("--tpcds-repeat and --tpcds-passes must be at least 1");
    }
    boolean failed = false;
    try (BenchCluster c = cluster.open()) {
      String setUp =
          "Ember name node "
              + c.namenode()
              + ", Spark "
              + org.apache.spark.package$.MODULE$.SPARK_VERSION()
              + " with "
              + cluster.executors
              + " executors x "
              + cluster.executorMemory
              + ", "
              + Runtime.getRuntime().availableProcessors()
              + " CPUs, Java "
              + System.getProperty("java.version");
      out.println("spark-bench suite: " + setUp + ", work dir " + c.workDir());
      page.meta(setUp);
      long size = ConfigKey.parseSize(terasortSize);
      if (size > 0) {
        failed |= !teraSorts(c, modes, size / TeraRecords.RECORD);
      }
      if (tpcdsScale > 0) {
        failed |= !tpcds(c, modes);
      }
    }
    String table = String.join("\n", report) + "\n";
    out.println();
    out.print(table);
    Path results = cluster.workDir.resolve("results.md");
    Files.writeString(results, table, StandardCharsets.UTF_8);
    out.println("(also in " + results.toAbsolutePath() + ")");
    Path html = page.write(reportDir != null ? reportDir : cluster.workDir.resolve("report"));
    out.println("report with charts: " + html.toAbsolutePath());
    return failed ? 1 : 0;
  }

  /** One TeraSort: its time, its stages' times, what TeraValidate said, the map tasks it ran. */
  private record SortRun(
      double seconds,
      Map<String, Double> stages,
      Tera.Verdict verdict,
      int mapTasks,
      int mapStages,
      String killed) {}

  /** Adds a table to the Markdown and to the page; {@code caption} ends with a colon. */
  private void table(String caption, List<String> headers, List<List<String>> rows) {
    report.add(caption);
    report.add("");
    report.add("| " + String.join(" | ", headers) + " |");
    report.add("|" + "---|".repeat(headers.size()));
    rows.forEach(r -> report.add("| " + String.join(" | ", r) + " |"));
    report.add("");
    page.heading(caption.replaceFirst(":$", "")).table(headers, rows);
  }

  private boolean teraSorts(BenchCluster c, List<Shuffle> modes, long records) throws Exception {
    int partitions = partitionsFor(records);
    String input = c.uri("/bench/terasort/input");
    Tera.Summary summary;
    out.printf(
        "teragen: %d records (%.1f GB) in %d files...%n",
        records, records * TeraRecords.RECORD / 1e9, partitions);
    try (SparkSession spark = c.session("teragen", Shuffle.SPARK, true, cluster.dataClass)) {
      JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      long t0 = System.nanoTime();
      Progress progress = new Progress(sc, "teragen", out, 15_000);
      try {
        summary = Tera.generate(sc, input, records, partitions, 42);
      } finally {
        progress.stop();
      }
      out.printf("teragen: done in %.1f s%n", (System.nanoTime() - t0) / 1e9);
    }
    Map<String, SortRun> runs = new LinkedHashMap<>();
    for (Shuffle mode : modes) {
      runs.put(mode.label(), teraSort(c, mode, input, partitions, summary, false));
    }
    if (!noKill) {
      for (Shuffle mode : modes.subList(0, Math.min(2, modes.size()))) {
        runs.put(
            mode.label() + ", executor killed",
            teraSort(c, mode, input, partitions, summary, true));
      }
    }
    List<List<String>> rows = new ArrayList<>();
    boolean allValid = true;
    for (Map.Entry<String, SortRun> e : runs.entrySet()) {
      SortRun r = e.getValue();
      SortRun base = runs.get(e.getKey().endsWith("killed") ? "spark, executor killed" : "spark");
      rows.add(
          List.of(
              e.getKey(),
              String.format("%.1f s", r.seconds()),
              String.format("%.2f", base.seconds() / r.seconds()),
              String.format(
                  "%d in %d stage attempt%s",
                  r.mapTasks(), r.mapStages(), r.mapStages() == 1 ? "" : "s"),
              (r.verdict().ok() ? "OK: " : "FAILED: ") + r.verdict().detail()));
      allValid &= r.verdict().ok();
    }
    table(
        String.format(
            "TeraSort, %.1f GB, %d map and %d reduce partitions, "
                + "local-cluster with %d executors:",
            records * TeraRecords.RECORD / 1e9, partitions, partitions, cluster.executors),
        List.of("shuffle", "time", "Spark's time / this", "map tasks run", "TeraValidate"),
        rows);
    List<String> labels = new ArrayList<>(runs.keySet());
    Map<String, double[]> stages = new LinkedHashMap<>();
    for (int i = 0; i < labels.size(); i++) {
      for (Map.Entry<String, Double> stage : runs.get(labels.get(i)).stages().entrySet()) {
        stages.computeIfAbsent(stage.getKey(), k -> new double[labels.size()])[i] =
            stage.getValue();
      }
    }
    page.chart(
        Charts.stacked("TeraSort's stages", "seconds", labels, stages),
        "Each bar is one TeraSort, its stages stacked: the map stage writes the shuffle, the"
            + " reduce stage reads it, sorts and writes the output. A stage run again after an"
            + " executor was lost adds its attempts' time.");
    report.forEach(out::println);
    return allValid;
  }

  private SortRun teraSort(
      BenchCluster c,
      Shuffle mode,
      String input,
      int partitions,
      Tera.Summary expected,
      boolean kill)
      throws Exception {
    String output = c.uri("/bench/terasort/output-" + mode.label());
    String what = "terasort " + mode.label() + (kill ? " (executor killed)" : "");
    out.println(what + "...");
    try (SparkSession spark =
        c.session("terasort-" + mode.label(), mode, true, cluster.dataClass)) {
      JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      awaitExecutors(sc);
      ExecutorKiller killer = new ExecutorKiller(spark.sparkContext(), kill);
      spark.sparkContext().addSparkListener(killer);
      long t0 = System.nanoTime();
      StageTimes stageTimes = new StageTimes();
      spark.sparkContext().addSparkListener(stageTimes);
      Progress progress = new Progress(sc, what, out, 15_000);
      try {
        Tera.sort(sc, input, output, partitions);
      } finally {
        progress.stop();
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      // Before TeraValidate's own stages.
      Map<String, Double> stages = stageTimes.seconds(spark.sparkContext());
      out.printf(
          "%s: %.1f s, %d map tasks run%s; validating...%n",
          what,
          seconds,
          killer.mapTasks(),
          killer.victim() != null ? ", executor " + killer.victim() + " killed" : "");
      Tera.Verdict verdict = Tera.validate(sc, output, expected);
      out.println(
          what + ": teravalidate " + (verdict.ok() ? "OK" : "FAILED") + ": " + verdict.detail());
      org.apache.hadoop.fs.Path sorted = new org.apache.hadoop.fs.Path(output);
      FileSystem fs = sorted.getFileSystem(sc.hadoopConfiguration());
      fs.delete(sorted, true);
      if (kill && killer.victim() == null) {
        verdict = new Tera.Verdict(false, "no executor was killed");
      }
      return new SortRun(
          seconds, stages, verdict, killer.mapTasks(), killer.mapStageAttempts(), killer.victim());
    }
  }

  /** Waits for every executor, so each run starts with the same cluster. */
  private void awaitExecutors(JavaSparkContext sc) throws InterruptedException {
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (sc.sc().getExecutorIds().size() < cluster.executors && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
  }

  private boolean tpcds(BenchCluster c, List<Shuffle> modes) throws Exception {
    String root = c.uri(tpcdsDir(tpcdsScale));
    List<Tpcds.Query> selected =
        Tpcds.queries().stream().filter(q -> q.name().matches(queries)).toList();
    out.println("tpcds: generating SF" + tpcdsScale + " into " + root + "...");
    try (SparkSession spark = c.session("tpcds-gen", Shuffle.SPARK, true, cluster.dataClass)) {
      long t0 = System.nanoTime();
      Tpcds.generate(spark, root, tpcdsScale, line -> out.println("tpcds: " + line));
      out.printf("tpcds: generated in %.1f s%n", (System.nanoTime() - t0) / 1e9);
    }
    List<Boolean> broadcasts =
        switch (broadcast) {
          case "on" -> List.of(true);
          case "off" -> List.of(false);
          // Off first: it is where the shuffle matters.
          case "both" -> List.of(false, true);
          default ->
              throw new IllegalArgumentException(
                  "--broadcast is on, off or both, not " + broadcast);
        };
    if (tpcdsWarmup > 0) {
      // Every run has fresh executors, but the driver lives on: without this, whichever
      // shuffle ran first would also pay for compiling Spark's planner.
      out.println(
          "tpcds: warm-up, " + Math.min(tpcdsWarmup, selected.size()) + " queries untimed...");
      try (SparkSession spark = c.session("tpcds-warmup", Shuffle.SPARK, true, cluster.dataClass)) {
        Tpcds.register(spark, root);
        selected.stream().limit(tpcdsWarmup).forEach(q -> Tpcds.run(spark, q));
      }
    }
    boolean allSame = true;
    for (boolean joins : broadcasts) {
      // Every run of every query, per shuffle, across passes.
      Map<Shuffle, List<List<Tpcds.Outcome>>> runsByMode = new LinkedHashMap<>();
      for (Shuffle mode : modes) {
        List<List<Tpcds.Outcome>> perQuery = new ArrayList<>();
        selected.forEach(q -> perQuery.add(new ArrayList<>()));
        runsByMode.put(mode, perQuery);
      }
      List<Shuffle> reversed = new ArrayList<>(modes);
      Collections.reverse(reversed);
      for (int pass = 1; pass <= tpcdsPasses; pass++) {
        for (Shuffle mode : pass % 2 == 1 ? modes : reversed) {
          String label =
              mode.label()
                  + (joins ? "" : ", broadcast joins off")
                  + (tpcdsPasses > 1 ? ", pass " + pass + "/" + tpcdsPasses : "");
          runPass(c, root, mode, joins, selected, label, runsByMode.get(mode));
        }
      }
      Map<Shuffle, List<Tpcds.Outcome>> byMode = new LinkedHashMap<>();
      for (Shuffle mode : modes) {
        List<Tpcds.Outcome> outcomes = runsByMode.get(mode).stream().map(Tpcds::median).toList();
        byMode.put(mode, outcomes);
        writeCsv(mode.label() + (joins ? "" : "-nobroadcast"), outcomes);
      }
      int from = report.size();
      allSame &= summarize(byMode, runsByMode, joins);
      // Each table as soon as it is known, so a long suite that is stopped still has it.
      report.subList(from, report.size()).forEach(out::println);
    }
    return allSame;
  }

  /** One shuffle's pass over the queries in a fresh application; adds each run to its query's. */
  private void runPass(
      BenchCluster c,
      String root,
      Shuffle mode,
      boolean joins,
      List<Tpcds.Query> selected,
      String label,
      List<List<Tpcds.Outcome>> runs)
      throws Exception {
    try (SparkSession spark = c.session("tpcds-" + mode.label(), mode, joins, cluster.dataClass)) {
      awaitExecutors(JavaSparkContext.fromSparkContext(spark.sparkContext()));
      Tpcds.register(spark, root);
      for (int i = 0; i < selected.size(); i++) {
        for (Tpcds.Outcome o : Tpcds.runs(spark, selected.get(i), tpcdsRepeat)) {
          runs.get(i).add(o);
          out.printf(
              "tpcds %s: %s %.2f s (%d/%d)%s%n",
              label,
              o.query(),
              o.seconds(),
              i + 1,
              selected.size(),
              o.error() == null ? "" : " FAILED: " + o.error());
        }
      }
    }
  }

  private void writeCsv(String name, List<Tpcds.Outcome> outcomes) throws IOException {
    StringBuilder csv = new StringBuilder("query,seconds,rows,digest,error\n");
    for (Tpcds.Outcome o : outcomes) {
      csv.append(
          String.format(
              "%s,%.3f,%d,%s,%s%n",
              o.query(),
              o.seconds(),
              o.rows(),
              o.digest() == null ? "" : o.digest(),
              o.error() == null ? "" : '"' + o.error().replace('"', '\'') + '"'));
    }
    Files.writeString(cluster.workDir.resolve("tpcds-" + name + ".csv"), csv);
  }

  /**
   * Whether every run of a query took more than {@code factor} times the slowest of the baseline's
   * runs: slower beyond the spread between runs, which on a busy two-core machine moves a short
   * query's median by more than 10% between passes of the same shuffle.
   */
  static boolean slowerInEveryRun(
      List<Tpcds.Outcome> runs, List<Tpcds.Outcome> baseRuns, double factor) {
    double fastest = runs.stream().mapToDouble(Tpcds.Outcome::seconds).min().orElseThrow();
    double baseSlowest = baseRuns.stream().mapToDouble(Tpcds.Outcome::seconds).max().orElseThrow();
    return fastest > factor * baseSlowest;
  }

  /** Adds one broadcast setting's TPC-DS table to the report; false if any result differed. */
  private boolean summarize(
      Map<Shuffle, List<Tpcds.Outcome>> byMode,
      Map<Shuffle, List<List<Tpcds.Outcome>>> runsByMode,
      boolean joins) {
    List<Tpcds.Outcome> base = byMode.get(Shuffle.SPARK);
    int runsPerQuery = tpcdsRepeat * tpcdsPasses;
    String how =
        runsPerQuery == 1
            ? ""
            : ", median of "
                + runsPerQuery
                + " runs per query"
                + (tpcdsPasses > 1 ? " in " + tpcdsPasses + " passes taken in turns" : "");
    boolean same = true;
    List<List<String>> rows = new ArrayList<>();
    Map<String, double[]> perQuery = new LinkedHashMap<>();
    double baseTotal = base.stream().mapToDouble(Tpcds.Outcome::seconds).sum();
    for (Map.Entry<Shuffle, List<Tpcds.Outcome>> e : byMode.entrySet()) {
      List<Tpcds.Outcome> runs = e.getValue();
      double total = runs.stream().mapToDouble(Tpcds.Outcome::seconds).sum();
      double logSum = 0;
      int slower = 0;
      double worst = 0;
      String worstQuery = "";
      List<String> differing = new ArrayList<>();
      List<String> slowerEveryRun = new ArrayList<>();
      int failedQueries = 0;
      for (int i = 0; i < runs.size(); i++) {
        Tpcds.Outcome o = runs.get(i);
        Tpcds.Outcome b = base.get(i);
        double ratio = o.seconds() / b.seconds();
        logSum += Math.log(ratio);
        if (ratio > 1.10) {
          slower++;
          if (slowerInEveryRun(
              runsByMode.get(e.getKey()).get(i), runsByMode.get(Shuffle.SPARK).get(i), 1.10)) {
            slowerEveryRun.add(o.query());
          }
        }
        if (ratio > worst) {
          worst = ratio;
          worstQuery = o.query();
        }
        if (o.error() != null) {
          failedQueries++;
        } else if (b.error() == null && !o.digest().equals(b.digest())) {
          differing.add(o.query());
        }
      }
      same &= differing.isEmpty() && failedQueries == 0;
      rows.add(
          List.of(
              e.getKey().label(),
              String.format("%.1f s", total),
              String.format("%.2f", baseTotal / total),
              String.format("%.3f", Math.exp(logSum / runs.size())),
              Integer.toString(slower),
              slowerEveryRun.size()
                  + (slowerEveryRun.isEmpty() ? "" : " (" + String.join(" ", slowerEveryRun) + ")"),
              String.format("%.2f (%s)", worst, worstQuery),
              differing.isEmpty() ? "none" : String.join(" ", differing),
              Integer.toString(failedQueries)));
      if (e.getKey() != Shuffle.SPARK) {
        perQuery.put(
            e.getKey().label(),
            IntStream.range(0, runs.size())
                .mapToDouble(i -> runs.get(i).seconds() / base.get(i).seconds())
                .toArray());
      }
    }
    String caption =
        String.format(
            "TPC-DS SF%s, %d queries, broadcast joins %s%s:",
            tpcdsScale, base.size(), joins ? "on" : "off", how);
    table(
        caption,
        List.of(
            "shuffle",
            "total time",
            "Spark's total / this",
            "geometric mean of per-query ratios (this / Spark's)",
            "queries > 1.10 of Spark's time",
            "of those, > 1.10 in every run",
            "slowest ratio",
            "results differing from Spark's",
            "failed"),
        rows);
    if (!perQuery.isEmpty() && !base.isEmpty()) {
      page.chart(
          Charts.ratios(
              "TPC-DS per query, broadcast joins " + (joins ? "on" : "off"),
              "this shuffle's time / Spark's",
              base.stream().map(Tpcds.Outcome::query).toList(),
              perQuery),
          "Below the line at 1 a query ran faster with Ember's shuffle than with Spark's own.");
    }
    return same;
  }
}
