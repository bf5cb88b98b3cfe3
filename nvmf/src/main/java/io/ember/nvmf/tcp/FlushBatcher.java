package io.ember.nvmf.tcp;

import io.netty.channel.Channel;

/**
 * Batches flushes of one channel: PDUs produced while a read batch is being processed go out
 * together when it ends, and writes from other threads share one flush task. One writev per batch
 * instead of one per PDU is most of the IOPS at high queue depth. Used by the host's queues and the
 * target's connections alike. Not thread-safe: every method runs on the channel's event loop.
 */
public final class FlushBatcher {
  private final Channel channel;
  private final Runnable flush;
  private final Runnable flushTask = this::runFlushTask;
  private boolean inReadBatch;
  private boolean flushNeeded;
  private boolean flushScheduled;

  /** Batches flushes of {@code channel}; {@code flush} writes what is pending. */
  public FlushBatcher(Channel channel, Runnable flush) {
    this.channel = channel;
    this.flush = flush;
  }

  /** Asks for a flush: at the end of the current read batch, or soon on the event loop. */
  public void flushSoon() {
    flushNeeded = true;
    if (!inReadBatch && !flushScheduled) {
      flushScheduled = true;
      channel.eventLoop().execute(flushTask);
    }
  }

  /** A read batch begins: flushes wait for its end. */
  public void readBatchStarts() {
    inReadBatch = true;
  }

  /** The read batch ended: flushes what it produced. */
  public void readBatchEnds() {
    inReadBatch = false;
    flushIfNeeded();
  }

  private void runFlushTask() {
    flushScheduled = false;
    flushIfNeeded();
  }

  private void flushIfNeeded() {
    if (flushNeeded) {
      flushNeeded = false;
      flush.run();
    }
  }
}
