package io.ember.protocol;

import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.util.IntSupplier;
import java.time.Duration;

/**
 * An event loop that keeps polling its sockets for a while after its last event before it sleeps in
 * the kernel. A request that arrives while the loop polls is read without a thread wake-up, which
 * on a loaded or small host is most of a small call's round trip; the price is up to the polling
 * window of one core's time after each burst of work, and none while the loop is idle.
 *
 * <p>Netty's own busy-wait strategy is not used: its epoll loop polls for good and never sleeps, so
 * an idle server would keep a core busy, and NIO's takes it for a select that sleeps. Here the loop
 * polls, running the tasks other threads handed it (replies written after a journal sync, timers)
 * between polls, and falls back to sleeping once the window has passed without an event.
 */
final class PollingSelectStrategy implements SelectStrategy {

  private final long windowNanos;
  private long lastEventNanos;

  private PollingSelectStrategy(long windowNanos) {
    this.windowNanos = windowNanos;
    this.lastEventNanos = System.nanoTime() - windowNanos;
  }

  /**
   * A factory of strategies, one per event loop, that poll for {@code window} after each event.
   *
   * @throws IllegalArgumentException when the window is not positive
   */
  static SelectStrategyFactory factory(Duration window) {
    long nanos = window.toNanos();
    if (nanos <= 0) {
      throw new IllegalArgumentException("polling window must be positive: " + window);
    }
    return () -> new PollingSelectStrategy(nanos);
  }

  @Override
  public int calculateStrategy(IntSupplier selectSupplier, boolean hasTasks) throws Exception {
    int ready = selectSupplier.get();
    long now = System.nanoTime();
    if (ready > 0 || hasTasks) {
      lastEventNanos = now;
      return ready;
    }
    if (now - lastEventNanos < windowNanos) {
      // Zero ready channels: the loop runs its tasks, if any came in, and asks again.
      return 0;
    }
    return SelectStrategy.SELECT;
  }
}
