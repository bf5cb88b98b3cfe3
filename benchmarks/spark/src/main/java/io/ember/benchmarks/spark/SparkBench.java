package io.ember.benchmarks.spark;

import io.ember.protocol.ConfigKey;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code spark-bench}: TeraGen, TeraSort, TeraValidate and TPC-DS as Spark jobs on ember://, one by
 * one or as the suite that compares Spark's own shuffle with Ember's.
 */
@Command(
    name = "spark-bench",
    mixinStandardHelpOptions = true,
    description = "Spark benchmarks on Ember: TeraSort and TPC-DS, Spark's shuffle vs Ember's.",
    subcommands = {
      SparkBench.TeraGenCommand.class,
      SparkBench.TeraSortCommand.class,
      SparkBench.TeraValidateCommand.class,
      SparkBench.TpcdsGenCommand.class,
      SparkBench.TpcdsCommand.class,
      Suite.class
    })
public final class SparkBench {
  private SparkBench() {}

  /** Runs the command line; exits with its status. */
  public static void main(String[] args) {
    CommandLine cli = new CommandLine(new SparkBench());
    cli.setExecutionExceptionHandler(
        (e, line, parsed) -> {
          // One line for the person; Spark's detail is in the log.
          Throwable root = e;
          while (root.getCause() != null && root.getMessage() == null) {
            root = root.getCause();
          }
          String message = String.valueOf(root.getMessage()).lines().findFirst().orElse("");
          System.err.println(
              "spark-bench: "
                  + root.getClass().getSimpleName()
                  + ": "
                  + message
                  + " (detail: "
                  + System.getProperty("ember.bench.log", "spark-bench.log")
                  + ")");
          org.slf4j.LoggerFactory.getLogger(SparkBench.class).error("spark-bench failed", e);
          return 1;
        });
    System.exit(cli.execute(args));
  }

  /** Where to run: the Ember cluster and the Spark cluster. */
  static final class ClusterOptions {
    @Option(
        names = "--namenode",
        paramLabel = "HOST:PORT",
        description = "an Ember name node; the suite starts a cluster in its JVM without one")
    String namenode;

    @Option(names = "--dram", description = "DRAM capacity of the started cluster (default 6g)")
    String dram = "6g";

    @Option(
        names = "--nvmf-size",
        description =
            "size of the started cluster's NVMf target, a file in the work dir (default 32g)")
    String nvmfSize = "32g";

    @Option(names = "--work-dir", description = "scratch space (default spark-bench-work)")
    Path workDir = Path.of("spark-bench-work");

    @Option(names = "--executors", description = "executor JVMs (default 2)")
    int executors = 2;

    @Option(names = "--executor-memory", description = "heap per executor (default 4g)")
    String executorMemory = "4g";

    @Option(names = "--master", description = "Spark master instead of local-cluster")
    String master;

    @Option(
        names = "--data-class",
        description = "Ember storage class of input and output files (default nvmf)")
    String dataClass = "nvmf";

    /** The cluster of a step run on its own: its data must outlive the command. */
    BenchCluster openExisting() throws Exception {
      if (namenode == null) {
        throw new IllegalArgumentException(
            "--namenode is needed: the data must outlive this "
                + "command (start a cluster with bin/ember local --port 9060 --capacity 6g "
                + "--nvmf-size 32g)");
      }
      return open();
    }

    BenchCluster open() throws Exception {
      int mb = (int) (ConfigKey.parseSize(executorMemory) >> 20);
      return new BenchCluster(namenode, dram, nvmfSize, workDir, executors, mb, master);
    }
  }

  /** TeraSort's input and output directories. */
  static final class TeraPaths {
    @Option(names = "--input", description = "default /bench/terasort/input")
    String input = "/bench/terasort/input";

    @Option(names = "--output", description = "default /bench/terasort/output")
    String output = "/bench/terasort/output";
  }

  static String describe(Tera.Summary s) {
    return s.records() + " records (" + s.records() * TeraRecords.RECORD / 1_000_000 + " MB)";
  }

  @Command(
      name = "teragen",
      mixinStandardHelpOptions = true,
      description = "Write TeraSort input to ember://.../<dir>.")
  static final class TeraGenCommand implements Callable<Integer> {
    @Mixin ClusterOptions cluster;

    @Option(names = "--size", description = "bytes to generate (default 5g)")
    String size = "5g";

    @Option(names = "--partitions", description = "files (default: one per 128 MiB)")
    Integer partitions;

    @Option(names = "--dir", description = "Ember directory (default /bench/terasort/input)")
    String dir = "/bench/terasort/input";

    @Override
    public Integer call() throws Exception {
      long records = ConfigKey.parseSize(size) / TeraRecords.RECORD;
      int parts = partitions != null ? partitions : Suite.partitionsFor(records);
      try (BenchCluster c = cluster.openExisting();
          SparkSession spark = c.session("teragen", Shuffle.SPARK, true, cluster.dataClass)) {
        long t0 = System.nanoTime();
        Tera.Summary s =
            Tera.generate(
                JavaSparkContext.fromSparkContext(spark.sparkContext()),
                c.uri(dir),
                records,
                parts,
                42);
        System.out.printf(
            "teragen: %s in %d files at %s in %.1f s; checksum %016x%n",
            describe(s), parts, c.uri(dir), (System.nanoTime() - t0) / 1e9, s.checksum());
      }
      return 0;
    }
  }

  @Command(
      name = "terasort",
      mixinStandardHelpOptions = true,
      description = "Sort TeraGen's output into another Ember directory.")
  static final class TeraSortCommand implements Callable<Integer> {
    @Mixin ClusterOptions cluster;

    @Mixin TeraPaths paths;

    @Option(
        names = "--shuffle",
        description = "spark, ember-dram or ember-nvmf (default ember-dram)")
    String shuffle = "ember-dram";

    @Option(names = "--partitions", description = "reduce partitions (default 40)")
    int partitions = 40;

    @Override
    public Integer call() throws Exception {
      try (BenchCluster c = cluster.openExisting();
          SparkSession spark =
              c.session("terasort", Shuffle.parse(shuffle), true, cluster.dataClass)) {
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        long t0 = System.nanoTime();
        Progress progress = new Progress(sc, "terasort", System.out, 10_000);
        try {
          Tera.sort(sc, c.uri(paths.input), c.uri(paths.output), partitions);
        } finally {
          progress.stop();
        }
        System.out.printf(
            "terasort (%s shuffle): %.1f s%n", shuffle, (System.nanoTime() - t0) / 1e9);
      }
      return 0;
    }
  }

  @Command(
      name = "teravalidate",
      mixinStandardHelpOptions = true,
      description = "Check that the output is the input, sorted. Exit status 2 if not.")
  static final class TeraValidateCommand implements Callable<Integer> {
    @Mixin ClusterOptions cluster;

    @Mixin TeraPaths paths;

    @Override
    public Integer call() throws Exception {
      try (BenchCluster c = cluster.openExisting();
          SparkSession spark = c.session("teravalidate", Shuffle.SPARK, true, cluster.dataClass)) {
        JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        Tera.Summary in = Tera.summarize(sc, c.uri(paths.input));
        Tera.Verdict v = Tera.validate(sc, c.uri(paths.output), in);
        System.out.println("teravalidate: " + (v.ok() ? "OK, " : "FAILED, ") + v.detail());
        return v.ok() ? 0 : 2;
      }
    }
  }

  @Command(
      name = "tpcds-gen",
      mixinStandardHelpOptions = true,
      description = "Generate TPC-DS tables as Parquet in Ember.")
  static final class TpcdsGenCommand implements Callable<Integer> {
    @Mixin ClusterOptions cluster;

    @Option(names = "--scale", description = "scale factor (default 1)")
    double scale = 1;

    @Option(names = "--dir", description = "default /bench/tpcds/sf<scale>")
    String dir;

    @Override
    public Integer call() throws Exception {
      try (BenchCluster c = cluster.openExisting();
          SparkSession spark = c.session("tpcds-gen", Shuffle.SPARK, true, cluster.dataClass)) {
        Tpcds.generate(
            spark,
            c.uri(dir != null ? dir : Suite.tpcdsDir(scale)),
            scale,
            line -> System.out.println("tpcds-gen: " + line));
      }
      return 0;
    }
  }

  @Command(
      name = "tpcds",
      mixinStandardHelpOptions = true,
      description = "Run TPC-DS queries on generated tables; prints each query's time.")
  static final class TpcdsCommand implements Callable<Integer> {
    @Mixin ClusterOptions cluster;

    @Option(names = "--scale", description = "scale factor the data was made at (default 1)")
    double scale = 1;

    @Option(names = "--dir", description = "default /bench/tpcds/sf<scale>")
    String dir;

    @Option(
        names = "--shuffle",
        description = "spark, ember-dram or ember-nvmf (default ember-dram)")
    String shuffle = "ember-dram";

    @Option(names = "--no-broadcast", description = "turn broadcast joins off")
    boolean noBroadcast;

    @Option(names = "--queries", description = "a regex of query names (default: all)")
    String queries = ".*";

    @Option(
        names = "--repeat",
        description = "runs of each query; the median time is printed " + "(default 1)")
    int repeat = 1;

    @Override
    public Integer call() throws Exception {
      PrintStream out = System.out;
      try (BenchCluster c = cluster.openExisting();
          SparkSession spark =
              c.session("tpcds", Shuffle.parse(shuffle), !noBroadcast, cluster.dataClass)) {
        Tpcds.register(spark, c.uri(dir != null ? dir : Suite.tpcdsDir(scale)));
        int failed = 0;
        for (Tpcds.Query q : Tpcds.queries()) {
          if (q.name().matches(queries)) {
            Tpcds.Outcome o = Tpcds.run(spark, q, repeat);
            out.printf(
                "%-5s %8.2f s %6d rows %s%n",
                o.query(), o.seconds(), o.rows(), o.error() == null ? o.digest() : o.error());
            failed += o.error() == null ? 0 : 1;
          }
        }
        return failed == 0 ? 0 : 1;
      }
    }
  }
}
