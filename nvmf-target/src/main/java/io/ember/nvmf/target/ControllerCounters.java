package io.ember.nvmf.target;

import io.ember.nvmf.spec.Nvme;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * The running counts behind {@link ControllerStats}: added to by the controller's queues, each on
 * its own event loop, and read by anyone.
 */
final class ControllerCounters {
  /** Upper bounds of the latency buckets, in nanoseconds; a last bucket takes the rest. */
  private static final long[] BOUNDS_NANOS = {
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    10_000_000,
    100_000_000,
    1_000_000_000
  };

  /**
   * The same bounds in seconds, with the last bucket's infinity, as {@link ControllerStats} has
   * them.
   */
  private static final List<Double> BOUNDS_SECONDS = boundsSeconds();

  /**
   * Commands received and not yet answered. An adder, not one atomic: each of the controller's
   * queues adds to it from its own event loop, for every command.
   */
  final LongAdder outstanding = new LongAdder();

  private final LongAdder reads = new LongAdder();
  private final LongAdder writes = new LongAdder();
  private final LongAdder others = new LongAdder();
  private final LongAdder failed = new LongAdder();
  private final LongAdder bytesRead = new LongAdder();
  private final LongAdder bytesWritten = new LongAdder();
  private final LongAdder latencySumNanos = new LongAdder();
  private final LongAdder[] buckets = new LongAdder[BOUNDS_NANOS.length + 1];

  ControllerCounters() {
    for (int i = 0; i < buckets.length; i++) {
      buckets[i] = new LongAdder();
    }
  }

  /** Records an I/O command of {@code opcode} for {@code bytes}, answered after {@code nanos}. */
  void completed(int opcode, long bytes, long nanos, boolean ok) {
    switch (opcode) {
      case Nvme.IO_READ -> {
        reads.increment();
        if (ok) {
          bytesRead.add(bytes);
        }
      }
      case Nvme.IO_WRITE -> {
        writes.increment();
        if (ok) {
          bytesWritten.add(bytes);
        }
      }
      default -> others.increment();
    }
    if (!ok) {
      failed.increment();
    }
    latencySumNanos.add(nanos);
    int b = 0;
    while (b < BOUNDS_NANOS.length && nanos > BOUNDS_NANOS[b]) {
      b++;
    }
    buckets[b].increment();
  }

  private static List<Double> boundsSeconds() {
    List<Double> bounds = new ArrayList<>(BOUNDS_NANOS.length + 1);
    for (long b : BOUNDS_NANOS) {
      bounds.add(b / 1e9);
    }
    bounds.add(Double.POSITIVE_INFINITY);
    return List.copyOf(bounds);
  }

  ControllerStats snapshot(TargetController c) {
    List<Long> counts = new ArrayList<>(buckets.length);
    for (LongAdder bucket : buckets) {
      counts.add(bucket.sum());
    }
    return new ControllerStats(
        c.cntlid,
        c.hostNqn,
        c.subsystem == null ? "discovery" : c.subsystem.nqn(),
        Math.max(0, c.queues.size() - 1),
        // An adder's sum is no snapshot: taken while queues add and take away, it can dip below 0.
        (int) Math.max(0, outstanding.sum()),
        reads.sum(),
        writes.sum(),
        others.sum(),
        failed.sum(),
        bytesRead.sum(),
        bytesWritten.sum(),
        BOUNDS_SECONDS,
        List.copyOf(counts),
        latencySumNanos.sum() / 1e9);
  }
}
