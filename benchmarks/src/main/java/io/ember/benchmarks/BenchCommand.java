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
import io.ember.protocol.NodeType;
import java.io.PrintWriter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ember bench}: the DRAM tier on loopback beside baselines measured in the same run. Data
 * throughput is compared with a raw socket moving the same bytes in the same operation sizes;
 * metadata rates with a no-op RPC round trip. Every figure is the median of {@code --rounds}
 * rounds, baseline and Ember interleaved so drift hits both alike.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Benchmark the DRAM tier on loopback beside raw-socket and no-op RPC baselines.",
    subcommands = {
      HadoopBench.class,
      NvmfTierBench.class,
      NameNodeBench.class,
      JournalBench.class,
      MetricsBench.class,
      JmhCommand.class
    })
public final class BenchCommand implements Callable<Integer> {
  @Option(
      names = "--namenode",
      paramLabel = "HOST:PORT",
      description = "benchmark a running cluster (default: start one in this process)")
  String namenode;

  @Option(
      names = "--size",
      description = "bytes per throughput round (default ${DEFAULT-VALUE})",
      defaultValue = "256m")
  String size;

  @Option(
      names = "--ops",
      description = "metadata operations per thread and round " + "(default ${DEFAULT-VALUE})",
      defaultValue = "20000")
  int ops;

  @Option(
      names = "--threads",
      split = ",",
      description = "client threads for metadata " + "(default ${DEFAULT-VALUE})",
      defaultValue = "1,8")
  int[] threads;

  @Option(
      names = "--rounds",
      description = "rounds per figure; the median is reported " + "(default ${DEFAULT-VALUE})",
      defaultValue = "3")
  int rounds;

  @Option(
      names = "--only",
      description = "throughput, metadata or all (default ${DEFAULT-VALUE})",
      defaultValue = "all")
  String only;

  @Option(
      names = "--warmup",
      description =
          "seconds of unmeasured traffic before each throughput "
              + "measure, so the JIT has compiled both paths (default ${DEFAULT-VALUE})",
      defaultValue = "20")
  int warmupSeconds;

  @Option(
      names = {"-D", "--set"},
      paramLabel = "KEY=VALUE",
      description =
          "an Ember setting "
              + "for the cluster started here and the client, e.g. -D ember.client.read-ahead=16m "
              + "(repeatable)")
  Map<String, String> settings = new TreeMap<>();

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private PrintWriter out;
  private PrintWriter progress;
  private final Comparison figures = new Comparison("Ember", "baseline", 2);

  @Override
  public Integer call() throws Exception {
    out = spec.commandLine().getOut();
    progress = spec.commandLine().getErr();
    long bytes = ConfigKey.parseSize(size);
    if (rounds < 1 || ops < 1 || bytes < (1 << 20)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--rounds and --ops must be positive and --size at least 1m");
    }
    EmberConfig overrides = BenchCommand.settings(spec, settings);
    MiniCluster cluster = null;
    EmberConfig config;
    if (namenode == null) {
      long capacity = bytes + (64L << 20);
      cluster =
          MiniCluster.builder()
              .set(DramDataNodeKeys.CAPACITY, Long.toString(capacity))
              .set(EmberKeys.IO_THREADS, "0")
              .config(overrides)
              .build();
      config = cluster.config();
      note(
          "started an in-process cluster: name node "
              + cluster.namenodeAddress()
              + ", 1 DRAM data node of "
              + ConfigKey.formatSize(capacity));
    } else {
      config = overrides.with(EmberKeys.NAMENODE_ADDRESS, namenode);
    }
    try (EmberClient client = EmberClient.connect(config)) {
      String dir = "/bench-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
      client.createDirectory(dir, true);
      try {
        if (!only.equals("metadata")) {
          try (RawSocketBaseline raw = new RawSocketBaseline(bytes)) {
            throughput(client, raw, dir, bytes, 1 << 20, false);
            throughput(client, raw, dir, bytes, 4096, true);
          }
        }
        if (!only.equals("throughput")) {
          for (int t : threads) {
            metadata(client, dir, t);
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
    printTable();
    HtmlReport page = report.start(spec, "ember bench: the DRAM tier beside its baselines");
    if (page != null) {
      figures.addTo(page, "DRAM tier on loopback", "measure");
      page.paragraph(BASELINES).paragraph(roundsNote());
      report.finish(page, progress);
    }
    return 0;
  }

  private void throughput(
      EmberClient client,
      RawSocketBaseline raw,
      String dir,
      long bytes,
      int opSize,
      boolean buffered)
      throws Exception {
    byte[] buf = new byte[opSize];
    new java.util.Random(1).nextBytes(buf);
    double[] emberW = new double[rounds];
    double[] emberR = new double[rounds];
    double[] rawW = new double[rounds];
    double[] rawR = new double[rounds];
    String label = opSize >= (1 << 20) ? (opSize >> 20) + " MiB" : (opSize >> 10) + " KiB";
    // Warm-up rounds run until --warmup seconds have passed and are not counted: on two cores the
    // JIT needs gigabytes of traffic through Ember's deeper stack before it stops recompiling,
    // and until then the rounds measure the compiler as much as the code.
    long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
    int warmups = 0;
    do {
      warmups++;
      round(client, raw, dir, buf, bytes, buffered, label, -1, "warm-up " + warmups);
    } while (System.nanoTime() < warmupEnd);
    for (int r = 0; r < rounds; r++) {
      Figures f =
          round(
              client,
              raw,
              dir,
              buf,
              bytes,
              buffered,
              label,
              r,
              String.format(Locale.ROOT, "round %d/%d", r + 1, rounds));
      emberW[r] = f.emberWrite();
      rawW[r] = f.rawWrite();
      emberR[r] = f.emberRead();
      rawR[r] = f.rawRead();
    }
    String how = buffered ? " (buffered stream)" : "";
    String goal = opSize >= (1 << 20) ? ">= 0.70" : "";
    figures.add("write " + label + " ops" + how, "MiB/s", emberW, rawW, goal);
    figures.add("read " + label + " ops" + how, "MiB/s", emberR, rawR, goal);
  }

  /** One round's throughput, MiB/s: Ember's and the raw socket's, writing then reading. */
  private record Figures(double emberWrite, double rawWrite, double emberRead, double rawRead) {}

  /** Moves {@code bytes} through the raw socket and then through an Ember file, in ops of buf. */
  private Figures round(
      EmberClient client,
      RawSocketBaseline raw,
      String dir,
      byte[] buf,
      long bytes,
      boolean buffered,
      String label,
      int index,
      String round)
      throws Exception {
    int opSize = buf.length;
    long ops = bytes / opSize;
    note(String.format(Locale.ROOT, "throughput %s ops, %s: raw socket...", label, round));
    double rw = raw.send(bytes, opSize);
    double rr = raw.receive(bytes, opSize);
    note(String.format(Locale.ROOT, "throughput %s ops, %s: Ember...", label, round));
    String path = dir + "/t-" + opSize + "-" + index;
    long t0 = System.nanoTime();
    try (EmberOutputStream o =
        buffered
            ? client.createBuffered(path, CreateOptions.DEFAULT)
            : client.create(path, CreateOptions.DEFAULT)) {
      for (long i = 0; i < ops; i++) {
        o.write(buf, 0, opSize);
      }
    }
    long t1 = System.nanoTime();
    try (EmberInputStream in = client.open(path)) {
      for (long i = 0; i < ops; i++) {
        if (in.readNBytes(buf, 0, opSize) != opSize) {
          throw new IllegalStateException("short read from " + path);
        }
      }
    }
    long t2 = System.nanoTime();
    client.delete(path, false);
    Figures f = new Figures(mibPerSec(bytes, t1 - t0), rw, mibPerSec(bytes, t2 - t1), rr);
    note(
        String.format(
            Locale.ROOT,
            "throughput %s ops, %s: write %.0f vs raw %.0f MiB/s, " + "read %.0f vs raw %.0f MiB/s",
            label,
            round,
            f.emberWrite(),
            rw,
            f.emberRead(),
            rr));
    return f;
  }

  private void metadata(EmberClient client, String dir, int threadCount) throws Exception {
    double[] noopForLookup = new double[rounds];
    double[] lookup = new double[rounds];
    double[] noopForCreate = new double[rounds];
    double[] create = new double[rounds];
    String target = dir + "/looked-up-" + threadCount;
    client.createAsync(target, NodeType.FILE, CreateOptions.DEFAULT).join();
    Op noop = (t, i) -> client.noopAsync();
    long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L / 4;
    do {
      rates(threadCount, noop, (t, i) -> client.lookupAsync(target)); // warm-up, not counted
    } while (System.nanoTime() < warmupEnd);
    for (int r = 0; r < rounds; r++) {
      note(
          String.format(
              Locale.ROOT, "metadata, %d thread(s), round %d/%d...", threadCount, r + 1, rounds));
      double[] l = rates(threadCount, noop, (t, i) -> client.lookupAsync(target));
      noopForLookup[r] = l[0];
      lookup[r] = l[1];
      String cdir = dir + "/c-" + threadCount + "-" + r;
      client.createDirectory(cdir, false);
      double[] c =
          rates(
              threadCount,
              noop,
              (t, i) ->
                  client.createAsync(
                      cdir + "/f-" + t + "-" + i, NodeType.FILE, CreateOptions.DEFAULT));
      noopForCreate[r] = c[0];
      create[r] = c[1];
      client.delete(cdir, true);
    }
    String th = threads(threadCount);
    figures.add("lookup, " + th, "ops/s", lookup, noopForLookup, ">= 0.80");
    figures.add("create, " + th, "ops/s", create, noopForCreate, "");
  }

  private interface Op {
    CompletableFuture<?> call(int thread, int index);
  }

  /**
   * Operations per second of {@code baseline} and {@code measured} with {@code threadCount}
   * threads, each waiting for each call. The two alternate call by call and each call is timed on
   * its own, so both see the same machine: on two shared cores, rates measured one after the other
   * differ by more than the cost being measured.
   */
  private double[] rates(int threadCount, Op baseline, Op measured) throws Exception {
    AtomicInteger failures = new AtomicInteger();
    Thread[] ts = new Thread[threadCount];
    long[] baselineNanos = new long[threadCount];
    long[] measuredNanos = new long[threadCount];
    java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
    for (int t = 0; t < threadCount; t++) {
      int id = t;
      ts[t] =
          new Thread(
              () -> {
                try {
                  go.await();
                  for (int i = 0; i < ops; i++) {
                    long t0 = System.nanoTime();
                    baseline.call(id, i).join();
                    long t1 = System.nanoTime();
                    measured.call(id, i).join();
                    long t2 = System.nanoTime();
                    baselineNanos[id] += t1 - t0;
                    measuredNanos[id] += t2 - t1;
                  }
                } catch (Exception e) {
                  failures.incrementAndGet();
                  progress.println("bench: " + e.getMessage());
                }
              });
      ts[t].start();
    }
    go.countDown();
    for (Thread t : ts) {
      t.join();
    }
    if (failures.get() > 0) {
      throw new IllegalStateException(failures.get() + " benchmark thread(s) failed");
    }
    double b = 0;
    double m = 0;
    for (int t = 0; t < threadCount; t++) {
      b += ops / (baselineNanos[t] / 1e9);
      m += ops / (measuredNanos[t] / 1e9);
    }
    return new double[] {b, m};
  }

  private static final String BASELINES =
      "baselines: throughput = raw socket over loopback moving the same bytes in the"
          + " same op size, its server sending from and receiving into direct memory the size of"
          + " the data; metadata = no-op RPC round trip to the name node, alternated"
          + " call by call with the measured operation.";

  private String roundsNote() {
    return "figures are medians of "
        + rounds
        + " round(s), after "
        + warmupSeconds
        + " s of warm-up traffic per throughput measure.";
  }

  private void printTable() {
    figures.print(out, "measure");
    out.println(BASELINES);
    out.println(roundsNote());
    out.flush();
  }

  private void note(String s) {
    note(progress, s);
  }

  /** A line of progress on {@code progress} (standard error), shown at once. */
  static void note(PrintWriter progress, String line) {
    progress.println("bench: " + line);
    progress.flush();
  }

  static double mibPerSec(long bytes, long nanos) {
    return bytes / (double) (1 << 20) / (nanos / 1e9);
  }

  /** "1 thread", "8 threads". */
  static String threads(int count) {
    return count + (count == 1 ? " thread" : " threads");
  }

  static String fmt(double v) {
    return String.format(Locale.ROOT, v >= 100 ? "%.0f" : "%.1f", v);
  }

  /** Runs the bench on its own. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new BenchCommand()).execute(args));
  }

  /**
   * The {@code -D} settings of a bench command, every key known and every value valid.
   *
   * @throws CommandLine.ParameterException naming the unknown key or the bad value
   */
  static EmberConfig settings(CommandLine.Model.CommandSpec spec, Map<String, String> settings) {
    EmberConfig overrides = EmberConfig.of(settings);
    List<ConfigKey<?>> known = MiniCluster.allKeys();
    List<String> unknown = overrides.unknownKeys(known);
    if (!unknown.isEmpty()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "unknown setting(s) " + unknown + "; see conf/ember.properties.template");
    }
    try {
      overrides.validate(known);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    return overrides;
  }
}
