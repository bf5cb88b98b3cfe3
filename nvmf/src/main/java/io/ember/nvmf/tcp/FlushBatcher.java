package io.ember.nvmf.tcp;

import io.netty.channel.Channel;

/**
 * Batches flushes of one channel: PDUs produced while a read batch is being processed go out
 * together, and writes from other threads share one flush task. One writev per few commands instead
 * of one per PDU is most of the IOPS at high queue depth. Used by the host's queues and the
 * target's connections alike. Not thread-safe: every method runs on the channel's event loop.
 *
 * <p>A read batch does not hold back everything it produces until it ends: once it has asked for
 * {@link #DEFAULT_FLUSH_AFTER} flushes (about one per command sent or answered, whatever number of
 * PDUs each covers), what it wrote goes out at once. Holding a whole queue's worth made host and
 * target take turns, each idle while the other worked through the batch it had just been sent, so a
 * 4 KiB QD32 exchange ran at the sum of both sides' costs per I/O. Flushing part way lets the peer
 * start on the first commands while the rest are processed, and the two sides work at once (on one
 * connection at QD32 this nearly doubled the rate, at about the same CPU per I/O).
 */
public final class FlushBatcher {
  /**
   * Flushes a read batch asks for before what it wrote goes out without waiting for its end: small
   * enough that a QD32 batch is split in four, large enough that a writev still carries several
   * commands.
   */
  public static final int DEFAULT_FLUSH_AFTER = 8;

  private final Channel channel;
  private final Runnable flush;
  private final Runnable flushTask = this::runFlushTask;
  private final int flushAfter;
  private boolean inReadBatch;
  private boolean flushNeeded;
  private boolean flushScheduled;
  private int askedInReadBatch;
  private boolean flushing;

  /**
   * Batches flushes of {@code channel}; a read batch flushes after every {@link
   * #DEFAULT_FLUSH_AFTER} flushes it asks for.
   */
  public FlushBatcher(Channel channel, Runnable flush) {
    this(channel, flush, DEFAULT_FLUSH_AFTER);
  }

  /**
   * Batches flushes of {@code channel}; {@code flush} writes what is pending.
   *
   * @param flushAfter flushes asked for during a read batch after which it flushes at once
   * @throws IllegalArgumentException when {@code flushAfter} is less than 1
   */
  FlushBatcher(Channel channel, Runnable flush, int flushAfter) {
    if (flushAfter < 1) {
      throw new IllegalArgumentException("flushAfter must be at least 1, not " + flushAfter);
    }
    this.channel = channel;
    this.flush = flush;
    this.flushAfter = flushAfter;
  }

  /**
   * Asks for a flush: at the end of the current read batch (or now, when the batch has asked for
   * {@code flushAfter} of them since its last flush), or soon on the event loop outside a batch.
   */
  public void flushSoon() {
    flushNeeded = true;
    if (inReadBatch) {
      if (++askedInReadBatch >= flushAfter) {
        flushIfNeeded();
      }
    } else if (!flushScheduled) {
      flushScheduled = true;
      channel.eventLoop().execute(flushTask);
    }
  }

  /**
   * Flushes at once, even in the middle of a read batch, with whatever else is pending (asked for
   * while a flush is writing, it waits as {@link #flushSoon}'s does): for a PDU the peer waits on
   * before it can send more, such as the target's R2T. Held to the batch's end, an R2T waited while
   * the target landed the data of earlier writes, and the host, having sent all the data it had
   * been asked for, sat idle (128 KiB writes at QD8 ran 5-10% faster when it went at once).
   */
  public void flushNow() {
    if (flushing) {
      // Not run inside the flush that is writing (see flushIfNeeded): like flushSoon's, it waits
      // for the batch's end or a task.
      flushSoon();
    } else {
      flushNeeded = true;
      flushIfNeeded();
    }
  }

  /** A read batch begins: flushes wait for its end, or for {@code flushAfter} of them. */
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
    // A flush whose writes fail at once completes commands, whose callbacks may send more and ask
    // for another flush: that one waits for the batch's end or a task rather than nest in this one.
    // The count goes on until a flush runs, so requests made meanwhile still reach the threshold.
    if (flushNeeded && !flushing) {
      askedInReadBatch = 0;
      flushNeeded = false;
      flushing = true;
      try {
        flush.run();
      } finally {
        flushing = false;
      }
    }
  }
}
