package io.ember.benchmarks.nvmf;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The measuring side of an open loop: I/O threads count completions as they re-issue, and the
 * benchmark thread waits for the next batch of them. The queue stays full whether or not the
 * benchmark thread is waiting, so a batch boundary never drains it, and the waiter is woken once a
 * batch, not once a completion.
 */
final class Completions {
  private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final AtomicLong completed = new AtomicLong();
  private final AtomicReference<Exception> error = new AtomicReference<>();
  private volatile long wanted = Long.MAX_VALUE;
  private volatile Thread waiter;
  private long consumed;

  /** Called by an I/O thread for each finished operation; {@code e} is its failure or null. */
  void completed(Exception e) {
    if (e != null) {
      failed(e);
    }
    completed(1);
  }

  /** Called by an I/O thread for {@code n} operations finished at once. */
  void completed(int n) {
    if (completed.addAndGet(n) >= wanted) {
      LockSupport.unpark(waiter);
    }
  }

  /** Ends the loop: the waiting benchmark thread throws {@code e}. */
  void failed(Exception e) {
    error.compareAndSet(null, e);
    LockSupport.unpark(waiter);
  }

  /** Forgets completions counted while nobody measured (between iterations). */
  void skipToNow() {
    consumed = completed.get();
  }

  /**
   * Waits for the next {@code n} completions.
   *
   * @throws Exception the first failure any operation reported, or IllegalStateException when the
   *     loop made no progress for a minute
   */
  void await(int n) throws Exception {
    long target = consumed + n;
    waiter = Thread.currentThread();
    wanted = target;
    long last = completed.get();
    long lastProgress = System.nanoTime();
    try {
      while (true) {
        long now = completed.get();
        if (error.get() != null) {
          throw error.get();
        }
        if (now >= target) {
          break;
        }
        if (now != last) {
          last = now;
          lastProgress = System.nanoTime();
        } else if (System.nanoTime() - lastProgress > STALL_NANOS) {
          throw new IllegalStateException("open loop stalled at " + now + " completions");
        }
        LockSupport.parkNanos(this, TimeUnit.SECONDS.toNanos(1));
      }
    } finally {
      wanted = Long.MAX_VALUE;
    }
    consumed = target;
  }
}
