package io.ember.nvmf.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.channel.embedded.EmbeddedChannel;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FlushBatcherTest {
  private final EmbeddedChannel channel = new EmbeddedChannel();
  private final AtomicInteger flushes = new AtomicInteger();

  @AfterEach
  void close() {
    channel.finishAndReleaseAll();
  }

  @Test
  void aReadBatchFlushesEveryFlushAfterPdusAndWhatIsLeftAtItsEnd() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet, 8);
    batcher.readBatchStarts();
    for (int i = 1; i <= 20; i++) {
      batcher.flushSoon();
      assertEquals(i / 8, flushes.get(), "flushes after " + i + " PDUs of the batch");
    }
    batcher.readBatchEnds();
    assertEquals(3, flushes.get(), "the last four go out as the batch ends");
    channel.runPendingTasks();
    assertEquals(3, flushes.get(), "nothing was left for a flush task");
  }

  @Test
  void theCountStartsAgainWithEachReadBatch() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet, 8);
    for (int batch = 0; batch < 3; batch++) {
      batcher.readBatchStarts();
      for (int i = 0; i < 5; i++) {
        batcher.flushSoon();
      }
      batcher.readBatchEnds();
    }
    assertEquals(3, flushes.get(), "one flush per batch of five, none part way");
  }

  @Test
  void aQueueDepthOf32GoesOutInFourFlushesByDefault() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet);
    batcher.readBatchStarts();
    for (int i = 0; i < 32; i++) {
      batcher.flushSoon();
    }
    assertEquals(4, flushes.get());
    batcher.readBatchEnds();
    assertEquals(4, flushes.get(), "nothing left at the end");
  }

  @Test
  void aFlushThatAsksForAnotherIsNotRunInsideItself() {
    FlushBatcher[] batcher = new FlushBatcher[1];
    AtomicInteger depth = new AtomicInteger();
    AtomicInteger deepest = new AtomicInteger();
    batcher[0] =
        new FlushBatcher(
            channel,
            () -> {
              deepest.accumulateAndGet(depth.incrementAndGet(), Math::max);
              if (flushes.incrementAndGet() == 1) {
                // A write failing inside the flush completes a command whose callback sends more.
                batcher[0].flushSoon();
              }
              depth.decrementAndGet();
            },
            1);
    batcher[0].readBatchStarts();
    batcher[0].flushSoon();
    assertEquals(1, deepest.get(), "the flush asked for inside a flush waits");
    batcher[0].readBatchEnds();
    assertEquals(1, deepest.get());
    assertEquals(2, flushes.get(), "the batch's end sends what the first flush asked for");
  }

  @Test
  void flushNowSendsAtOnceInTheMiddleOfABatchWithWhatWasPending() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet, 8);
    batcher.readBatchStarts();
    batcher.flushSoon();
    batcher.flushSoon();
    assertEquals(0, flushes.get());
    batcher.flushNow();
    assertEquals(1, flushes.get(), "the R2T goes out before the batch ends");
    for (int i = 0; i < 7; i++) {
      batcher.flushSoon();
    }
    assertEquals(1, flushes.get(), "the count of flush requests started again at the flush");
    batcher.readBatchEnds();
    assertEquals(2, flushes.get());
  }

  @Test
  void flushNowInsideAFlushWaitsForTheBatchsEnd() {
    FlushBatcher batcher =
        reentrant(
            8,
            b -> {
              b.flushNow();
              assertEquals(1, flushes.get(), "not nested");
            });
    batcher.readBatchStarts();
    batcher.flushNow();
    assertEquals(1, flushes.get());
    batcher.readBatchEnds();
    assertEquals(2, flushes.get());
  }

  @Test
  void flushNowInsideAFlushOutsideABatchGoesOutInATask() {
    FlushBatcher batcher = reentrant(8, FlushBatcher::flushNow);
    batcher.flushNow();
    assertEquals(1, flushes.get(), "not nested");
    channel.runPendingTasks();
    assertEquals(2, flushes.get(), "what the first flush asked for is not left behind");
  }

  @Test
  void requestsMadeDuringAFlushCountTowardsTheNext() {
    FlushBatcher batcher =
        reentrant(
            2,
            b -> {
              b.flushSoon();
              b.flushSoon();
            });
    batcher.readBatchStarts();
    batcher.flushNow();
    assertEquals(1, flushes.get());
    batcher.flushSoon();
    assertEquals(2, flushes.get(), "three requests since the last flush, against a threshold of 2");
    batcher.readBatchEnds();
    assertEquals(2, flushes.get());
  }

  @Test
  void aFlushTaskAfterABatchThatSentEverythingDoesNothing() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet, 8);
    batcher.flushSoon();
    batcher.readBatchStarts();
    for (int i = 0; i < 8; i++) {
      batcher.flushSoon();
    }
    batcher.readBatchEnds();
    assertEquals(1, flushes.get(), "the submission before the batch went out with it");
    channel.runPendingTasks();
    assertEquals(1, flushes.get());
  }

  @Test
  void submissionsOutsideAReadBatchShareOneFlushTask() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet, 8);
    for (int i = 0; i < 20; i++) {
      batcher.flushSoon();
    }
    assertEquals(0, flushes.get(), "submissions wait for the task");
    channel.runPendingTasks();
    assertEquals(1, flushes.get());
  }

  @Test
  void aBatchThatProducedNothingDoesNotFlush() {
    FlushBatcher batcher = new FlushBatcher(channel, flushes::incrementAndGet, 8);
    batcher.readBatchStarts();
    batcher.readBatchEnds();
    assertEquals(0, flushes.get());
  }

  /**
   * A batcher that counts its flushes into {@link #flushes} and, during the first of them, does
   * {@code duringFirstFlush} to itself (as a failed write's callbacks would).
   */
  private FlushBatcher reentrant(int flushAfter, Consumer<FlushBatcher> duringFirstFlush) {
    FlushBatcher[] batcher = new FlushBatcher[1];
    batcher[0] =
        new FlushBatcher(
            channel,
            () -> {
              if (flushes.incrementAndGet() == 1) {
                duringFirstFlush.accept(batcher[0]);
              }
            },
            flushAfter);
    return batcher[0];
  }

  @Test
  void refusesAThresholdBelowOne() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new FlushBatcher(channel, flushes::incrementAndGet, 0));
    assertEquals("flushAfter must be at least 1, not 0", e.getMessage());
  }
}
