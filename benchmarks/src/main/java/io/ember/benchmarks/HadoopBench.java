package io.ember.benchmarks;

import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import java.io.PrintWriter;
import java.net.URI;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ember bench hadoop}: sequential 1 MiB writes and reads of one file through Hadoop's
 * FileSystem API on {@code ember://}, beside the same through Ember's own client in the same run,
 * rounds interleaved. The ratio is the adapter's cost.
 */
@Command(
    name = "hadoop",
    mixinStandardHelpOptions = true,
    description = "Benchmark the Hadoop FileSystem adapter beside Ember's own client.")
public final class HadoopBench implements Callable<Integer> {
  @Option(
      names = "--namenode",
      paramLabel = "HOST:PORT",
      description = "benchmark a running cluster (default: start one in this process)")
  String namenode;

  @Option(
      names = "--size",
      defaultValue = "1g",
      description = "file size per round (default ${DEFAULT-VALUE})")
  String size;

  @Option(
      names = "--rounds",
      defaultValue = "3",
      description = "rounds; the median is reported (default ${DEFAULT-VALUE})")
  int rounds;

  @Option(
      names = "--warmup",
      defaultValue = "15",
      description = "seconds of unmeasured rounds first (default ${DEFAULT-VALUE})")
  int warmupSeconds;

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter progress = spec.commandLine().getErr();
    long bytes = ConfigKey.parseSize(size);
    int op = 1 << 20;
    if (bytes < op || rounds < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--size must be at least 1m and --rounds positive");
    }
    MiniCluster cluster = null;
    EmberConfig config;
    if (namenode == null) {
      cluster =
          MiniCluster.builder()
              .set(DramDataNodeKeys.CAPACITY, Long.toString(bytes + (64L << 20)))
              .set(EmberKeys.IO_THREADS, "0")
              .build();
      config = cluster.config();
      progress.println("bench: started an in-process cluster at " + cluster.namenodeAddress());
    } else {
      config = EmberConfig.defaults().with(EmberKeys.NAMENODE_ADDRESS, namenode);
    }
    double[] ew = new double[rounds];
    double[] er = new double[rounds];
    double[] hw = new double[rounds];
    double[] hr = new double[rounds];
    byte[] buf = new byte[op];
    new java.util.Random(2).nextBytes(buf);
    long ops = bytes / op;
    String address = config.get(EmberKeys.NAMENODE_ADDRESS);
    try (EmberClient client = EmberClient.connect(config);
        FileSystem fs =
            FileSystem.newInstance(URI.create("ember://" + address + "/"), new Configuration())) {
      String dir = "/bench-hadoop-" + System.nanoTime();
      client.createDirectory(dir, true);
      try {
        long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
        for (int round = -1; round < rounds; round++) {
          // Round -1 repeats until the warm-up time is over; its figures are dropped.
          if (round == -1 && warmupSeconds > 0 && System.nanoTime() > warmupEnd) {
            continue;
          }
          int r = Math.max(round, 0);
          String label = round < 0 ? "warm-up" : "round " + (round + 1) + "/" + rounds;
          progress.printf(Locale.ROOT, "bench: %s: Ember client...%n", label);
          progress.flush();
          String ep = dir + "/ember-" + r;
          long t0 = System.nanoTime();
          try (EmberOutputStream o = client.createBuffered(ep, CreateOptions.DEFAULT)) {
            for (long i = 0; i < ops; i++) {
              o.write(buf);
            }
          }
          long t1 = System.nanoTime();
          try (EmberInputStream in = client.open(ep)) {
            for (long i = 0; i < ops; i++) {
              in.readNBytes(buf, 0, op);
            }
          }
          long t2 = System.nanoTime();
          client.delete(ep, false);
          ew[r] = BenchCommand.mibPerSec(ops * op, t1 - t0);
          er[r] = BenchCommand.mibPerSec(ops * op, t2 - t1);

          progress.printf(Locale.ROOT, "bench: %s: Hadoop API...%n", label);
          progress.flush();
          Path hp = new Path(dir + "/hadoop-" + r);
          long t3 = System.nanoTime();
          try (FSDataOutputStream o = fs.create(hp, false)) {
            for (long i = 0; i < ops; i++) {
              o.write(buf);
            }
          }
          long t4 = System.nanoTime();
          try (FSDataInputStream in = fs.open(hp)) {
            for (long i = 0; i < ops; i++) {
              in.readFully(buf, 0, op);
            }
          }
          long t5 = System.nanoTime();
          fs.delete(hp, false);
          hw[r] = BenchCommand.mibPerSec(ops * op, t4 - t3);
          hr[r] = BenchCommand.mibPerSec(ops * op, t5 - t4);
          if (round == -1 && System.nanoTime() < warmupEnd) {
            round--;
          }
        }
      } finally {
        client.delete(dir, true);
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
    Comparison figures = new Comparison("Hadoop API", "Ember client", 2);
    figures.add("sequential write", "MiB/s", hw, ew, ">= 0.90");
    figures.add("sequential read", "MiB/s", hr, er, ">= 0.90");
    String measure = "measure (" + ConfigKey.formatSize(bytes) + " file, 1 MiB ops)";
    figures.print(out, measure);
    String how =
        "figures are medians of "
            + rounds
            + " round(s) after "
            + warmupSeconds
            + " s of warm-up; both use buffered streams.";
    out.println(how);
    HtmlReport page = report.start(spec, "ember bench hadoop: Hadoop's API beside Ember's client");
    if (page != null) {
      figures.addTo(page, "Hadoop FileSystem over ember://", measure);
      page.paragraph(how);
      report.finish(page, progress);
    }
    out.flush();
    return 0;
  }
}
