package io.ember.benchmarks;

import io.ember.benchmarks.report.Charts;
import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import io.ember.protocol.NodeType;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ember bench journal}: what the name node's journal costs and how fast a restart is. Empty
 * files are created and closed through the client (create, first block, close: three journaled
 * changes each) against name nodes whose journal syncs {@code always}, {@code batch} and {@code
 * none}, each its own cluster, the modes taken in turn and in alternating order, so drift hits all
 * alike; {@code none} is the baseline. Then a name node with --files files restarts twice: once
 * replaying a journal of that many changes, once loading a checkpoint of that many files.
 */
@Command(
    name = "journal",
    mixinStandardHelpOptions = true,
    description =
        "Benchmark create+close with the journal's sync modes, and name node restart time.")
public final class JournalBench implements Callable<Integer> {
  @Option(
      names = "--threads",
      split = ",",
      defaultValue = "1,8",
      description = "client threads creating files (default ${DEFAULT-VALUE})")
  int[] threads;

  @CommandLine.Mixin RoundOptions round;

  @Option(
      names = "--warmup",
      defaultValue = "5",
      description = "seconds of unmeasured creates per mode first (default ${DEFAULT-VALUE})")
  int warmupSeconds;

  @Option(
      names = "--files",
      defaultValue = "1000000",
      description =
          "files (and journal records) of the restart measurement; 0 skips it (default"
              + " ${DEFAULT-VALUE})")
  int files;

  @Option(
      names = {"-D", "--set"},
      paramLabel = "KEY=VALUE",
      description = "an Ember setting for the clusters started here (repeatable)")
  Map<String, String> settings = new TreeMap<>();

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private PrintWriter progress;

  private static final String[] MODES = {"none", "batch", "always"};

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    progress = spec.commandLine().getErr();
    if (round.rounds < 1 || round.seconds < 1 || warmupSeconds < 0 || files < 0) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--rounds and --seconds must be positive");
    }
    EmberConfig overrides = BenchCommand.settings(spec, settings);
    List<String[]> rows = new ArrayList<>();
    List<String> categories = new ArrayList<>();
    Map<String, List<double[]>> perMode = new LinkedHashMap<>();
    List<MiniCluster> clusters = new ArrayList<>();
    List<List<EmberClient>> clients = new ArrayList<>();
    int maxThreads = Arrays.stream(threads).max().orElse(8);
    try {
      for (String mode : MODES) {
        MiniCluster c =
            MiniCluster.builder()
                .dramDatanodes(1)
                .set(DramDataNodeKeys.CAPACITY, "64m")
                .set(EmberKeys.IO_THREADS, "0")
                .config(overrides)
                .set(NameNodeKeys.JOURNAL_SYNC, mode)
                .build();
        clusters.add(c);
        List<EmberClient> cs = new ArrayList<>();
        for (int i = 0; i < Math.min(maxThreads, 8); i++) {
          cs.add(c.newClient());
        }
        clients.add(cs);
      }
      BenchCommand.note(
          progress,
          "started " + MODES.length + " clusters (journal sync " + String.join(", ", MODES) + ")");
      for (int m = 0; m < MODES.length; m++) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmupSeconds);
        for (int w = 0; System.nanoTime() < end; w++) {
          double rate = round(clients.get(m), maxThreads, "warmup-" + w);
          BenchCommand.note(
              progress,
              String.format(Locale.ROOT, "warm-up, sync=%s: %.0f files/s", MODES[m], rate));
        }
      }
      for (int t : threads) {
        categories.add(BenchCommand.threads(t));
        double[][] rates = new double[MODES.length][round.rounds];
        for (int r = 0; r < round.rounds; r++) {
          for (int k = 0; k < MODES.length; k++) {
            int i = r % 2 == 0 ? k : MODES.length - 1 - k;
            rates[i][r] = round(clients.get(i), t, t + "-" + r);
            BenchCommand.note(
                progress,
                String.format(
                    Locale.ROOT,
                    "%d threads, round %d/%d, sync=%s: %.0f files/s",
                    t,
                    r + 1,
                    round.rounds,
                    MODES[i],
                    rates[i][r]));
          }
        }
        for (int i = 0; i < rates.length; i++) {
          perMode.computeIfAbsent(MODES[i], k -> new ArrayList<>()).add(rates[i]);
        }
        double baseline = Charts.median(rates[0]);
        for (int i = 0; i < MODES.length; i++) {
          double median = Charts.median(rates[i]);
          rows.add(
              new String[] {
                Integer.toString(t),
                MODES[i],
                BenchCommand.fmt(median),
                String.format(Locale.ROOT, "%.2f", median / baseline)
              });
        }
      }
    } finally {
      clients.forEach(cs -> cs.forEach(EmberClient::close));
      clusters.forEach(MiniCluster::close);
    }
    String f = "%-8s %-12s %14s %7s%n";
    List<String> headers = List.of("threads", "journal sync", "create+close/s", "ratio");
    out.printf(Locale.ROOT, f, headers.toArray());
    for (String[] row : rows) {
      out.printf(Locale.ROOT, f, (Object[]) row);
    }
    String how =
        "ratio: files created and closed per second against sync=none with the same threads, in"
            + " the same run; medians of "
            + round.rounds
            + " round(s) of "
            + round.seconds
            + " s.";
    out.println(how);
    HtmlReport page =
        report.start(spec, "ember bench journal: the cost of the name node's journal sync");
    if (page != null) {
      String title = "Files created and closed per second by journal sync";
      page.heading(title)
          .table(headers, rows.stream().map(List::of).toList())
          .chart(
              Charts.beside(title, "create+close/s", categories, perMode),
              Charts.spreadCaption(round.rounds + " round(s)"))
          .paragraph(how);
    }
    if (files > 0) {
      String restart = restart(overrides);
      out.println(restart);
      if (page != null) {
        page.heading("Restarting a name node").paragraph(restart);
      }
    }
    report.finish(page, progress);
    out.flush();
    return 0;
  }

  /** Creates and closes empty files with {@code threadCount} threads; returns files/s. */
  private double round(List<EmberClient> cs, int threadCount, String tag) throws Exception {
    EmberClient admin = cs.get(0);
    String dir = "/bench-" + tag;
    admin.createDirectory(dir, false);
    long[] counts = new long[threadCount];
    AtomicReference<Exception> failure = new AtomicReference<>();
    CountDownLatch go = new CountDownLatch(1);
    Thread[] ts = new Thread[threadCount];
    long[] start = new long[1];
    for (int t = 0; t < threadCount; t++) {
      int id = t;
      EmberClient c = cs.get(t % cs.size());
      ts[t] =
          new Thread(
              () -> {
                try {
                  go.await();
                  long end = start[0] + TimeUnit.SECONDS.toNanos(round.seconds);
                  long n = 0;
                  while (System.nanoTime() - end < 0) {
                    c.create(dir + "/f-" + id + "-" + n, CreateOptions.DEFAULT).close();
                    n++;
                  }
                  counts[id] = n;
                } catch (Exception e) {
                  failure.compareAndSet(null, e);
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
    if (failure.get() != null) {
      throw failure.get();
    }
    admin.delete(dir, true);
    return Arrays.stream(counts).sum() / ((stop - start[0]) / 1e9);
  }

  /** Restart times: replaying a journal of --files creates, then loading a checkpoint of them. */
  private String restart(EmberConfig overrides) throws Exception {
    try (MiniCluster c =
        MiniCluster.builder()
            .dramDatanodes(1)
            .set(DramDataNodeKeys.CAPACITY, "16m")
            .config(overrides)
            .set(NameNodeKeys.JOURNAL_SYNC, "none")
            .set(NameNodeKeys.CHECKPOINT_RECORDS, Integer.toString(Integer.MAX_VALUE))
            .set(NameNodeKeys.CHECKPOINT_INTERVAL, "24h")
            .build()) {
      try (EmberClient client = c.newClient()) {
        int dirs = Math.max(1, files / 1000);
        for (int d = 0; d < dirs; d++) {
          client.createDirectory("/r/d" + d, true);
        }
        // Creates in flight at once: enough to keep the name node busy, few enough to bound memory.
        int inFlight = 256;
        Semaphore window = new Semaphore(inFlight);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long started = System.nanoTime();
        for (int i = 0; i < files; i++) {
          window.acquire();
          CompletableFuture<?> f =
              client.createAsync(
                  "/r/d" + (i % dirs) + "/f" + i, NodeType.FILE, CreateOptions.DEFAULT);
          var unused =
              f.whenComplete(
                  (v, e) -> {
                    if (e != null) {
                      failure.compareAndSet(null, e);
                    }
                    window.release();
                  });
          if (i % 100_000 == 0 && i > 0) {
            BenchCommand.note(
                progress,
                String.format(
                    Locale.ROOT,
                    "restart: %d of %d files created (%.0f/s)",
                    i,
                    files,
                    i / ((System.nanoTime() - started) / 1e9)));
          }
        }
        window.acquire(inFlight);
        if (failure.get() != null) {
          throw new IllegalStateException("creating files failed", failure.get());
        }
      }
      BenchCommand.note(progress, "restart: replaying a journal of " + files + " creates");
      long replayStart = System.nanoTime();
      c.restartNamenode();
      long replay = System.nanoTime() - replayStart;
      BenchCommand.note(progress, "restart: writing a checkpoint of " + files + " files");
      long checkpointStart = System.nanoTime();
      c.namenode().checkpoint();
      long checkpoint = System.nanoTime() - checkpointStart;
      long loadStart = System.nanoTime();
      c.restartNamenode();
      long load = System.nanoTime() - loadStart;
      try (EmberClient client = c.newClient()) {
        if (client.list("/r/d0").isEmpty()) {
          throw new IllegalStateException("the restarted name node lost its files");
        }
      }
      return String.format(
          Locale.ROOT,
          "restart with %d files: replay of a journal of %d creates %.2f s; load of a checkpoint"
              + " of them %.2f s (writing it took %.2f s). Each includes stopping the old name"
              + " node.",
          files,
          files,
          replay / 1e9,
          load / 1e9,
          checkpoint / 1e9);
    }
  }
}
