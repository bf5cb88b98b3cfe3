package io.ember.benchmarks;

import io.ember.client.CreateOptions;
import io.ember.client.EmberClient;
import io.ember.client.EmberInputStream;
import io.ember.client.EmberOutputStream;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * One round of the benches that compare clusters set up two ways (metrics on and off; security off,
 * by password, by TLS): one-thread lookups for a while, then a file written and read back in 1 MiB
 * operations.
 */
final class LookupsAndTransfers {
  static final int OP = 1 << 20;

  /** A round's figures. */
  record Figures(double lookups, double writeMbps, double readMbps) {
    String describe() {
      return String.format(
          Locale.ROOT,
          "%.0f lookups/s, write %.0f MB/s, read %.0f MB/s",
          lookups,
          writeMbps,
          readMbps);
    }
  }

  private LookupsAndTransfers() {}

  /**
   * Lookups of {@code lookedUp} for {@code seconds}, then {@code bytes} written and read back in 1
   * MiB operations of {@code buf}.
   */
  static Figures measure(EmberClient c, String lookedUp, byte[] buf, long bytes, int seconds)
      throws Exception {
    long n = 0;
    long start = System.nanoTime();
    long end = start + TimeUnit.SECONDS.toNanos(seconds);
    long now;
    do {
      c.lookup(lookedUp);
      n++;
      now = System.nanoTime();
    } while (now - end < 0);
    double lookups = n / ((now - start) / 1e9);

    String path = "/transfer";
    long t0 = System.nanoTime();
    try (EmberOutputStream o = c.create(path, CreateOptions.DEFAULT)) {
      for (long done = 0; done < bytes; done += OP) {
        o.write(buf, 0, OP);
      }
    }
    long t1 = System.nanoTime();
    byte[] in = new byte[OP];
    try (EmberInputStream i = c.open(path)) {
      for (long done = 0; done < bytes; done += OP) {
        i.readFully(done, in, 0, OP);
      }
    }
    long t2 = System.nanoTime();
    c.delete(path, false);
    return new Figures(lookups, bytes / ((t1 - t0) / 1e3), bytes / ((t2 - t1) / 1e3));
  }

  /**
   * Adds the three figures of {@code measured} beside {@code baseline} to {@code table}, each label
   * followed by {@code suffix}.
   */
  static void addRows(
      Comparison table, String suffix, List<Figures> measured, List<Figures> baseline) {
    table.add(
        "lookups, 1 thread" + suffix,
        "ops/s",
        figure(measured, Figures::lookups),
        figure(baseline, Figures::lookups),
        "");
    table.add(
        "1 MiB writes" + suffix,
        "MB/s",
        figure(measured, Figures::writeMbps),
        figure(baseline, Figures::writeMbps),
        "");
    table.add(
        "1 MiB reads" + suffix,
        "MB/s",
        figure(measured, Figures::readMbps),
        figure(baseline, Figures::readMbps),
        "");
  }

  /** One figure of every round. */
  private static double[] figure(List<Figures> rounds, ToDoubleFunction<Figures> figure) {
    return rounds.stream().mapToDouble(figure).toArray();
  }
}
