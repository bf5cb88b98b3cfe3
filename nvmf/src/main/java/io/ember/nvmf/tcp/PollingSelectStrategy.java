package io.ember.nvmf.tcp;

import io.netty.channel.SelectStrategy;
import io.netty.channel.SelectStrategyFactory;
import io.netty.util.IntSupplier;
import java.time.Duration;

/**
 * An event loop that keeps asking the kernel for ready sockets, without waiting, for a while after
 * its last event, and only then sleeps in it. Data that arrives, or a command another thread hands
 * the loop, while it polls is taken without a thread wake-up; the price is up to the window of one
 * core's time after each burst of work, and nothing while the loop is idle.
 *
 * <p>The name node's RPC servers poll the same way ({@code io.ember.protocol}); this module stands
 * alone and does not depend on that one, hence its own copy of the rule.
 */
final class PollingSelectStrategy implements SelectStrategy {
  private final long windowNanos;
  private long lastEventNanos;

  private PollingSelectStrategy(long windowNanos) {
    this.windowNanos = windowNanos;
    this.lastEventNanos = System.nanoTime() - windowNanos;
  }

  /** Strategies, one per event loop, that poll for {@code window} after each event. */
  static SelectStrategyFactory factory(Duration window) {
    long nanos = window.toNanos();
    if (nanos <= 0) {
      throw new IllegalArgumentException("polling window must be positive: " + window);
    }
    return () -> new PollingSelectStrategy(nanos);
  }

  @Override
  public int calculateStrategy(IntSupplier readyNow, boolean hasTasks) throws Exception {
    int ready = readyNow.get();
    long now = System.nanoTime();
    if (ready > 0 || hasTasks) {
      lastEventNanos = now;
      return ready;
    }
    // Zero ready sockets while the window lasts: the loop runs any tasks that came in and asks
    // again. Once it has passed, the loop sleeps until the kernel or another thread wakes it.
    return now - lastEventNanos < windowNanos ? 0 : SelectStrategy.SELECT;
  }
}
