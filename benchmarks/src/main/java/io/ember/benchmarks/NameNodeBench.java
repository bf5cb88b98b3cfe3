package io.ember.benchmarks;

import io.ember.benchmarks.report.Charts;
import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberException;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.Futures;
import io.ember.protocol.HostPort;
import io.ember.protocol.MessageType;
import io.ember.protocol.Messages;
import io.ember.protocol.NodeType;
import io.ember.protocol.RpcClients;
import io.ember.protocol.StorageClass;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ember bench namenode}: the name node's create rate with its requests run on its network
 * threads ({@link NameNodeKeys#HANDLER_THREADS} 0, the baseline) and on handler pools, in the same
 * run. Each mode has a cluster of its own (a name node and DRAM data nodes heartbeating), all
 * started at once; the rounds take the modes in turn, in alternating order, so drift on a shared
 * machine hits all alike. Client threads create empty files, each waiting for its answer, over a
 * few connections. A probe data node heartbeats beside them and its heartbeats' round trips are
 * reported too: heartbeats take the name node's write lock, as creates do.
 */
@Command(
    name = "namenode",
    mixinStandardHelpOptions = true,
    description =
        "Benchmark name node creates with requests on the network threads and on "
            + "handler pools.")
public final class NameNodeBench implements Callable<Integer> {
  @Option(
      names = "--threads",
      split = ",",
      defaultValue = "8,64",
      description = "client threads creating files (default ${DEFAULT-VALUE})")
  int[] threads;

  @Option(
      names = "--handler-threads",
      split = ",",
      defaultValue = "4",
      description =
          "handler pool sizes measured against the network threads " + "(default ${DEFAULT-VALUE})")
  int[] handlerThreads;

  @Option(
      names = "--clients",
      defaultValue = "8",
      description = "client connections the threads share (default ${DEFAULT-VALUE})")
  int clients;

  @Option(
      names = "--datanodes",
      defaultValue = "4",
      description = "DRAM data nodes heartbeating to each name node (default ${DEFAULT-VALUE})")
  int datanodes;

  @CommandLine.Mixin RoundOptions round;

  @Option(
      names = "--warmup",
      defaultValue = "10",
      description =
          "seconds of unmeasured creates per mode first, so the JIT has compiled "
              + "every path (default ${DEFAULT-VALUE})")
  int warmupSeconds;

  @Option(
      names = {"-D", "--set"},
      paramLabel = "KEY=VALUE",
      description =
          "an Ember setting "
              + "for the clusters started here and their clients (repeatable); the defaults here: "
              + "ember.rpc.io-threads=0, ember.datanode.heartbeat-interval=100ms, "
              + "ember.namenode.datanode-timeout=10s")
  Map<String, String> settings = new TreeMap<>();

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private PrintWriter progress;

  /** One name node configuration, its cluster, its clients and its heartbeat probe. */
  private final class Mode implements AutoCloseable {
    final int handlers;
    final MiniCluster cluster;
    final List<EmberClient> connections = new ArrayList<>();
    final HeartbeatProbe probe;

    Mode(int handlers, EmberConfig overrides) throws EmberException {
      this.handlers = handlers;
      cluster =
          MiniCluster.builder()
              .dramDatanodes(datanodes)
              .set(DramDataNodeKeys.CAPACITY, "16m")
              .set(EmberKeys.IO_THREADS, "0")
              .set(EmberKeys.HEARTBEAT_INTERVAL, "100ms")
              .set(NameNodeKeys.DATANODE_TIMEOUT, "10s")
              // The heartbeat probe registers an address where nothing listens.
              .set(NameNodeKeys.PROBE_DATANODES, "false")
              .config(overrides)
              .set(NameNodeKeys.HANDLER_THREADS, Integer.toString(handlers))
              .build();
      try {
        for (int i = 0; i < clients; i++) {
          connections.add(cluster.newClient());
        }
        probe = new HeartbeatProbe(cluster.config(), cluster.namenodeAddress());
      } catch (EmberException | RuntimeException e) {
        cluster.close();
        throw e;
      }
    }

    String name() {
      return handlers == 0 ? "network threads" : handlers + " handler threads";
    }

    @Override
    public void close() {
      probe.close();
      cluster.close();
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    progress = spec.commandLine().getErr();
    if (round.rounds < 1
        || round.seconds < 1
        || clients < 1
        || datanodes < 0
        || warmupSeconds < 0
        || Arrays.stream(threads).anyMatch(t -> t < 1)
        || Arrays.stream(handlerThreads).anyMatch(h -> h < 1)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--rounds, --seconds, " + "--clients, --threads and --handler-threads must be positive");
    }
    EmberConfig overrides = BenchCommand.settings(spec, settings);
    List<Mode> modes = new ArrayList<>();
    List<String[]> rows = new ArrayList<>();
    List<String> categories = new ArrayList<>();
    Map<String, List<double[]>> perMode = new LinkedHashMap<>();
    try {
      modes.add(new Mode(0, overrides));
      for (int h : handlerThreads) {
        modes.add(new Mode(h, overrides));
      }
      BenchCommand.note(
          progress,
          "started "
              + modes.size()
              + " clusters of a name node and "
              + datanodes
              + " DRAM data nodes, "
              + clients
              + " client connections each");
      for (Mode m : modes) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmupSeconds);
        int w = 0;
        while (System.nanoTime() < end) {
          double rate = round(m, Arrays.stream(threads).max().orElse(8), "warmup-" + w++);
          BenchCommand.note(
              progress, String.format(Locale.ROOT, "warm-up, %s: %.0f creates/s", m.name(), rate));
        }
      }
      for (int t : threads) {
        categories.add(BenchCommand.threads(t));
        double[][] rates = new double[modes.size()][round.rounds];
        List<List<Long>> beats = new ArrayList<>();
        modes.forEach(m -> beats.add(new ArrayList<>()));
        for (int r = 0; r < round.rounds; r++) {
          for (int k = 0; k < modes.size(); k++) {
            int i = r % 2 == 0 ? k : modes.size() - 1 - k;
            Mode m = modes.get(i);
            m.probe.record(true);
            rates[i][r] = round(m, t, t + "-" + r);
            beats.get(i).addAll(m.probe.record(false));
            BenchCommand.note(
                progress,
                String.format(
                    Locale.ROOT,
                    "%d threads, round %d/%d, %s: %.0f creates/s",
                    t,
                    r + 1,
                    round.rounds,
                    m.name(),
                    rates[i][r]));
          }
        }
        for (int i = 0; i < rates.length; i++) {
          perMode.computeIfAbsent(modes.get(i).name(), k -> new ArrayList<>()).add(rates[i]);
        }
        double baseline = Charts.median(rates[0]);
        for (int i = 0; i < modes.size(); i++) {
          double median = Charts.median(rates[i]);
          List<Long> b = beats.get(i);
          Collections.sort(b);
          rows.add(
              new String[] {
                Integer.toString(t),
                modes.get(i).name(),
                BenchCommand.fmt(median),
                String.format(Locale.ROOT, "%.2f", median / baseline),
                b.isEmpty() ? "-" : millis(b.get((int) Math.min(b.size() - 1, b.size() * 0.99))),
                b.isEmpty() ? "-" : millis(b.get(b.size() - 1))
              });
        }
      }
    } finally {
      for (Mode m : modes) {
        m.close();
      }
    }
    String f = "%-8s %-20s %12s %7s %15s %15s%n";
    List<String> headers =
        List.of(
            "threads", "requests run on", "creates/s", "ratio", "heartbeat p99", "heartbeat max");
    out.printf(Locale.ROOT, f, headers.toArray());
    for (String[] row : rows) {
      out.printf(Locale.ROOT, f, (Object[]) row);
    }
    String how =
        "ratio: creates/s against the network threads (ember.namenode.handler-threads=0)"
            + " with the same client threads, in the same run; medians of "
            + round.rounds
            + " round(s) of "
            + round.seconds
            + " s. Heartbeat: round trips of a probe data node's heartbeats (every 100 ms)"
            + " during the rounds.";
    out.println(how);
    HtmlReport page = report.start(spec, "ember bench namenode: where the name node runs requests");
    if (page != null) {
      String title = "Creates per second by where requests run";
      page.heading(title)
          .table(headers, rows.stream().map(List::of).toList())
          .chart(
              Charts.beside(title, "creates/s", categories, perMode),
              Charts.spreadCaption(round.rounds + " round(s)"))
          .paragraph(how);
      report.finish(page, progress);
    }
    out.flush();
    return 0;
  }

  private static String millis(long nanos) {
    return String.format(Locale.ROOT, "%.2f ms", nanos / 1e6);
  }

  /** Creates empty files with {@code threadCount} threads for --seconds; returns creates/s. */
  private double round(Mode m, int threadCount, String tag) throws Exception {
    EmberClient admin = m.connections.get(0);
    String dir = "/bench-" + tag;
    admin.createDirectory(dir, false);
    long[] counts = new long[threadCount];
    AtomicInteger failures = new AtomicInteger();
    CountDownLatch go = new CountDownLatch(1);
    Thread[] ts = new Thread[threadCount];
    long[] start = new long[1];
    for (int t = 0; t < threadCount; t++) {
      int id = t;
      EmberClient c = m.connections.get(t % m.connections.size());
      ts[t] =
          new Thread(
              () -> {
                try {
                  go.await();
                  long end = start[0] + TimeUnit.SECONDS.toNanos(round.seconds);
                  long n = 0;
                  while (System.nanoTime() - end < 0) {
                    c.createAsync(dir + "/f-" + id + "-" + n, NodeType.FILE, CreateOptions.DEFAULT)
                        .join();
                    n++;
                  }
                  counts[id] = n;
                } catch (Exception e) {
                  failures.incrementAndGet();
                  progress.println("bench: " + e.getMessage());
                }
              },
              "bench-create-" + t);
      ts[t].start();
    }
    start[0] = System.nanoTime();
    go.countDown();
    for (Thread t : ts) {
      t.join();
    }
    long stop = System.nanoTime();
    if (failures.get() > 0) {
      throw new IllegalStateException(failures.get() + " benchmark thread(s) failed");
    }
    long total = Arrays.stream(counts).sum();
    admin.delete(dir, true);
    return total / ((stop - start[0]) / 1e9);
  }

  /**
   * A data node of no capacity that heartbeats every 100 ms on its own connection and times each
   * round trip while recording.
   */
  private static final class HeartbeatProbe implements AutoCloseable {
    private final RpcClients rpc;
    private final HostPort namenode;
    private final ScheduledExecutorService timer;

    /** The heartbeats, cancelled on close. */
    private final java.util.concurrent.ScheduledFuture<?> beating;

    private final List<Long> samples = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean recording;
    private volatile int id;

    HeartbeatProbe(EmberConfig config, HostPort namenode) throws EmberException {
      this.rpc = new RpcClients(config, "bench-heartbeat-probe", 1);
      this.namenode = namenode;
      try {
        register();
      } catch (EmberException e) {
        rpc.close();
        throw e;
      }
      timer =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "bench-heartbeat-probe");
                t.setDaemon(true);
                return t;
              });
      beating = timer.scheduleWithFixedDelay(this::beat, 100, 100, TimeUnit.MILLISECONDS);
    }

    private void register() throws EmberException {
      id =
          Futures.await(
                  rpc.get(namenode, "name node")
                      .thenCompose(
                          c ->
                              c.call(
                                  MessageType.REGISTER_DATANODE,
                                  new Messages.RegisterRequest(
                                      StorageClass.DRAM, "probe", "127.0.0.1:1", 0, false),
                                  Messages.RegisterResponse::decode)))
              .datanodeId();
    }

    private void beat() {
      long t0 = System.nanoTime();
      try {
        Futures.await(
            rpc.get(namenode, "name node")
                .thenCompose(
                    c ->
                        c.call(
                            MessageType.HEARTBEAT,
                            new Messages.HeartbeatRequest(id),
                            Messages.HeartbeatResponse::decode)));
        if (recording) {
          samples.add(System.nanoTime() - t0);
        }
      } catch (EmberException e) {
        try {
          register(); // marked lost under load, say: the figures go on without this beat
        } catch (EmberException again) {
          // the next beat tries again
        }
      }
    }

    /** Starts recording, or stops and returns the round trips recorded, in nanoseconds. */
    List<Long> record(boolean on) {
      recording = on;
      if (on) {
        return List.of();
      }
      synchronized (samples) {
        List<Long> out = new ArrayList<>(samples);
        samples.clear();
        return out;
      }
    }

    @Override
    public void close() {
      beating.cancel(false);
      timer.shutdownNow();
      try {
        timer.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      rpc.close();
    }
  }

  /** Runs the bench on its own. */
  public static void main(String[] args) {
    System.exit(new CommandLine(new NameNodeBench()).execute(args));
  }
}
