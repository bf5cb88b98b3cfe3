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
import java.net.URI;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
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
 * rounds interleaved: the ratio is the adapter's cost. Then one-call operations (getFileStatus,
 * create + close of an empty file, a 4 KiB positional read) through both, each beside a raw TCP
 * ping-pong of the same frame sizes: the ratio is what Ember's calls add to any TCP round trip.
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

  @Option(
      names = "--only",
      defaultValue = "all",
      description = "throughput, metadata or all (default ${DEFAULT-VALUE})")
  String only;

  @Option(
      names = "--ops",
      defaultValue = "5000",
      description = "metadata calls per thread and round (default ${DEFAULT-VALUE})")
  int ops;

  @Option(
      names = "--threads",
      split = ",",
      defaultValue = "1,8",
      description = "threads for getFileStatus (default ${DEFAULT-VALUE})")
  int[] threads;

  @Option(
      names = {"-D", "--set"},
      paramLabel = "KEY=VALUE",
      description =
          "an Ember setting for the cluster started here and both clients (Ember's and Hadoop's),"
              + " e.g. -D ember.client.spin-wait=50us (repeatable)")
  Map<String, String> settings = new TreeMap<>();

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Mixin PinOption pin;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter progress = spec.commandLine().getErr();
    int op = 1 << 20;
    long bytes = OptionValues.size(spec, "--size", size, op, Long.MAX_VALUE);
    if (rounds < 1 || ops < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--rounds and --ops must be positive");
    }
    if (!List.of("all", "throughput", "metadata").contains(only)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--only is throughput, metadata or all, not '" + only + "'");
    }
    EmberConfig overrides = BenchCommand.settings(spec, settings);
    MiniCluster cluster = null;
    EmberConfig config;
    if (namenode == null) {
      cluster =
          MiniCluster.builder()
              .set(DramDataNodeKeys.CAPACITY, Long.toString(bytes + (64L << 20)))
              .set(EmberKeys.IO_THREADS, "0")
              .config(overrides)
              .build();
      config = cluster.config();
      progress.println("bench: started an in-process cluster at " + cluster.namenodeAddress());
    } else {
      config = overrides.with(EmberKeys.NAMENODE_ADDRESS, namenode);
    }
    double[] ew = new double[rounds];
    double[] er = new double[rounds];
    double[] hw = new double[rounds];
    double[] hr = new double[rounds];
    byte[] buf = new byte[op];
    new java.util.Random(2).nextBytes(buf);
    long opsPerFile = bytes / op;
    String address = config.get(EmberKeys.NAMENODE_ADDRESS);
    try (EmberClient client = EmberClient.connect(config);
        FileSystem fs =
            FileSystem.newInstance(URI.create("ember://" + address + "/"), hadoopConf())) {
      String dir = "/bench-hadoop-" + System.nanoTime();
      client.createDirectory(dir, true);
      try {
        if (!only.equals("throughput")) {
          metadata(client, fs, dir, progress);
        }
        long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
        for (int round = -1; round < (only.equals("metadata") ? -1 : rounds); round++) {
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
            for (long i = 0; i < opsPerFile; i++) {
              o.write(buf);
            }
          }
          long t1 = System.nanoTime();
          try (EmberInputStream in = client.open(ep)) {
            for (long i = 0; i < opsPerFile; i++) {
              in.readNBytes(buf, 0, op);
            }
          }
          long t2 = System.nanoTime();
          client.delete(ep, false);
          ew[r] = BenchCommand.mibPerSec(opsPerFile * op, t1 - t0);
          er[r] = BenchCommand.mibPerSec(opsPerFile * op, t2 - t1);

          progress.printf(Locale.ROOT, "bench: %s: Hadoop API...%n", label);
          progress.flush();
          Path hp = new Path(dir + "/hadoop-" + r);
          long t3 = System.nanoTime();
          try (FSDataOutputStream o = fs.create(hp, false)) {
            for (long i = 0; i < opsPerFile; i++) {
              o.write(buf);
            }
          }
          long t4 = System.nanoTime();
          try (FSDataInputStream in = fs.open(hp)) {
            for (long i = 0; i < opsPerFile; i++) {
              in.readFully(buf, 0, op);
            }
          }
          long t5 = System.nanoTime();
          fs.delete(hp, false);
          hw[r] = BenchCommand.mibPerSec(opsPerFile * op, t4 - t3);
          hr[r] = BenchCommand.mibPerSec(opsPerFile * op, t5 - t4);
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
    String measure = "measure (" + ConfigKey.formatSize(bytes) + " file, 1 MiB ops)";
    String how =
        "figures are medians of "
            + rounds
            + " round(s) after "
            + warmupSeconds
            + " s of warm-up; both use buffered streams.";
    if (!only.equals("metadata")) {
      figures.add("sequential write", "MiB/s", hw, ew, ">= 0.90");
      figures.add("sequential read", "MiB/s", hr, er, ">= 0.90");
      figures.print(out, measure);
      out.println(how);
    }
    if (!only.equals("throughput")) {
      calls.print(out, "call (rate)");
      out.println(CALLS);
      if (pin.noteLine() != null) {
        out.println(pin.noteLine());
      }
    }
    HtmlReport page = report.start(spec, "ember bench hadoop: Hadoop's API beside Ember's client");
    if (page != null) {
      if (!only.equals("metadata")) {
        figures.addTo(page, "Hadoop FileSystem over ember://", measure);
        page.paragraph(how);
      }
      if (!only.equals("throughput")) {
        calls.addTo(page, "Calls beside a raw TCP ping-pong", "call (rate)");
        page.paragraph(CALLS);
      }
      report.finish(page, progress);
    }
    out.flush();
    return 0;
  }

  private static final String CALLS =
      "baseline: a raw TCP ping-pong on loopback (blocking sockets, a server thread per"
          + " connection) with the request and answer sizes of the call's frames (two ping-pongs"
          + " for create + close, whose goal is two round trips), alternated call by call with"
          + " the Hadoop API's and Ember's own calls; medians of the rounds. The goal: a call at"
          + " most twice the ping-pong's time.";

  private final Comparison calls = new Comparison("Ember", "ping-pong", 2);

  /**
   * Rates of one-call operations through Hadoop's API and Ember's own client, each beside a raw
   * ping-pong of its frames' sizes, alternated call by call.
   */
  private void metadata(EmberClient client, FileSystem fs, String dir, PrintWriter progress)
      throws Exception {
    String target = dir + "/status";
    byte[] block = new byte[1 << 20];
    new java.util.Random(3).nextBytes(block);
    try (EmberOutputStream o = client.createBuffered(target, CreateOptions.DEFAULT)) {
      o.write(block);
    }
    NodeStatus status = client.lookup(target);
    BlockLocation location = client.blockLocations(target).get(0);
    int lookupAsk = PingPongBaseline.frameBytes(new Messages.PathRequest(target));
    int statusAnswer = PingPongBaseline.frameBytes(status);
    int readAsk = PingPongBaseline.frameBytes(Messages.BlockReadRequest.of(location, 0, READ_SIZE));
    int readAnswer = 4 + io.ember.protocol.Frame.HEADER_BYTES + READ_SIZE;
    try (PingPongBaseline pingPong =
            new PingPongBaseline(client.config().get(ClientKeys.SPIN_WAIT));
        EmberInputStream emberIn = client.open(target);
        FSDataInputStream hadoopIn = fs.open(new Path(target))) {
      // The ping-pong's server threads start later, from its acceptor, on the servers' CPUs.
      ThreadPlacement placement = pin.place(progress);
      try {
        for (int threadCount : threads) {
          PingPongBaseline.Connection[] lookupLike = new PingPongBaseline.Connection[threadCount];
          for (int t = 0; t < threadCount; t++) {
            lookupLike[t] = pingPong.connect(lookupAsk, statusAnswer);
          }
          Path hadoopTarget = new Path(target);
          List<AlternatingRates.Op> statusOps =
              List.of(
                  (t, i) -> lookupLike[t].roundTrip(),
                  (t, i) -> fs.getFileStatus(hadoopTarget),
                  (t, i) -> client.lookup(target));
          measure(
              progress,
              "getFileStatus",
              threadCount,
              statusOps,
              "getFileStatus (Hadoop API)",
              "lookup (Ember client)");
        }
        PingPongBaseline.CreateClose createCloseLike =
            pingPong.connectCreateClose(dir + "/h/f-0", client.leaseHolder(), status, location);
        Path hadoopDir = new Path(dir + "/h");
        String emberDir = dir + "/e";
        client.createDirectory(emberDir, false);
        fs.mkdirs(hadoopDir);
        measure(
            progress,
            "create + close",
            1,
            List.of(
                (t, i) -> createCloseLike.roundTrips(),
                (t, i) -> fs.create(new Path(hadoopDir, "f-" + i), true).close(),
                (t, i) ->
                    client
                        .create(emberDir + "/f-" + i, CreateOptions.DEFAULT.withOverwrite(true))
                        .close()),
            "create + close, empty file (Hadoop API)",
            "create + close, empty file (Ember client)");
        PingPongBaseline.Connection readLike = pingPong.connect(readAsk, readAnswer);
        byte[] hadoopBuf = new byte[READ_SIZE];
        byte[] emberBuf = new byte[READ_SIZE];
        int positions = (block.length - READ_SIZE) / READ_SIZE;
        measure(
            progress,
            "4 KiB positional read",
            1,
            List.of(
                (t, i) -> readLike.roundTrip(),
                (t, i) ->
                    hadoopIn.readFully((long) (i % positions) * READ_SIZE, hadoopBuf, 0, READ_SIZE),
                (t, i) ->
                    emberIn.readFully((long) (i % positions) * READ_SIZE, emberBuf, 0, READ_SIZE)),
            "4 KiB positional read (Hadoop API)",
            "4 KiB positional read (Ember client)");
      } finally {
        placement.close();
      }
    }
  }

  private static final int READ_SIZE = 4096;

  /** Measures a ping-pong and two calls in turns over rounds, and adds both calls' rows. */
  private void measure(
      PrintWriter progress,
      String what,
      int threadCount,
      List<AlternatingRates.Op> turns,
      String hadoopRow,
      String emberRow)
      throws Exception {
    double[] raw = new double[rounds];
    double[] hadoop = new double[rounds];
    double[] ember = new double[rounds];
    String th = BenchCommand.threads(threadCount);
    BenchCommand.note(progress, what + ", " + th + ": warm-up...");
    AlternatingRates.measure(threadCount, Math.max(1, ops / 4), turns, progress);
    for (int r = 0; r < rounds; r++) {
      BenchCommand.note(
          progress, String.format(Locale.ROOT, "%s, %s: round %d/%d...", what, th, r + 1, rounds));
      double[] rates = AlternatingRates.measure(threadCount, ops, turns, progress);
      raw[r] = rates[0];
      hadoop[r] = rates[1];
      ember[r] = rates[2];
    }
    String goal = threadCount == 1 ? ">= 0.50" : "";
    calls.add(hadoopRow + ", " + th, "calls/s", hadoop, raw, goal);
    calls.add(emberRow + ", " + th, "calls/s", ember, raw, goal);
  }

  /** Hadoop's configuration, with the {@code -D} settings for the Ember file system it opens. */
  private Configuration hadoopConf() {
    Configuration conf = new Configuration();
    settings.forEach(conf::set);
    return conf;
  }
}
