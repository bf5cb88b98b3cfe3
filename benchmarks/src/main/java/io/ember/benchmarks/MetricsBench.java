package io.ember.benchmarks;

import io.ember.benchmarks.LookupsAndTransfers.Figures;
import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.datanode.dram.DramDataNode;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.MiniCluster;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ember bench metrics}: what servers' metrics cost. Two clusters run side by side, one with
 * {@link EmberKeys#METRICS_ENABLED} on (and its {@code /metrics} scraped as Prometheus would, only
 * more often) and one with it off; the rounds take them in turn, in alternating order, and measure
 * one-thread lookups and 1 MiB writes and reads.
 */
@Command(
    name = "metrics",
    mixinStandardHelpOptions = true,
    description = "Benchmark lookups and 1 MiB writes and reads with servers' metrics on and off.")
public final class MetricsBench implements Callable<Integer> {
  private static final int OP = LookupsAndTransfers.OP;

  @Option(
      names = "--scrape-interval",
      defaultValue = "1s",
      description =
          "how often both servers' /metrics are read while metrics are on; 0 never "
              + "(default ${DEFAULT-VALUE}; Prometheus' default is 1m)")
  String scrapeInterval;

  @CommandLine.Mixin RoundOptions round;

  @CommandLine.Mixin ClusterModeOptions modes;

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private PrintWriter progress;
  private long bytes;

  /** One cluster, its client, and the scraper that reads its metrics while it has them. */
  private final class Mode implements AutoCloseable {
    final boolean metrics;
    final MiniCluster cluster;
    final EmberClient client;
    final String lookedUp = "/looked-up";
    final ScheduledExecutorService scraper;
    final AtomicLong scrapes = new AtomicLong();

    /** Whether the scraper reads /metrics now: only while this mode's rounds run. */
    volatile boolean scraping;

    final AtomicLong scrapeFailures = new AtomicLong();

    Mode(boolean metrics, EmberConfig overrides, Duration interval) throws IOException {
      this.metrics = metrics;
      cluster =
          MiniCluster.builder()
              .set(DramDataNodeKeys.CAPACITY, Long.toString(bytes + (64L << 20)))
              .set(EmberKeys.IO_THREADS, "0")
              .config(overrides)
              .set(EmberKeys.METRICS_ENABLED, Boolean.toString(metrics))
              .build();
      EmberClient opened = null;
      try {
        opened = cluster.newClient();
        opened.create(lookedUp, CreateOptions.DEFAULT).close();
      } catch (IOException | RuntimeException e) {
        if (opened != null) {
          opened.close();
        }
        cluster.close();
        throw e;
      }
      client = opened;
      List<URI> targets = new ArrayList<>();
      InetSocketAddress nn = cluster.namenode().httpAddress();
      if (nn != null) {
        targets.add(URI.create("http://127.0.0.1:" + nn.getPort() + "/metrics"));
      }
      for (DramDataNode dn : cluster.datanodes()) {
        if (dn.httpAddress() != null) {
          targets.add(URI.create("http://127.0.0.1:" + dn.httpAddress().getPort() + "/metrics"));
        }
      }
      if (metrics && !interval.isZero() && !targets.isEmpty()) {
        HttpClient http = HttpClient.newHttpClient();
        scraper =
            Executors.newSingleThreadScheduledExecutor(
                r -> {
                  Thread t = new Thread(r, "bench-scraper");
                  t.setDaemon(true);
                  return t;
                });
        // Runs until shutdownNow: scrape() keeps every failure to itself.
        var unused =
            scraper.scheduleWithFixedDelay(
                () -> scrape(http, targets), 0, interval.toNanos(), TimeUnit.NANOSECONDS);
      } else {
        scraper = null;
      }
    }

    private void scrape(HttpClient http, List<URI> targets) {
      if (!scraping) {
        return;
      }
      for (URI u : targets) {
        try {
          HttpResponse<byte[]> r =
              http.send(
                  HttpRequest.newBuilder(u).timeout(Duration.ofSeconds(30)).build(),
                  HttpResponse.BodyHandlers.ofByteArray());
          if (r.statusCode() == 200) {
            scrapes.incrementAndGet();
          } else {
            scrapeFailures.incrementAndGet();
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        } catch (Exception e) {
          scrapeFailures.incrementAndGet();
        }
      }
    }

    String name() {
      return metrics ? "metrics on" : "metrics off";
    }

    @Override
    public void close() {
      if (scraper != null) {
        scraper.shutdownNow();
      }
      client.close();
      cluster.close();
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    progress = spec.commandLine().getErr();
    bytes = modes.bytes(spec, round);
    Duration interval =
        OptionValues.duration(
            spec, "--scrape-interval", scrapeInterval, Duration.ZERO, Duration.ofHours(1));
    EmberConfig overrides = BenchCommand.settings(spec, modes.settings);
    byte[] buf = new byte[OP];
    new java.util.Random(1).nextBytes(buf);
    List<Figures> on = new ArrayList<>();
    List<Figures> off = new ArrayList<>();
    long scrapes;
    long scrapeFailures;
    try (Mode withMetrics = new Mode(true, overrides, interval);
        Mode without = new Mode(false, overrides, interval)) {
      BenchCommand.note(
          progress, "started two clusters of a name node and a DRAM data node: metrics on and off");
      for (Mode m : List.of(withMetrics, without)) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(modes.warmupSeconds);
        int w = 0;
        while (System.nanoTime() < end) {
          BenchCommand.note(
              progress, "warm-up " + ++w + ", " + m.name() + ": " + measure(m, buf, 1).describe());
        }
      }
      withMetrics.scrapes.set(0);
      withMetrics.scrapeFailures.set(0);
      for (int r = 0; r < round.rounds; r++) {
        List<Mode> order =
            r % 2 == 0 ? List.of(withMetrics, without) : List.of(without, withMetrics);
        for (Mode m : order) {
          Figures f = measure(m, buf, round.seconds);
          (m.metrics ? on : off).add(f);
          BenchCommand.note(
              progress,
              String.format(
                  Locale.ROOT, "round %d/%d, %s: %s", r + 1, round.rounds, m.name(), f.describe()));
        }
      }
      scrapes = withMetrics.scrapes.get();
      scrapeFailures = withMetrics.scrapeFailures.get();
    }
    Comparison figures = new Comparison("metrics on", "metrics off", 3);
    LookupsAndTransfers.addRows(figures, "", on, off);
    figures.print(out, "figure");
    String how =
        "ratio: the figure with ember.metrics.enabled=true against false, same run; medians of "
            + round.rounds
            + " rounds ("
            + round.seconds
            + " s of lookups, "
            + ConfigKey.formatSize(bytes)
            + " written and read). /metrics was read "
            + scrapes
            + " times during the rounds with metrics on"
            + (scrapeFailures > 0 ? " (" + scrapeFailures + " reads failed)" : "")
            + ".";
    out.println(how);
    HtmlReport page = report.start(spec, "ember bench metrics: metrics on beside metrics off");
    if (page != null) {
      figures.addTo(page, "ember.metrics.enabled=true against false", "figure");
      page.paragraph(how);
      report.finish(page, progress);
    }
    out.flush();
    return 0;
  }

  /** Lookups for {@code seconds}, then --size written and read back in 1 MiB operations. */
  private Figures measure(Mode m, byte[] buf, int seconds) throws Exception {
    m.scraping = m.scraper != null;
    try {
      return measureScraped(m, buf, seconds);
    } finally {
      m.scraping = false;
    }
  }

  private Figures measureScraped(Mode m, byte[] buf, int seconds) throws Exception {
    return LookupsAndTransfers.measure(m.client, m.lookedUp, buf, bytes, seconds);
  }
}
