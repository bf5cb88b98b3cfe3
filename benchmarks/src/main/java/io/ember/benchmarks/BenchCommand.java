package io.ember.benchmarks;

import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.ClientKeys;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.BlockLocation;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Messages;
import io.ember.protocol.NodeStatus;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
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
      SecurityBench.class,
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

  @CommandLine.Mixin PinOption pin;

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** How the in-process data node's network threads are named (its RPC server's, "data node"). */
  private static final String DATANODE_THREADS = "data node-io";

  /** The client's network threads, which send what its streams hand them. */
  private static final String CLIENT_THREADS = "ember-client";

  private PrintWriter out;
  private PrintWriter progress;
  private final Comparison figures = new Comparison("Ember", "baseline", 2);

  @Override
  public Integer call() throws Exception {
    out = spec.commandLine().getOut();
    progress = spec.commandLine().getErr();
    long bytes = OptionValues.size(spec, "--size", size, 1 << 20, Long.MAX_VALUE);
    if (rounds < 1 || ops < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--rounds and --ops must be positive");
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
    double[] emberCpu = new double[rounds];
    double[] rawCpu = new double[rounds];
    double[] emberSenderCpu = new double[rounds];
    double[] rawSenderCpu = new double[rounds];
    double[] emberProcessCpu = new double[rounds];
    double[] rawProcessCpu = new double[rounds];
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
      emberCpu[r] = f.emberReceiverCpu();
      rawCpu[r] = f.rawReceiverCpu();
      emberSenderCpu[r] = f.emberSenderCpu();
      rawSenderCpu[r] = f.rawSenderCpu();
      emberProcessCpu[r] = f.emberProcessCpu();
      rawProcessCpu[r] = f.rawProcessCpu();
    }
    String how = buffered ? " (buffered stream)" : "";
    String goal = opSize >= (1 << 20) ? ">= 0.70" : "";
    figures.add("write " + label + " ops" + how, "MiB/s", emberW, rawW, goal);
    figures.add("read " + label + " ops" + how, "MiB/s", emberR, rawR, goal);
    if (namenode == null
        && !buffered
        && java.lang.management.ManagementFactory.getThreadMXBean().isThreadCpuTimeEnabled()) {
      figures.add("receiver CPU per GiB written, " + label + " ops", "ms", emberCpu, rawCpu, "");
      figures.add(
          "sender CPU per GiB written, " + label + " ops", "ms", emberSenderCpu, rawSenderCpu, "");
      if (PROCESS_CPU != null) {
        figures.add(
            "process CPU per GiB written, " + label + " ops",
            "ms",
            emberProcessCpu,
            rawProcessCpu,
            "");
      }
    }
  }

  /**
   * CPU time so far of this process's threads whose names start with {@code prefix}: the data
   * node's network threads, or the raw socket's server.
   */
  private static long cpuNanos(String prefix) {
    long sum = 0;
    for (java.lang.management.ThreadInfo t : CPU.getThreadInfo(CPU.getAllThreadIds())) {
      if (t != null && t.getThreadName().startsWith(prefix)) {
        sum += Math.max(0, CPU.getThreadCpuTime(t.getThreadId()));
      }
    }
    return sum;
  }

  /** This process's CPU time, where the JVM tells it; null where it does not. */
  private static final com.sun.management.OperatingSystemMXBean PROCESS_CPU =
      ManagementFactory.getOperatingSystemMXBean()
              instanceof com.sun.management.OperatingSystemMXBean os
          ? os
          : null;

  private static long processCpuNanos() {
    return PROCESS_CPU == null ? 0 : PROCESS_CPU.getProcessCpuTime();
  }

  private static double msPerGiB(long nanos, long bytes) {
    return nanos / 1e6 / (bytes / (double) (1L << 30));
  }

  /**
   * One round's throughput, MiB/s: Ember's and the raw socket's, writing then reading; and the CPU
   * time per GiB written, in ms, of the receiving side (the data node's network threads, the raw
   * socket's server), of the sending side (the writing thread, with the client's network threads
   * for Ember), and of the whole process while it wrote (which also counts the name node, the
   * compiler and the collector).
   */
  private record Figures(
      double emberWrite,
      double rawWrite,
      double emberRead,
      double rawRead,
      double emberReceiverCpu,
      double rawReceiverCpu,
      double emberSenderCpu,
      double rawSenderCpu,
      double emberProcessCpu,
      double rawProcessCpu) {}

  /** One side's part of a round: MiB/s written and read, and the CPU nanoseconds of the write. */
  private record Side(
      double write, double read, long receiverCpu, long senderCpu, long processCpu) {}

  /**
   * Moves {@code bytes} through the raw socket and through an Ember file, in ops of buf. Even
   * rounds start with the raw socket and odd ones with Ember, so whatever the first side leaves
   * behind (garbage to collect, a cooler cache, a neighbour's burst) falls on both sides alike.
   */
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
    Side r;
    Side e;
    if (index % 2 == 0) {
      r = rawSide(raw, bytes, buf.length, label, round);
      e = emberSide(client, dir, buf, bytes, buffered, label, index, round);
    } else {
      e = emberSide(client, dir, buf, bytes, buffered, label, index, round);
      r = rawSide(raw, bytes, buf.length, label, round);
    }
    Figures f =
        new Figures(
            e.write(),
            r.write(),
            e.read(),
            r.read(),
            msPerGiB(e.receiverCpu(), bytes),
            msPerGiB(r.receiverCpu(), bytes),
            msPerGiB(e.senderCpu(), bytes),
            msPerGiB(r.senderCpu(), bytes),
            msPerGiB(e.processCpu(), bytes),
            msPerGiB(r.processCpu(), bytes));
    note(
        String.format(
            Locale.ROOT,
            "throughput %s ops, %s: write %.0f vs raw %.0f MiB/s, read %.0f vs raw %.0f MiB/s;"
                + " CPU per GiB written, ms: sender %.0f vs %.0f, receiver %.0f vs %.0f,"
                + " process %.0f vs %.0f",
            label,
            round,
            f.emberWrite(),
            f.rawWrite(),
            f.emberRead(),
            f.rawRead(),
            f.emberSenderCpu(),
            f.rawSenderCpu(),
            f.emberReceiverCpu(),
            f.rawReceiverCpu(),
            f.emberProcessCpu(),
            f.rawProcessCpu()));
    return f;
  }

  private Side rawSide(RawSocketBaseline raw, long bytes, int opSize, String label, String round)
      throws Exception {
    note(String.format(Locale.ROOT, "throughput %s ops, %s: raw socket...", label, round));
    long serverCpu0 = cpuNanos(RawSocketBaseline.SERVER_THREAD);
    long sender0 = CPU.getCurrentThreadCpuTime();
    long process0 = processCpuNanos();
    double write = raw.send(bytes, opSize);
    long process = processCpuNanos() - process0;
    long sender = CPU.getCurrentThreadCpuTime() - sender0;
    long serverCpu = cpuNanos(RawSocketBaseline.SERVER_THREAD) - serverCpu0;
    double read = raw.receive(bytes, opSize);
    return new Side(write, read, serverCpu, sender, process);
  }

  private Side emberSide(
      EmberClient client,
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
    note(String.format(Locale.ROOT, "throughput %s ops, %s: Ember...", label, round));
    String path = dir + "/t-" + opSize + "-" + index;
    long dnCpu0 = cpuNanos(DATANODE_THREADS);
    long clientThreads0 = cpuNanos(CLIENT_THREADS);
    long sender0 = clientThreads0 + CPU.getCurrentThreadCpuTime();
    long process0 = processCpuNanos();
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
    long process = processCpuNanos() - process0;
    // This thread's time is read after the first scan of the client's threads and before the
    // second, so neither scan counts, as the raw socket's figure has none.
    long sender = CPU.getCurrentThreadCpuTime() + cpuNanos(CLIENT_THREADS) - sender0;
    long dnCpu = cpuNanos(DATANODE_THREADS) - dnCpu0;
    try (EmberInputStream in = client.open(path)) {
      for (long i = 0; i < ops; i++) {
        if (in.readNBytes(buf, 0, opSize) != opSize) {
          throw new IllegalStateException("short read from " + path);
        }
      }
    }
    long t2 = System.nanoTime();
    client.delete(path, false);
    return new Side(mibPerSec(bytes, t1 - t0), mibPerSec(bytes, t2 - t1), dnCpu, sender, process);
  }

  private void metadata(EmberClient client, String dir, int threadCount) throws Exception {
    double[] rawForLookup = new double[rounds];
    double[] lookup = new double[rounds];
    double[] noop = new double[rounds];
    double[] rawForCreate = new double[rounds];
    double[] forcedForCreate = new double[rounds];
    double[] create = new double[rounds];
    double[] lookupCpu = new double[rounds];
    double[] rawCpu = new double[rounds];
    String target = dir + "/looked-up-" + threadCount;
    try (EmberOutputStream o = client.create(target, CreateOptions.DEFAULT)) {
      o.write(1); // a block, whose location sizes the ping-pong of a create's answer
    }
    NodeStatus looked = client.lookup(target);
    String createDir = dir + "/c-" + threadCount + "-";
    // The ping-pongs' sizes are those of the frames each call sends and gets back.
    int lookupAsk = PingPongBaseline.frameBytes(new Messages.PathRequest(target));
    int statusAnswer = PingPongBaseline.frameBytes(looked);
    BlockLocation block = client.blockLocations(target).get(0);
    try (PingPongBaseline pingPong = new PingPongBaseline(spinWait(client))) {
      PingPongBaseline.Connection[] lookupLike = new PingPongBaseline.Connection[threadCount];
      PingPongBaseline.CreateClose[] createCloseLike =
          new PingPongBaseline.CreateClose[threadCount];
      PingPongBaseline.CreateClose[] forcedCreateCloseLike =
          new PingPongBaseline.CreateClose[threadCount];
      for (int t = 0; t < threadCount; t++) {
        lookupLike[t] = pingPong.connect(lookupAsk, statusAnswer);
        createCloseLike[t] =
            pingPong.connectCreateClose(createDir + "0/f-0-0", client.leaseHolder(), looked, block);
        forcedCreateCloseLike[t] =
            pingPong.connectCreateClose(
                createDir + "0/f-0-0", client.leaseHolder(), looked, block, true);
      }
      // Placed once every server thread and connection exists; callers started later inherit it.
      ThreadPlacement placement = pin.place(progress);
      try {
        List<AlternatingRates.Op> lookups =
            List.of(
                (t, i) -> lookupLike[t].roundTrip(),
                (t, i) -> client.noop(),
                (t, i) -> client.lookup(target));
        long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L / 4;
        do {
          AlternatingRates.measure(threadCount, ops, lookups, progress); // warm-up, not counted
        } while (System.nanoTime() < warmupEnd);
        for (int r = 0; r < rounds; r++) {
          note(
              String.format(
                  Locale.ROOT,
                  "metadata, %d thread(s), round %d/%d...",
                  threadCount,
                  r + 1,
                  rounds));
          double[] l = AlternatingRates.measure(threadCount, ops, lookups, progress);
          rawForLookup[r] = l[0];
          noop[r] = l[1];
          lookup[r] = l[2];
          String cdir = createDir + r;
          client.createDirectory(cdir, false);
          double[] c =
              AlternatingRates.measure(
                  threadCount,
                  ops,
                  List.of(
                      (t, i) -> createCloseLike[t].roundTrips(),
                      (t, i) ->
                          client.create(cdir + "/f-" + t + "-" + i, CreateOptions.DEFAULT).close(),
                      (t, i) -> forcedCreateCloseLike[t].roundTrips()),
                  progress);
          rawForCreate[r] = c[0];
          create[r] = c[1];
          forcedForCreate[r] = c[2];
          client.delete(cdir, true);
          if (threadCount == 1) {
            rawCpu[r] = callerCpuMicros(() -> lookupLike[0].roundTrip());
            lookupCpu[r] = callerCpuMicros(() -> client.lookup(target));
          }
        }
      } finally {
        placement.close();
      }
    }
    String th = threads(threadCount);
    // The goal is for one caller: at most twice the ping-pong's time per call.
    String goal = threadCount == 1 ? ">= 0.50" : "";
    figures.add("lookup, " + th, "ops/s", lookup, rawForLookup, goal);
    figures.add("create + close (empty file), " + th, "ops/s", create, rawForCreate, goal);
    figures.add(
        "create + close beside forced round trips, " + th, "ops/s", create, forcedForCreate, "");
    figures.add("no-op RPC, " + th, "ops/s", noop, rawForLookup, "");
    if (threadCount == 1 && CPU.isCurrentThreadCpuTimeSupported()) {
      figures.add("caller CPU per lookup, " + th, "us", lookupCpu, rawCpu, "");
    }
  }

  private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

  /** The polling time of the client's direct calls, which the ping-pong's client matches. */
  private static Duration spinWait(EmberClient client) {
    return client.config().get(ClientKeys.SPIN_WAIT);
  }

  interface Call {
    void call() throws Exception;
  }

  /**
   * CPU time the calling thread spends per call, over {@link #ops} calls made one after another on
   * this thread: what polling for answers costs the caller, beside what sleeping costs.
   */
  private double callerCpuMicros(Call call) throws Exception {
    if (!CPU.isCurrentThreadCpuTimeSupported()) {
      return 0;
    }
    long t0 = CPU.getCurrentThreadCpuTime();
    for (int i = 0; i < ops; i++) {
      call.call();
    }
    return (CPU.getCurrentThreadCpuTime() - t0) / 1e3 / ops;
  }

  private static final String BASELINES =
      "baselines: throughput = raw socket over loopback moving the same bytes in the"
          + " same op size, its server sending from and receiving into direct memory the size of"
          + " the data (receiver CPU: the data node's network threads beside the raw socket's"
          + " server thread, while each takes the written bytes; sender CPU: the writing thread"
          + " with Ember's client network threads, beside the raw socket's writing thread; process"
          + " CPU: every thread of this process while it writes, the name node's and the JIT's"
          + " included; lower is better); metadata = a"
          + " raw TCP ping-pong on loopback (blocking sockets, a server"
          + " thread per connection) of the same request and answer sizes (two for create + close),"
          + " and for create + close a second, whose server writes each request to a file and"
          + " forces it before it answers, as a name node whose journal syncs always does (the"
          + " file sits in this machine's temporary directory, where an in-process name node keeps"
          + " its journal; one force per request, none shared),"
          + " alternated call by call with the measured operation; the no-op RPC is Ember's own"
          + " round trip that does nothing. Metadata calls are the blocking ones (lookup, create,"
          + " close), as an application makes them; with ember.client.spin-wait set, the"
          + " ping-pong's client polls for its answer as long before it sleeps. Caller CPU per"
          + " lookup: the calling thread's CPU time per call, each made right after the last,"
          + " beside the ping-pong's.";

  private String roundsNote() {
    return "figures are medians of "
        + rounds
        + " round(s), after "
        + warmupSeconds
        + " s of warm-up traffic per throughput measure; throughput rounds start with the"
        + " baseline and with Ember in turn.";
  }

  private void printTable() {
    figures.print(out, "measure");
    out.println(BASELINES);
    out.println(roundsNote());
    if (pin.noteLine() != null) {
      out.println(pin.noteLine());
    }
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
