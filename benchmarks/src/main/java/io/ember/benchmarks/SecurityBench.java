package io.ember.benchmarks;

import io.ember.benchmarks.LookupsAndTransfers.Figures;
import io.ember.benchmarks.report.HtmlReport;
import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.datanode.dram.DramDataNodeKeys;
import io.ember.minicluster.DevCertificates;
import io.ember.minicluster.MiniCluster;
import io.ember.namenode.Credentials;
import io.ember.namenode.NameNodeKeys;
import io.ember.protocol.ConfigKey;
import io.ember.protocol.EmberConfig;
import io.ember.protocol.EmberKeys;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code ember bench security}: what security costs. Three clusters run side by side: without
 * security, with password users (SCRAM: authentication, permissions and block tokens, plain bytes)
 * and with mutual TLS (the same, encrypted); the rounds take them in turn, in rotating order, and
 * measure one-thread lookups and 1 MiB writes and reads as an ordinary user, each as a ratio
 * against the cluster without security.
 */
@Command(
    name = "security",
    mixinStandardHelpOptions = true,
    description =
        "Benchmark lookups and 1 MiB writes and reads without security, with password users"
            + " (SCRAM, with permissions and block tokens) and with mutual TLS.")
public final class SecurityBench implements Callable<Integer> {
  @CommandLine.Mixin RoundOptions round;

  @CommandLine.Mixin ClusterModeOptions modes;

  @CommandLine.Mixin ReportOption report;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  private static final String LOOKED_UP = "/looked-up";

  /** One cluster and its client, an ordinary user's. */
  private record Mode(String name, MiniCluster cluster, EmberClient client)
      implements AutoCloseable {
    static Mode start(String name, long bytes, EmberConfig servers, EmberConfig user)
        throws IOException {
      MiniCluster cluster =
          MiniCluster.builder()
              .set(DramDataNodeKeys.CAPACITY, Long.toString(bytes + (64L << 20)))
              .set(EmberKeys.IO_THREADS, "0")
              .config(servers)
              .build();
      try {
        EmberClient client = cluster.newClient(user);
        client.create(LOOKED_UP, CreateOptions.DEFAULT).close();
        return new Mode(name, cluster, client);
      } catch (IOException | RuntimeException e) {
        cluster.close();
        throw e;
      }
    }

    @Override
    public void close() {
      client.close();
      cluster.close();
    }
  }

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter progress = spec.commandLine().getErr();
    long bytes = modes.bytes(spec, round);
    EmberConfig overrides = BenchCommand.settings(spec, modes.settings);
    Path dir = Files.createTempDirectory("ember-bench-security");
    byte[] buf = new byte[LookupsAndTransfers.OP];
    new java.util.Random(1).nextBytes(buf);
    Map<String, List<Figures>> figures = new TreeMap<>();
    List<Mode> clusters = new ArrayList<>();
    try {
      // Credentials and certificates of the bench's own: a node identity and an ordinary user.
      Path credentials = dir.resolve("credentials");
      Credentials.addUser(credentials, "node", "node-password");
      Credentials.addUser(credentials, "bench", "bench-password");
      DevCertificates ca = DevCertificates.openOrCreate(dir.resolve("tls"));
      ca.issue("node", List.of("localhost", "127.0.0.1"));
      ca.issue("bench", List.of());
      EmberConfig scram =
          overrides
              .with(EmberKeys.SCRAM, "true")
              .with(NameNodeKeys.CREDENTIALS, credentials.toString());
      EmberConfig tls =
          overrides.with(EmberKeys.TLS, "true").with(EmberKeys.TLS_CA, ca.caFile().toString());
      clusters.add(Mode.start("off", bytes, overrides, EmberConfig.defaults()));
      clusters.add(
          Mode.start(
              "scram",
              bytes,
              scram.with(EmberKeys.USER, "node").with(EmberKeys.PASSWORD, "node-password"),
              EmberConfig.defaults()
                  .with(EmberKeys.USER, "bench")
                  .with(EmberKeys.PASSWORD, "bench-password")));
      clusters.add(
          Mode.start(
              "tls",
              bytes,
              tls.with(EmberKeys.TLS_CERTIFICATE, ca.certificateFile("node").toString())
                  .with(EmberKeys.TLS_KEY, ca.keyFile("node").toString()),
              EmberConfig.defaults()
                  .with(EmberKeys.TLS_CERTIFICATE, ca.certificateFile("bench").toString())
                  .with(EmberKeys.TLS_KEY, ca.keyFile("bench").toString())));
      BenchCommand.note(
          progress,
          "started three clusters of a name node and a DRAM data node: security off, password"
              + " users (SCRAM) and mutual TLS; the client is an ordinary user");
      for (Mode m : clusters) {
        figures.put(m.name(), new ArrayList<>());
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(modes.warmupSeconds);
        int w = 0;
        while (System.nanoTime() < end) {
          Figures f = LookupsAndTransfers.measure(m.client(), LOOKED_UP, buf, bytes, 1);
          BenchCommand.note(progress, "warm-up " + ++w + ", " + m.name() + ": " + f.describe());
        }
      }
      for (int r = 0; r < round.rounds; r++) {
        List<Mode> order = new ArrayList<>(clusters);
        Collections.rotate(order, r);
        for (Mode m : order) {
          Figures f = LookupsAndTransfers.measure(m.client(), LOOKED_UP, buf, bytes, round.seconds);
          figures.get(m.name()).add(f);
          BenchCommand.note(
              progress,
              String.format(
                  Locale.ROOT, "round %d/%d, %s: %s", r + 1, round.rounds, m.name(), f.describe()));
        }
      }
    } finally {
      for (Mode m : clusters) {
        m.close();
      }
      deleteTree(dir);
    }
    Comparison table = new Comparison("secured", "security off", 3);
    List<Figures> off = figures.get("off");
    for (String mode : List.of("scram", "tls")) {
      String label = mode.equals("scram") ? "password users (SCRAM)" : "mutual TLS";
      LookupsAndTransfers.addRows(table, ", " + label, figures.get(mode), off);
    }
    table.print(out, "figure");
    String how =
        "ratio: the secured cluster's figure against the one without security, same run; medians"
            + " of "
            + round.rounds
            + " rounds ("
            + round.seconds
            + " s of lookups, "
            + ConfigKey.formatSize(bytes)
            + " written and read). Both secured clusters check permissions and block tokens for"
            + " an ordinary user; SCRAM sends plain bytes, TLS encrypts them.";
    out.println(how);
    HtmlReport page = report.start(spec, "ember bench security: security on beside off");
    if (page != null) {
      table.addTo(page, "secured against security off", "figure");
      page.paragraph(how);
      report.finish(page, progress);
    }
    out.flush();
    return 0;
  }

  private static void deleteTree(Path dir) throws IOException {
    try (var walk = Files.walk(dir)) {
      for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
