package io.ember.tier.nvmf;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Asynchronous per-sector mutual exclusion: operations on one sector run one at a time, in the
 * order they were asked for, without blocking a thread. A read-modify-write of a sector holds it
 * from its read to its write, so two writes that share a sector (a stream's consecutive unaligned
 * pieces, in flight together) cannot tear it.
 */
final class SectorLocks {
  private final ConcurrentHashMap<Long, CompletableFuture<Void>> tails = new ConcurrentHashMap<>();

  /** Runs {@code op} once every earlier operation on {@code sector} has finished. */
  <T> CompletableFuture<T> run(long sector, Supplier<CompletableFuture<T>> op) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    CompletableFuture<Void> previous = tails.put(sector, done);
    CompletableFuture<Void> gate =
        previous == null ? CompletableFuture.completedFuture(null) : previous;
    // The caller's future completes once the sector is free again.
    return gate.thenCompose(v -> op.get())
        .whenComplete(
            (v, e) -> {
              tails.remove(sector, done);
              done.complete(null);
            });
  }

  /** Sectors with operations queued or running (for tests). */
  int busy() {
    return tails.size();
  }
}
